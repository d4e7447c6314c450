// Package openai is a [ports.Model] for any OpenAI-compatible Chat
// Completions endpoint (docs/SPEC.md §9): OpenAI itself, Ollama
// (http://127.0.0.1:11434/v1), llama.cpp's llama-server
// (http://127.0.0.1:8080/v1), vLLM, LM Studio (http://127.0.0.1:1234/v1).
//
// It speaks POST {base}/chat/completions with the conversation, the tools
// as function tools (each tool's inputSchema as the function's parameters)
// and, unless [Options.DisableStreaming], stream: true — Server-Sent Events
// whose deltas carry text pieces and tool-call pieces keyed by index
// (https://platform.openai.com/docs/api-reference/chat-streaming). The
// wire is spoken by github.com/sashabaranov/go-openai; this package adds
// what the agent needs around it through the library's HTTPClient seam:
//
//   - Timeouts: each attempt is bounded by [Options.RequestTimeout]
//     (default 10 minutes, the whole answer read included); connecting and
//     the TLS handshake by 10 s each.
//   - Retries: a 429 or 5xx answer is retried at most [Options.MaxRetries]
//     times (default 3) after 1 s, 2 s, 4 s …, or after the answer's
//     Retry-After (seconds or an HTTP date) when it gives one no longer than
//     [Options.MaxRetryAfter] (default 30 s); a longer Retry-After ends the
//     retries at once and the error says so. Nothing else is retried: a
//     refused connection fails the step at once.
//   - Bounds: an answer's body is read up to [Options.MaxResponseBytes]
//     (default 8 MiB); an error body up to 64 KiB. Redirects are not
//     followed (the key is for the configured endpoint only).
//   - Errors name the endpoint (the base URL, which may carry no
//     credentials, query or fragment) and the cause — the HTTP status and
//     the endpoint's own message, cleaned of anything that looks like a key
//     (a 401 or 403 message is never repeated: OpenAI's echoes part of the
//     key). Every error is redacted as a whole before it leaves: the key in
//     any letter case or percent-encoded, wherever the answer put it (a
//     redirect's Location, an echoed header, a body). The API key is sent
//     only as the Authorization header, never logged, never in an error.
//   - Each error has a log form ([log/slog.LogValuer]): the same facts
//     without anything the endpoint wrote, since a validation error may
//     quote the request and so the prompt (docs/SPEC.md §9).
//   - Streamed shapes of other servers (several calls at one index, no
//     index, a "stop" finish after calls, empty deltas) are assembled as
//     the model meant them; see accumulator. Assembly is linear in the
//     answer's size.
//   - Token usage is returned when the endpoint reports it; stream_options
//     is not sent, since several compatible servers refuse the field
//     (Mistral answers 422, Groq 400).
//
// Logging: one debug record per request attempt and retry (status,
// duration, attempt): never messages, tool arguments or the key.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"

	"github.com/agentmcp/agentmcp/internal/logs"
)

// DefaultBaseURL is OpenAI's API.
const DefaultBaseURL = "https://api.openai.com/v1"

// Defaults of [Options].
const (
	DefaultRequestTimeout   = 10 * time.Minute
	DefaultMaxRetries       = 3
	DefaultMaxRetryAfter    = 30 * time.Second
	DefaultMaxResponseBytes = 8 << 20

	// maxErrorBody bounds what is read of an error answer.
	maxErrorBody = 64 << 10
	// maxCauseBytes bounds the endpoint's own message in an error.
	maxCauseBytes = 200
	// firstBackoff is the wait before the first retry without Retry-After;
	// each further retry waits twice as long.
	firstBackoff = time.Second
	// connectTimeout bounds connecting and the TLS handshake.
	connectTimeout = 10 * time.Second
)

