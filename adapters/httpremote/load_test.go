package httpremote_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/engine"
	"github.com/agentmcp/agentmcp/adapters/httpremote"
	"github.com/agentmcp/agentmcp/adapters/oauth"
	"github.com/agentmcp/agentmcp/internal/hostile"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
	"github.com/agentmcp/agentmcp/internal/load"
)

const loadClients = 64

// TestLoad: 64 clients send 10⁵ tools/call to the remote host, 5 % of them
// with forged or expired tokens, with the real verifier fetching an RS256
// key from a TLS issuer, while three clients misbehave beside them: one
// holds idle connections and reconnects as each is closed, one sends
// batches with large answers and never reads, one abandons input-required
// rounds and calls. Every answer is checked: no valid call refused or
// throttled, none answered wrongly, every forged or expired token refused;
// afterwards no goroutine is left and the live heap is back within 10 %
// (docs/SPEC.md §5.3, §8).
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	iss, err := load.NewIssuer()
	if err != nil {
		t.Fatal(err)
	}
	defer iss.Close()
	v, err := oauth.NewVerifier(oauth.Config{Issuer: iss.URL(), Resource: publicURL, RequiredScopes: []string{"mcp:tools"},
		AllowedSubjects: []string{"alice"}, HTTPClient: iss.Client()})
	if err != nil {
		t.Fatal(err)
	}
	valid, err := iss.Token(publicURL, "mcp:tools", "alice", time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	var forged, expired []string
	for i := range 8 {
		f, err := iss.Token(publicURL, "mcp:tools", fmt.Sprintf("mallory-%d", i), time.Hour, true)
		if err != nil {
			t.Fatal(err)
		}
		e, err := iss.Token(publicURL, "mcp:tools", "alice", -time.Duration(i+1)*time.Hour, false)
		if err != nil {
			t.Fatal(err)
		}
		forged, expired = append(forged, f), append(expired, e)
	}

	goroutines := leakcheck.Snapshot()
	const stall = 300 * time.Millisecond
	eng, err := engine.New(load.Session{}, engine.Options{AskClient: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httpremote.NewWithLimits(eng, httpremote.Options{Authorization: httpremote.Authorization{Verifier: v}},
		httpremote.Limits{MaxInFlight: 256, MaxConnsPerClient: 1 << 20, WriteStallTimeout: stall})
	if err != nil {
		t.Fatal(err)
	}
	bound, err := h.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	addr := bound.String()
	base := "http://" + addr + "/mcp"
	post := func(ctx context.Context, c *http.Client, token, body string, modern bool, name string) (int, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, "POST", base, strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		req.Host = publicHost
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", jsonSSE)
		if modern {
			req.Header.Set("MCP-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", name)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}

	// The verifier fetches the issuer's keys once and the valid token's
	// verdict is cached before the clients start (cold, a burst of more
	// than 64 clients would find the verifications capped and get 503 with
	// Retry-After: 1, as docs/SPEC.md §5.3 says).
	warm := &http.Client{Transport: &http.Transport{}}
	if status, b, err := post(t.Context(), warm, valid, ping, false, ""); err != nil || status != 200 {
		t.Fatalf("warm-up: %d %s %v", status, b, err)
	}
	warm.CloseIdleConnections()

	var batch []string
	for i := range 16 {
		batch = append(batch, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}}}`,
			i, strings.Repeat("x", 60<<10)))
	}
	batchBody := "[" + strings.Join(batch, ",") + "]"
	stuck := []byte(fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: %s\r\nContent-Length: %d\r\n\r\n%s",
		publicHost, valid, jsonSSE, len(batchBody), batchBody))
	abandonClient := &http.Client{Transport: &http.Transport{}}
	misbehave := func() func() string {
		churn := hostile.Churn(addr, 300)
		neverReads := hostile.Repeat(func(ctx context.Context) error { return hostile.NeverRead(ctx, addr, stuck, 3*stall) })
		abandons := hostile.Repeat(func(ctx context.Context) error {
			meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
			status, b, err := post(ctx, abandonClient, valid, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":{"text":"x"},`+meta+`}}`, true, "write")
			if err != nil || status != 200 || !strings.Contains(string(b), `"input_required"`) {
				return fmt.Errorf("write: %d %s %v", status, b, err)
			}
			// Never retried. Then a call whose client leaves while it runs.
			leave, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			defer cancel()
			_, _, _ = post(leave, abandonClient, valid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{},`+meta+`}}`, true, "slow")
			return nil
		})
		return func() string {
			neverReads.Stop()
			abandons.Stop()
			churn.Stop()
			abandonClient.CloseIdleConnections()
			if neverReads.Rounds() == 0 || abandons.Rounds() == 0 || abandons.Errors() > 0 || churn.Closed() == 0 {
				t.Errorf("a misbehaving client did not run as meant: %d never-read batches, %d abandoned rounds (%d failed), %d idle connections closed",
					neverReads.Rounds(), abandons.Rounds(), abandons.Errors(), churn.Closed())
			}
			return fmt.Sprintf("%d idle connections closed for newcomers, %d never-read batches, %d abandoned rounds",
				churn.Closed(), neverReads.Rounds(), abandons.Rounds())
		}
	}

	clients := make([]*http.Client, loadClients)
	for i := range clients {
		clients[i] = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	}
	call := func(ctx context.Context, client, seq int) (load.Outcome, string) {
		token, kind := valid, "valid"
		switch {
		case seq%40 == 0:
			token, kind = forged[seq%len(forged)], "forged"
		case seq%40 == 20:
			token, kind = expired[seq%len(expired)], "expired"
		}
		text := fmt.Sprintf("c%d-s%d", client, seq)
		modern := seq%2 == 1
		meta := ""
		if modern {
			meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
		}
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}%s}}`, seq, text, meta)
		status, b, err := post(ctx, clients[client], token, body, modern, "echo")
		switch {
		case err != nil:
			return load.Wrong, fmt.Sprintf("%s: %v", kind, err)
		case kind == "forged" && (status == 401 || status == 429), kind == "expired" && status == 401:
			return load.OK, ""
		case kind != "valid":
			return load.Wrong, fmt.Sprintf("%s token: status %d", kind, status)
		case status == 503 || status == 429:
			return load.Refused, fmt.Sprintf("status %d", status)
		}
		return judgeEcho(status, b, seq, text)
	}
	// 10⁵ calls; a tenth under the race detector, which slows each several
	// times, so the suite stays quick.
	total := load.Requests(100_000, 10_000)
	rep := load.Scenario{Name: "remote host", Clients: loadClients, Total: total, Call: call, Misbehave: misbehave,
		Idle: func() {
			for _, c := range clients {
				c.CloseIdleConnections()
			}
		}}.Run(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if err := eng.Shutdown(ctx); err != nil {
		t.Errorf("engine Shutdown: %v", err)
	}
	iss.Close() // and with it the verifier's connection to the issuer
	goroutines.Verify(t)

	res := rep.Result
	t.Logf("remote host: %v", res)
	t.Logf("host idle before: %v; after: %v; goroutines after Stop: %d", rep.Before, rep.After, runtime.NumGoroutine())
	t.Logf("beside them: %s", rep.Misbehaved)
	if res.Requests != total || res.Refused != 0 || res.Wrong != 0 {
		t.Errorf("%d of %d requests answered; %d refused, %d wrong: %q", res.Requests, total, res.Refused, res.Wrong, res.Details)
	}
	if !rep.Settled {
		t.Errorf("live heap after the load %v, before %v: not within 10 %%", rep.After, rep.Before)
	}
}

// judgeEcho checks a tools/call echo answer: 200, the request's id, and
// the echoed text exactly.
func judgeEcho(status int, b []byte, seq int, text string) (load.Outcome, string) {
	var r struct {
		ID     json.RawMessage
		Result struct {
			Content []struct{ Text string }
			IsError bool
		}
		Error *struct{ Message string }
	}
	if status != 200 || json.Unmarshal(b, &r) != nil || string(r.ID) != fmt.Sprint(seq) || r.Error != nil ||
		len(r.Result.Content) != 1 || r.Result.IsError {
		return load.Wrong, fmt.Sprintf("status %d: %.200s", status, b)
	}
	var env struct {
		Success bool
		Result  struct{ Text string }
	}
	if json.Unmarshal([]byte(r.Result.Content[0].Text), &env) != nil || !env.Success || env.Result.Text != text {
		return load.Wrong, fmt.Sprintf("echo of %q: %.200s", text, r.Result.Content[0].Text)
	}
	return load.OK, ""
}
