package app

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentmcp/agentmcp/adapters/openai"
)

// modelProbeTimeout bounds the start-up probe of the model endpoint.
const modelProbeTimeout = 3 * time.Second

// isHosted reports whether endpoint is OpenAI's hosted API (the default),
// which refuses every request without a key.
func isHosted(endpoint string) bool {
	u, err := url.Parse(endpoint)
	d, _ := url.Parse(openai.DefaultBaseURL)
	return err == nil && strings.EqualFold(u.Hostname(), d.Hostname())
}

// probeModel checks once, at start, that the model endpoint answers, so a
// --model-url that is down shows now rather than at the first agent_submit
// (docs/SPEC.md §9): a GET of <endpoint>/models (the list every
// OpenAI-compatible server offers), at most modelProbeTimeout, no redirect
// followed, the key sent as a turn would send it. It logs one line and
// never fails start-up: any HTTP answer means the server is up (401/403:
// the key is refused); no answer is a warning naming the cause. Neither the
// key nor the answer's body is logged.
func probeModel(ctx context.Context, rt http.RoundTripper, endpoint, key string, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, modelProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint+"/models", nil)
	if err != nil {
		return
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	client := &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		cause := "no answer"
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			cause = "no answer within " + modelProbeTimeout.String()
		case strings.Contains(err.Error(), "connection refused"):
			cause = "connection refused: is the server running?"
		case strings.Contains(err.Error(), "no such host"):
			cause = "the host name does not resolve"
		}
		logger.Warn("the model endpoint does not answer; agent_submit will fail until it does (--no-model-probe skips this check)",
			"endpoint", endpoint, "cause", cause)
		return
	}
	resp.Body.Close()
	took := time.Since(start).Round(time.Millisecond)
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		logger.Warn("the model endpoint answers but refuses the key (check OPENAI_API_KEY)", "endpoint", endpoint, "status", resp.StatusCode)
	default:
		logger.Info("the model endpoint answers", "endpoint", endpoint, "status", resp.StatusCode, "took", took)
	}
}