// Options configures a [Model].
type Options struct {
	// Model is the model name sent in each request; required.
	Model string

	// BaseURL is the endpoint's base, such as "http://127.0.0.1:11434/v1"
	// (requests go to BaseURL + "/chat/completions"); default
	// [DefaultBaseURL]. It must be an absolute http or https URL without
	// credentials, query or fragment.
	BaseURL string

	// APIKey is sent as "Authorization: Bearer <key>"; "" sends none (local
	// servers need none). It never appears in a log or an error.
	APIKey string

	// DisableStreaming asks for whole answers instead of streamed ones.
	DisableStreaming bool

	// RequestTimeout bounds one attempt, reading the answer included
	// (default 10 minutes).
	RequestTimeout time.Duration

	// MaxRetries bounds the retries of a 429 or 5xx answer (default 3;
	// negative: none).
	MaxRetries int

	// MaxRetryAfter is the longest Retry-After honoured (default 30 s).
	MaxRetryAfter time.Duration

	// MaxResponseBytes bounds an answer's body (default 8 MiB).
	MaxResponseBytes int64

	// Transport carries the requests; nil means a transport of this
	// package's own (proxies from the environment, 10 s to connect and to
	// finish the TLS handshake).
	Transport http.RoundTripper

	// Sleep waits d before a retry, or returns ctx's error when ctx ends
	// first; nil means a timer. Tests replace the clock with it.
	Sleep func(ctx context.Context, d time.Duration) error

	// Logger receives debug records of attempts and retries. Nil discards.
	Logger *slog.Logger
}

// Model is a [ports.Model] on one OpenAI-compatible endpoint. It is safe for
// concurrent use.
type Model struct {
	client   *goopenai.Client
	name     string
	endpoint string // the base URL, safe to show
	key      string
	keyRE    *regexp.Regexp // the key's forms, for redaction; nil without a key
	stream   bool
	opts     Options
	log      *slog.Logger
}

var _ ports.Model = (*Model)(nil)

// New checks opts and returns the model. It fails without a model name, or
// with a base URL that is not an absolute http(s) URL or that carries
// credentials, a query or a fragment (put the key in APIKey).
func New(opts Options) (*Model, error) {
	if strings.TrimSpace(opts.Model) == "" {
		return nil, errors.New("openai: a model name is required")
	}
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	endpoint, err := checkBaseURL(opts.BaseURL)
	if err != nil {
		return nil, err
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = DefaultMaxRetries
	}
	if opts.MaxRetries < 0 {
		opts.MaxRetries = 0
	}
	if opts.MaxRetryAfter <= 0 {
		opts.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if opts.Sleep == nil {
		opts.Sleep = sleep
	}
	if opts.Transport == nil {
		opts.Transport = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: connectTimeout, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   connectTimeout,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
			ForceAttemptHTTP2:     true,
		}
	}
	log := logs.OrDiscard(opts.Logger)
	m := &Model{name: opts.Model, endpoint: endpoint, key: opts.APIKey, keyRE: keyForms(opts.APIKey), stream: !opts.DisableStreaming, opts: opts, log: log}
	cfg := goopenai.DefaultConfig(opts.APIKey)
	cfg.BaseURL = endpoint
	cfg.HTTPClient = &doer{m: m, client: &http.Client{
		Transport: opts.Transport,
		// The key is for the configured endpoint only: a redirect is an
		// error that names the new location's host.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	m.client = goopenai.NewClientWithConfig(cfg)
	return m, nil
}

// checkBaseURL returns the base URL without a trailing slash, or why it
// cannot be used.
func checkBaseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", errors.New("openai: the base URL cannot be parsed")
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return "", errors.New("openai: the base URL must be an absolute http or https URL, such as http://127.0.0.1:11434/v1")
	case u.User != nil:
		return "", errors.New("openai: the base URL must not carry credentials: the key goes in OPENAI_API_KEY")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", errors.New("openai: the base URL must not carry a query or a fragment")
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// Describe names the model and the endpoint (never the key).
func (m *Model) Describe() ports.ModelDescription {
	return ports.ModelDescription{Model: m.name, Endpoint: m.endpoint}
}

// Step sends one Chat Completions request and returns the assistant's
// message (the first choice). See [ports.Model].
func (m *Model) Step(ctx context.Context, req ports.ModelRequest) (ports.AssistantMessage, error) {
	creq := goopenai.ChatCompletionRequest{Model: m.name, Messages: wireMessages(req.Messages), Tools: wireTools(req.Tools)}
	onText := req.OnText
	if onText == nil {
		onText = func(string) {}
	}
	var (
		msg ports.AssistantMessage
		err error
	)
	if m.stream {
		msg, err = m.streamed(ctx, creq, onText)
	} else {
		msg, err = m.whole(ctx, creq, onText)
	}
	if err != nil {
		return ports.AssistantMessage{}, m.explain(ctx, err)
	}
	return msg, nil
}

func (m *Model) whole(ctx context.Context, creq goopenai.ChatCompletionRequest, onText func(string)) (ports.AssistantMessage, error) {
	resp, err := m.client.CreateChatCompletion(ctx, creq)
	if err != nil {
		return ports.AssistantMessage{}, err
	}
	if len(resp.Choices) == 0 {
		return ports.AssistantMessage{}, ports.ErrNoChoices
	}
	c := resp.Choices[0]
	text := c.Message.Content
	if text == "" {
		var b strings.Builder
		for _, part := range c.Message.MultiContent {
			b.WriteString(part.Text)
		}
		text = b.String()
	}
	if text != "" {
		onText(text)
	}
	msg := ports.AssistantMessage{Content: text, FinishReason: string(c.FinishReason), Usage: usage(&resp.Usage)}
	for _, tc := range c.Message.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, ports.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return msg, nil
}

// usage is the endpoint's token counts, or nil when it reported none.
func usage(u *goopenai.Usage) *ports.TokenUsage {
	if u == nil || u.PromptTokens == 0 && u.CompletionTokens == 0 {
		return nil
	}
	return &ports.TokenUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
}

func (m *Model) streamed(ctx context.Context, creq goopenai.ChatCompletionRequest, onText func(string)) (ports.AssistantMessage, error) {
	stream, err := m.client.CreateChatCompletionStream(ctx, creq)
	if err != nil {
		return ports.AssistantMessage{}, err
	}
	defer stream.Close()
	var acc accumulator
	chunks := 0
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return ports.AssistantMessage{}, err
		}
		chunks++
		if u := usage(chunk.Usage); u != nil {
			acc.usage = u // the last chunk's, without choices, when the endpoint reports it
		}
		for _, c := range chunk.Choices {
			if c.Index != 0 {
				continue // only the first choice is used (n is never asked for)
			}
			acc.choice = true
			if c.Delta.Content != "" {
				acc.text.WriteString(c.Delta.Content)
				onText(c.Delta.Content)
			}
			for _, tc := range c.Delta.ToolCalls {
				acc.add(tc)
			}
			if c.FinishReason != "" {
				acc.finish = string(c.FinishReason)
			}
		}
	}
	if chunks == 0 {
		return ports.AssistantMessage{}, errNotStream // not even one "data:" chunk
	}
	if !acc.choice {
		return ports.AssistantMessage{}, ports.ErrNoChoices
	}
	return acc.message(), nil
}

// accumulator assembles a streamed assistant message: text pieces in order,
// tool-call pieces keyed by index (the first piece of a call carries its id
// and name, later ones append to its arguments). The work is linear in the
// answer's size: arguments grow in a builder, never by string
// concatenation, whatever the size of the pieces.
//
// Servers differ from OpenAI's shape; each of these is tolerated
// (docs/SPEC.md §9 lists them with the backends that send them):
//   - several whole calls at the same index with distinct ids (Ollama sends
//     every call at index 0): a piece whose id differs from the id of the
//     call at its index opens a new call;
//   - no index at all: a piece without an id, or with the last call's id,
//     continues the last call; another id opens a new one;
//   - the id and name only on the first piece, or repeated on every piece
//     (a name sent again whole is kept once), arguments on the first piece
//     or only on later ones, empty deltas between pieces;
//   - a finish_reason other than "tool_calls" although calls came (Ollama
//     ends such answers with "stop"): the calls are kept, and the agent
//     treats any answer with calls as a tool step.
type accumulator struct {
	choice  bool
	text    strings.Builder
	calls   []*callPieces
	byIndex map[int]*callPieces
	finish  string
	usage   *ports.TokenUsage
}

// callPieces is one tool call being assembled.
type callPieces struct {
	id, name string
	args     strings.Builder
}

// maxNameBytes bounds an assembled tool name: a longer one names no tool
// anyway, and the bound keeps the "sent again whole" comparison cheap.
const maxNameBytes = 1 << 10

func (a *accumulator) add(piece goopenai.ToolCall) {
	var call *callPieces
	switch {
	case piece.Index != nil:
		call = a.byIndex[*piece.Index]
		if call == nil || piece.ID != "" && call.id != "" && piece.ID != call.id {
			call = a.open()
			if a.byIndex == nil {
				a.byIndex = map[int]*callPieces{}
			}
			a.byIndex[*piece.Index] = call
		}
	case len(a.calls) > 0 && (piece.ID == "" || piece.ID == a.calls[len(a.calls)-1].id):
		call = a.calls[len(a.calls)-1] // no index: a continuation of the last call
	default:
		call = a.open()
	}
	if call.id == "" {
		call.id = piece.ID
	}
	if n := piece.Function.Name; n != "" && n != call.name && len(call.name)+len(n) <= maxNameBytes {
		call.name += n // a name sent again whole is kept once
	}
	call.args.WriteString(piece.Function.Arguments)
}

func (a *accumulator) open() *callPieces {
	c := &callPieces{}
	a.calls = append(a.calls, c)
	return c
}

func (a *accumulator) message() ports.AssistantMessage {
	msg := ports.AssistantMessage{Content: a.text.String(), FinishReason: a.finish, Usage: a.usage}
	for _, c := range a.calls {
		msg.ToolCalls = append(msg.ToolCalls, ports.ToolCall{ID: c.id, Name: c.name, Arguments: c.args.String()})
	}
	return msg
}

func wireMessages(msgs []ports.Message) []goopenai.ChatCompletionMessage {
	out := make([]goopenai.ChatCompletionMessage, len(msgs))
	for i, m := range msgs {
		w := goopenai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			w.ToolCalls = append(w.ToolCalls, goopenai.ToolCall{ID: tc.ID, Type: goopenai.ToolTypeFunction,
				Function: goopenai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
		}
		out[i] = w
	}
	return out
}

func wireTools(tools []domain.Tool) []goopenai.Tool {
	var out []goopenai.Tool
	for _, t := range tools {
		out = append(out, goopenai.Tool{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: json.RawMessage(t.InputSchema)}})
	}
	return out
}

// explain turns a failed step into the client-visible error: the endpoint
// and the cause, one line. Every failure leaves through here or through
// [Model.fail], which removes the key from both the message and the log
// form, whatever part of the answer carried it.
func (m *Model) explain(ctx context.Context, err error) error {
	var (
		failed *stepError
		api    *goopenai.APIError
		syn    *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.Is(err, ports.ErrNoChoices):
		return err
	case ctx.Err() != nil:
		msg := fmt.Sprintf("the request to the model endpoint %s was cancelled: %v", m.endpoint, ctx.Err())
		return m.fail(msg, msg, ctx.Err())
	case errors.As(err, &failed):
		return failed
	case errors.Is(err, context.DeadlineExceeded):
		msg := fmt.Sprintf("the model endpoint %s did not finish answering within %v", m.endpoint, m.opts.RequestTimeout)
		return m.fail(msg, msg, err)
	case errors.As(err, &api):
		head := fmt.Sprintf("the model endpoint %s reported an error in its answer", m.endpoint)
		return m.fail(head+": "+m.clean(api.Message), head, nil)
	case errors.As(err, &syn), errors.As(err, &typ), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, errNotStream):
		head := fmt.Sprintf("the model endpoint %s answered something that is not a chat completion", m.endpoint)
		hint := "; check that --model-url names an OpenAI-compatible /v1 base URL"
		return m.fail(head+" ("+m.clean(err.Error())+")"+hint, head+hint, nil)
	case errors.Is(err, errTooLarge):
		msg := fmt.Sprintf("the model endpoint %s answered more than %d bytes", m.endpoint, m.opts.MaxResponseBytes)
		return m.fail(msg, msg, nil)
	}
	head := fmt.Sprintf("the request to the model endpoint %s failed", m.endpoint)
	return m.fail(head+": "+m.clean(err.Error()), head, nil)
}

// keyLike matches what looks like an API key or a bearer credential.
var keyLike = regexp.MustCompile(`(?i)\b(sk|rk|pk|key)-[A-Za-z0-9_*.\-]{4,}|\bbearer\s+\S+`)

// keyForms matches key as written, in any letter case (a host name is
// case-insensitive and may come back lowered), and percent-encoded as a URL
// carries it; nil without a key.
func keyForms(key string) *regexp.Regexp {
	if key == "" {
		return nil
	}
	forms := []string{regexp.QuoteMeta(key)}
	for _, f := range []string{url.QueryEscape(key), url.PathEscape(key)} {
		if f != key {
			forms = append(forms, regexp.QuoteMeta(f))
		}
	}
	return regexp.MustCompile("(?i)" + strings.Join(forms, "|"))
}

// redact removes the key, in every form [keyForms] knows, and anything that
// looks like a key.
func (m *Model) redact(s string) string {
	if m.keyRE != nil {
		s = m.keyRE.ReplaceAllString(s, "[redacted]")
	}
	return keyLike.ReplaceAllString(s, "[redacted]")
}

// clean makes an endpoint's message fit an error: the key and anything that
// looks like one removed, one line, at most 200 bytes.
func (m *Model) clean(s string) string {
	s = m.redact(s)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxCauseBytes {
		cut := maxCauseBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// fail builds a step's error: msg for the client (it may repeat the
// endpoint's message, cleaned), logged for the log (the same facts without
// anything the endpoint wrote: a validation error may quote the request, so
// the prompt). Both are redacted as a whole, the one guard every failure
// passes.
func (m *Model) fail(msg, logged string, cause error) error {
	return &stepError{msg: m.redact(msg), logged: m.redact(logged), cause: cause}
}

// stepError is a failed step. Its message is client-visible; its log form
// ([slog.LogValuer]) is what a log may hold (docs/SPEC.md §9).
type stepError struct {
	msg, logged string
	cause       error
}

func (e *stepError) Error() string        { return e.msg }
func (e *stepError) Unwrap() error        { return e.cause }
func (e *stepError) LogValue() slog.Value { return slog.StringValue(e.logged) }

var (
	errTooLarge  = errors.New("answer too large")
	errNotStream = errors.New("no event stream of chat completion chunks")
)

// doer is the library's HTTPClient: it bounds each attempt, retries 429 and
// 5xx, turns every other non-2xx answer into a [stepError], and bounds
// the body the library reads.
type doer struct {
	m      *Model
	client *http.Client
}

func (d *doer) Do(req *http.Request) (*http.Response, error) {
	m := d.m
	ctx := req.Context()
	for attempt := 1; ; attempt++ {
		r := req
		if attempt > 1 {
			r = req.Clone(ctx)
			if req.GetBody != nil {
				body, err := req.GetBody()
				if err != nil {
					msg := fmt.Sprintf("the request to the model endpoint %s could not be repeated", m.endpoint)
					return nil, m.fail(msg, msg, nil)
				}
				r.Body = body
			}
		}
		actx, cancel := context.WithTimeout(ctx, m.opts.RequestTimeout)
		start := time.Now()
		resp, err := d.client.Do(r.WithContext(actx))
		if err != nil {
			cancel()
			m.log.Debug("model request", "model", m.name, "endpoint", m.endpoint, "attempt", attempt, "ok", false, "durationMs", time.Since(start).Milliseconds())
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, m.unreachable(err)
		}
		m.log.Debug("model request", "model", m.name, "endpoint", m.endpoint, "attempt", attempt, "status", resp.StatusCode, "durationMs", time.Since(start).Milliseconds())
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			resp.Body = &boundedBody{r: resp.Body, left: m.opts.MaxResponseBytes, cancel: cancel}
			return resp, nil
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		cancel()
		retryable := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		wait, waitOK := m.retryWait(resp.Header.Get("Retry-After"), attempt)
		if !retryable || attempt > m.opts.MaxRetries || !waitOK {
			return nil, m.statusError(resp, body, attempt, retryable && !waitOK)
		}
		m.log.Info("model endpoint busy; retrying", "model", m.name, "endpoint", m.endpoint, "status", resp.StatusCode,
			"attempt", attempt, "waitMs", wait.Milliseconds())
		if err := m.opts.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// retryWait is the wait before retry number attempt: the Retry-After value
// when there is one (ok false when it is longer than the cap), else the
// exponential backoff.
func (m *Model) retryWait(retryAfter string, attempt int) (time.Duration, bool) {
	backoff := firstBackoff << (attempt - 1)
	retryAfter = strings.TrimSpace(retryAfter)
	if retryAfter == "" {
		return backoff, true
	}
	var wait time.Duration
	if secs, err := strconv.ParseInt(retryAfter, 10, 64); err == nil && secs >= 0 {
		if secs > 1<<20 {
			return 0, false // also keeps the conversion below from overflowing
		}
		wait = time.Duration(secs) * time.Second
	} else if at, err := http.ParseTime(retryAfter); err == nil {
		wait = max(time.Until(at), 0)
	} else {
		return backoff, true // unreadable: as if absent
	}
	return wait, wait <= m.opts.MaxRetryAfter
}

// statusError describes a non-2xx answer: the endpoint, the status and the
// endpoint's own message (never for 401 and 403, whose messages may echo the
// key; never in the log form), with a hint for the usual causes.
func (m *Model) statusError(resp *http.Response, body []byte, attempts int, waitTooLong bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "the model endpoint %s answered HTTP %d", m.endpoint, resp.StatusCode)
	if t := http.StatusText(resp.StatusCode); t != "" {
		b.WriteString(" " + t)
	}
	if attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", attempts)
	}
	head := b.String()
	switch code := resp.StatusCode; {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		if m.key == "" {
			head += ": it needs an API key; set OPENAI_API_KEY"
		} else {
			head += ": it refused the API key from OPENAI_API_KEY"
		}
		return m.fail(head, head, nil)
	case code >= 300 && code < 400:
		const tail = ", which is not followed; name the final base URL with --model-url"
		where := "elsewhere"
		if loc, err := resp.Location(); err == nil {
			where = m.clean(loc.Scheme + "://" + loc.Host) // the host may carry the key
		}
		return m.fail(head+": it redirects to "+where+tail, head+": it redirects"+tail, nil)
	}
	msg, logged := head, head
	if em := errorMessage(body); em != "" {
		msg += ": " + m.clean(em)
	}
	switch {
	case waitTooLong:
		hint := fmt.Sprintf(" (it asked to retry after %s, longer than the %v this server waits)", m.clean(resp.Header.Get("Retry-After")), m.opts.MaxRetryAfter)
		msg, logged = msg+hint, logged+" (it asked to retry later than this server waits)"
	case resp.StatusCode == http.StatusNotFound:
		hint := fmt.Sprintf(" (check the model name %q and that --model-url is the /v1 base URL)", m.name)
		msg, logged = msg+hint, logged+hint
	}
	return m.fail(msg, logged, nil)
}

// errorMessage is the message of an OpenAI error body
// ({"error":{"message":…}} or {"error":"…"}), or "".
func errorMessage(body []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || len(e.Error) == 0 {
		return ""
	}
	var obj struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(e.Error, &obj) == nil && obj.Message != "" {
		return obj.Message
	}
	var s string
	if json.Unmarshal(e.Error, &s) == nil {
		return s
	}
	return ""
}

// unreachable describes a request that got no answer: the endpoint and the
// network cause, without the request URL.
func (m *Model) unreachable(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	cause := err.Error()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		cause = fmt.Sprintf("no answer within %v", m.opts.RequestTimeout)
	}
	head := fmt.Sprintf("cannot reach the model endpoint %s", m.endpoint)
	return m.fail(head+": "+m.clean(cause), head, nil)
}

// boundedBody is a 2xx answer's body: at most left bytes, and the attempt's
// timeout released when the library closes it.
type boundedBody struct {
	r      io.ReadCloser
	left   int64
	cancel context.CancelFunc
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		n, err := b.r.Read(one[:])
		if n > 0 {
			return 0, errTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error {
	err := b.r.Close()
	b.cancel()
	return err
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
