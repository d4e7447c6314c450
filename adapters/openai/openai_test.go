package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/openai"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/internal/syncbuf"
	"github.com/agentmcp/agentmcp/ports"
)

const fakeKey = "sk-agentmcp-FAKEKEY-0123456789abcdef"

func newModel(t *testing.T, url string, o openai.Options) *openai.Model {
	t.Helper()
	if o.Model == "" {
		o.Model = "m"
	}
	o.BaseURL = url
	if o.Sleep == nil {
		o.Sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	}
	m, err := openai.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func step(t *testing.T, m *openai.Model) (ports.AssistantMessage, []string, error) {
	t.Helper()
	var deltas []string
	msg, err := m.Step(t.Context(), ports.ModelRequest{
		Messages: []ports.Message{{Role: ports.RoleSystem, Content: "s"}, {Role: ports.RoleUser, Content: "u"}},
		Tools:    []domain.Tool{{Name: "read_file", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		OnText:   func(d string) { deltas = append(deltas, d) },
	})
	return msg, deltas, err
}

func TestNewChecksOptions(t *testing.T) {
	for _, url := range []string{"127.0.0.1:11434/v1", "ftp://host/v1", "http://user:pw@host/v1", "http://host/v1?key=x", "http://host/v1#f", "http://"} {
		if _, err := openai.New(openai.Options{Model: "m", BaseURL: url}); err == nil {
			t.Errorf("New(BaseURL %q) succeeded", url)
		} else if strings.Contains(err.Error(), "pw") || strings.Contains(err.Error(), "key=x") {
			t.Errorf("New(BaseURL %q) error repeats the URL's secret part: %v", url, err)
		}
	}
	if _, err := openai.New(openai.Options{BaseURL: "http://host/v1"}); err == nil {
		t.Error("New without a model succeeded")
	}
	m, err := openai.New(openai.Options{Model: "gpt-x", APIKey: fakeKey})
	if err != nil {
		t.Fatal(err)
	}
	if d := m.Describe(); d.Model != "gpt-x" || d.Endpoint != openai.DefaultBaseURL {
		t.Errorf("Describe = %+v", d)
	}
	m, _ = openai.New(openai.Options{Model: "m", BaseURL: "http://127.0.0.1:8080/v1/"})
	if d := m.Describe(); d.Endpoint != "http://127.0.0.1:8080/v1" {
		t.Errorf("Describe().Endpoint = %q, want the base without its trailing slash", d.Endpoint)
	}
}

// TestStreamedPieces: text deltas reach OnText as they arrive; tool-call
// pieces are assembled by index even when they interleave; comments, blank
// lines and a usage chunk without choices are skipped.
func TestStreamedPieces(t *testing.T) {
	sse := strings.Join([]string{
		`: keep-alive`,
		`data: {"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}`,
		`data: {"choices":[{"index":0,"delta":{"content":"lo"}}]}`,
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"read_file","arguments":""}}]}}]}`,
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c1","type":"function","function":{"name":"list_dir","arguments":"{\"pa"}}]}}]}`,
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}}]}`,
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"th\":\".\"}"}}]}}]}`,
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a.txt\"}"}}]}}]}`,
		`data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
		`data: [DONE]`,
	}, "\n\n") + "\n\n"
	srv := chatscript.Script(t, chatscript.Reply{Body: sse})
	msg, deltas, err := step(t, newModel(t, srv.URL, openai.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if msg.Content != "Hello" || strings.Join(deltas, "|") != "Hel|lo" || msg.FinishReason != "tool_calls" {
		t.Errorf("content %q, deltas %q, finish %q", msg.Content, deltas, msg.FinishReason)
	}
	want := []ports.ToolCall{{ID: "c0", Name: "read_file", Arguments: `{"path":"a.txt"}`}, {ID: "c1", Name: "list_dir", Arguments: `{"path":"."}`}}
	if len(msg.ToolCalls) != 2 || msg.ToolCalls[0] != want[0] || msg.ToolCalls[1] != want[1] {
		t.Errorf("tool calls = %+v, want %+v", msg.ToolCalls, want)
	}
	req := srv.Requests()[0]
	if !req.Stream || len(req.Tools) != 1 || string(req.Tools[0].Function.Parameters) != `{"type":"object"}` {
		t.Errorf("request: stream %v tools %+v", req.Stream, req.Tools)
	}
}

// TestStreamWithoutIndex: pieces without an index continue the last call.
func TestStreamWithoutIndex(t *testing.T) {
	srv := chatscript.Script(t, chatscript.Reply{Calls: []chatscript.Call{
		{ID: "a", Name: "read_file", Arguments: `{"path":"one.txt"}`, NoIndex: true},
		{ID: "b", Name: "read_file", Arguments: `{"path":"two.txt"}`, NoIndex: true},
	}})
	msg, _, err := step(t, newModel(t, srv.URL, openai.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.ToolCalls) != 2 || msg.ToolCalls[0].Arguments != `{"path":"one.txt"}` || msg.ToolCalls[1].ID != "b" || msg.ToolCalls[1].Arguments != `{"path":"two.txt"}` {
		t.Errorf("tool calls = %+v", msg.ToolCalls)
	}
}

func TestNoChoices(t *testing.T) {
	for _, stream := range []bool{true, false} {
		srv := chatscript.Script(t, chatscript.Reply{NoChoices: true})
		_, _, err := step(t, newModel(t, srv.URL, openai.Options{DisableStreaming: !stream}))
		if !errors.Is(err, ports.ErrNoChoices) {
			t.Errorf("stream=%v: %v, want ErrNoChoices", stream, err)
		}
	}
}

// TestErrorsAreClean: in-stream errors, redirects, oversize answers, slow
// answers and HTTP-date Retry-After, each with a message that names the
// endpoint and never the key.
func TestErrorsAreClean(t *testing.T) {
	var mu sync.Mutex
	var waits []time.Duration
	sleep := func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return nil
	}
	cases := []struct {
		name  string
		reply chatscript.Reply
		opts  openai.Options
		want  string
	}{
		{"in-stream error", chatscript.Reply{Body: `data: {"error":{"message":"context length exceeded for ` + fakeKey + `"}}` + "\n\n"}, openai.Options{}, "reported an error in its answer: context length exceeded for [redacted]"},
		{"redirect", chatscript.Reply{Status: 307, Header: map[string]string{"Location": "https://elsewhere.example/v1/chat/completions"}}, openai.Options{}, "redirects to https://elsewhere.example, which is not followed"},
		{"oversize", chatscript.Reply{Text: strings.Repeat("word ", 400)}, openai.Options{MaxResponseBytes: 1000}, "answered more than 1000 bytes"},
		{"slow", chatscript.Reply{Text: "late", Mid: func(ctx context.Context) { <-ctx.Done() }}, openai.Options{RequestTimeout: time.Second}, "did not finish answering within 1s"},
		{"not JSON", chatscript.Reply{Body: "data: {not json\n\n"}, openai.Options{}, "not a chat completion"},
		{"not SSE", chatscript.Reply{Body: `{"id":"x","choices":[]}`}, openai.Options{}, "not a chat completion"},
		{"400 echoing the key", chatscript.Reply{Status: 400, Body: `{"error":{"message":"bad key sk-live-abcdefgh and ` + fakeKey + `"}}`}, openai.Options{}, "HTTP 400 Bad Request: bad key [redacted] and [redacted]"},
		{"string error", chatscript.Reply{Status: 404, Body: `{"error":"model 'm' not found"}`}, openai.Options{}, `HTTP 404 Not Found: model 'm' not found (check the model name "m"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := chatscript.Script(t, c.reply)
			c.opts.APIKey = fakeKey
			_, _, err := step(t, newModel(t, srv.URL, c.opts))
			if err == nil {
				t.Fatal("Step succeeded")
			}
			msg := domain.ClientMessage(err)
			if !strings.Contains(msg, c.want) || !strings.Contains(msg, srv.URL) {
				t.Errorf("error = %q, want it to name %s and contain %q", msg, srv.URL, c.want)
			}
			if strings.Contains(err.Error(), "FAKEKEY") {
				t.Errorf("the key leaked: %v", err)
			}
		})
	}
	t.Run("Retry-After date", func(t *testing.T) {
		at := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
		srv := chatscript.Script(t, chatscript.Reply{Status: 503, Header: map[string]string{"Retry-After": at}}, chatscript.Reply{Text: "ok"})
		msg, _, err := step(t, newModel(t, srv.URL, openai.Options{Sleep: sleep}))
		if err != nil || msg.Content != "ok" {
			t.Fatalf("Step = %+v, %v", msg, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(waits) != 1 || waits[0] <= 0 || waits[0] > 3*time.Second {
			t.Errorf("waits = %v, want one wait of at most 3 s", waits)
		}
	})
}

// TestCancelStopsWaiting: a step cancelled while it waits to retry returns
// at once with the cancellation.
func TestCancelStopsWaiting(t *testing.T) {
	srv := chatscript.Script(t, chatscript.Reply{Status: 429, Header: map[string]string{"Retry-After": "20"}})
	waiting := make(chan struct{})
	m := newModel(t, srv.URL, openai.Options{Sleep: func(ctx context.Context, d time.Duration) error {
		close(waiting)
		<-ctx.Done() // a 20 s wait that only the cancellation ends
		return ctx.Err()
	}})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := m.Step(ctx, ports.ModelRequest{Messages: []ports.Message{{Role: ports.RoleUser, Content: "u"}}})
		done <- err
	}()
	select {
	case <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the step never waited to retry")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Step = %v, want cancelled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled step kept waiting to retry")
	}
}

// TestAuthorizationOnlyWithAKey: no key, no header.
func TestAuthorizationOnlyWithAKey(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`))
	}))
	defer srv.Close()
	for _, key := range []string{"", fakeKey} {
		m := newModel(t, srv.URL+"/v1", openai.Options{APIKey: key, DisableStreaming: true})
		if msg, _, err := step(t, m); err != nil || msg.Content != "hi" {
			t.Fatalf("Step = %+v, %v", msg, err)
		}
	}
	if len(got) != 2 || got[0] != "" || got[1] != "Bearer "+fakeKey {
		t.Errorf("Authorization headers = %q", got)
	}
}

// TestUsage: the token usage the endpoint reports reaches the message,
// streamed (a last chunk with empty choices) or whole; none reported is nil.
func TestUsage(t *testing.T) {
	for _, stream := range []bool{true, false} {
		srv := chatscript.Script(t,
			chatscript.Reply{Text: "hi", Usage: &chatscript.Usage{Prompt: 31, Completion: 4}},
			chatscript.Reply{Text: "hi"})
		m := newModel(t, srv.URL, openai.Options{DisableStreaming: !stream})
		msg, _, err := step(t, m)
		if err != nil || msg.Usage == nil || *msg.Usage != (ports.TokenUsage{InputTokens: 31, OutputTokens: 4}) {
			t.Errorf("stream=%v: usage %+v (%v), want 31 in, 4 out", stream, msg.Usage, err)
		}
		if msg, _, err := step(t, m); err != nil || msg.Usage != nil {
			t.Errorf("stream=%v: none reported: usage %+v (%v), want nil", stream, msg.Usage, err)
		}
	}
}

// TestBackendStreamShapes: the streamed shapes of servers other than
// OpenAI each assemble into the calls the model made (issue 19, item 5;
// docs/SPEC.md §9). Two calls, so a shape that merges or drops one fails.
func TestBackendStreamShapes(t *testing.T) {
	two := []chatscript.Call{
		{ID: "call_one", Name: "read_file", Arguments: `{"path":"one.txt"}`},
		{ID: "call_two", Name: "list_dir", Arguments: `{"path":"."}`},
	}
	cases := []struct {
		name   string
		reply  chatscript.Reply
		finish string
	}{
		{"OpenAI's shape", chatscript.Reply{}, "tool_calls"},
		{"every call at index 0 (Ollama)", chatscript.Reply{SameIndex: true}, "tool_calls"},
		{"index 0 and finish stop (Ollama, qwen3-coder)", chatscript.Reply{SameIndex: true, Finish: "stop"}, "stop"},
		{"whole calls at index 0 (Ollama)", chatscript.Reply{SameIndex: true, WholeCalls: true}, "tool_calls"},
		{"whole calls (buffering servers)", chatscript.Reply{WholeCalls: true}, "tool_calls"},
		{"arguments begin with the head (vLLM, Mistral)", chatscript.Reply{ArgsInHead: true}, "tool_calls"},
		{"empty deltas between pieces", chatscript.Reply{EmptyDeltas: true, SameIndex: true}, "tool_calls"},
		{"one-byte argument pieces", chatscript.Reply{ArgPiece: 1}, "tool_calls"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reply := c.reply
			reply.Calls = two
			reply.Usage = &chatscript.Usage{Prompt: 120, Completion: 7}
			srv := chatscript.Script(t, reply)
			msg, _, err := step(t, newModel(t, srv.URL, openai.Options{}))
			if err != nil {
				t.Fatal(err)
			}
			if len(msg.ToolCalls) != 2 {
				t.Fatalf("%d tool calls, want 2: %+v", len(msg.ToolCalls), msg.ToolCalls)
			}
			for i, want := range two {
				got := msg.ToolCalls[i]
				if got.ID != want.ID || got.Name != want.Name || got.Arguments != want.Arguments {
					t.Errorf("call %d = %+v, want %+v", i, got, want)
				}
			}
			if msg.FinishReason != c.finish {
				t.Errorf("finish reason %q, want %q", msg.FinishReason, c.finish)
			}
			if msg.Usage == nil || *msg.Usage != (ports.TokenUsage{InputTokens: 120, OutputTokens: 7}) {
				t.Errorf("usage = %+v, want 120 in, 7 out", msg.Usage)
			}
		})
	}
	t.Run("no usage reported", func(t *testing.T) {
		srv := chatscript.Script(t, chatscript.Reply{Text: "hi"})
		msg, _, err := step(t, newModel(t, srv.URL, openai.Options{}))
		if err != nil || msg.Usage != nil {
			t.Errorf("Step = %+v, %v; want no usage", msg, err)
		}
	})
}

// TestStreamAssemblyIsLinear: assembling a call whose arguments stream in
// small pieces costs memory linear in the answer: four times the
// arguments allocate about four times as much, not sixteen (issue 25,
// item 2). Bytes allocated, not time, so the test holds on any machine.
func TestStreamAssemblyIsLinear(t *testing.T) {
	alloc := func(size int) uint64 {
		args := `{"content":"` + strings.Repeat("x", size) + `"}`
		srv := chatscript.Script(t, chatscript.Reply{Calls: []chatscript.Call{{ID: "c", Name: "write_file", Arguments: args}}, ArgPiece: 64})
		m := newModel(t, srv.URL, openai.Options{})
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		msg, _, err := step(t, m)
		runtime.ReadMemStats(&after)
		if err != nil || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Arguments != args {
			t.Fatalf("Step: %v (%d calls)", err, len(msg.ToolCalls))
		}
		return after.TotalAlloc - before.TotalAlloc
	}
	small, large := alloc(128<<10), alloc(512<<10)
	if ratio := float64(large) / float64(small); ratio > 8 {
		t.Errorf("4× the arguments allocated %.1f× the bytes (%d → %d): assembly is not linear", ratio, small, large)
	}
}

// TestKeyNeverInFailures: whatever part of the endpoint's answer carries
// the key — a redirect's Location (host, path, query, percent-encoded),
// a header echoed in the error, an error body — neither the error nor the
// adapter's log holds it (issue 25, item 4). The key here looks like no
// known key format, so only knowing the key itself redacts it.
func TestKeyNeverInFailures(t *testing.T) {
	const key = "Opaque0123456789Secret"
	escaped := "Opaque0123456789Secret%2B%2F" // the key below, percent-encoded
	const keyPlus = key + "+/"
	cases := []struct {
		name  string
		key   string
		reply chatscript.Reply
		opts  openai.Options
	}{
		{"Location host", key, chatscript.Reply{Status: 302, Header: map[string]string{"Location": "https://" + key + ".example/v1"}}, openai.Options{}},
		{"Location host, lower case", key, chatscript.Reply{Status: 302, Header: map[string]string{"Location": "https://" + strings.ToLower(key) + ".example/v1"}}, openai.Options{}},
		{"Location path", key, chatscript.Reply{Status: 307, Header: map[string]string{"Location": "/v1/" + key + "/chat"}}, openai.Options{}},
		{"Location userinfo", key, chatscript.Reply{Status: 307, Header: map[string]string{"Location": "https://u:" + key + "@elsewhere.example/"}}, openai.Options{}},
		{"Location percent-encoded", keyPlus, chatscript.Reply{Status: 301, Header: map[string]string{"Location": "https://elsewhere.example/?k=" + escaped}}, openai.Options{}},
		{"Retry-After header echoed", key, chatscript.Reply{Status: 429, Header: map[string]string{"Retry-After": key}}, openai.Options{MaxRetries: -1}},
		{"Retry-After too long", key, chatscript.Reply{Status: 503, Header: map[string]string{"Retry-After": "Wed, 21 Oct 2099 07:28:00 GMT " + key}}, openai.Options{}},
		{"error body", key, chatscript.Reply{Status: 400, Body: `{"error":{"message":"bad request from ` + key + `"}}`}, openai.Options{}},
		{"error body, lower case", key, chatscript.Reply{Status: 422, Body: `{"error":"` + strings.ToLower(key) + `"}`}, openai.Options{}},
		{"in-stream error", key, chatscript.Reply{Body: `data: {"error":{"message":"` + key + `"}}` + "\n\n"}, openai.Options{}},
		{"not a completion", key, chatscript.Reply{Body: "data: " + key + "\n\n"}, openai.Options{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := chatscript.Script(t, c.reply)
			var log syncbuf.Buffer
			c.opts.APIKey = c.key
			c.opts.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
			_, _, err := step(t, newModel(t, srv.URL, c.opts))
			if err == nil {
				t.Fatal("Step succeeded")
			}
			logged := log.String()
			if lv, ok := err.(slog.LogValuer); ok {
				logged += lv.LogValue().String()
			}
			for _, where := range []string{err.Error(), logged} {
				low := strings.ToLower(where)
				if strings.Contains(low, strings.ToLower(key)) || strings.Contains(low, strings.ToLower(escaped)) {
					t.Errorf("the key leaked: %s", where)
				}
			}
			if !strings.Contains(err.Error(), srv.URL) {
				t.Errorf("error %q does not name the endpoint", err)
			}
		})
	}
}

// TestLogFormHoldsNothingTheEndpointWrote: an endpoint's message (a
// validation error quoting the request, so the prompt) reaches the client's
// error but never the error's log form (issue 25, item 5).
func TestLogFormHoldsNothingTheEndpointWrote(t *testing.T) {
	const quoted = "PROMPT-TEXT-quoted-back"
	for _, reply := range []chatscript.Reply{
		{Status: 400, Body: `{"error":{"message":"invalid message: ` + quoted + `"}}`},
		{Status: 500, Body: `{"error":"` + quoted + `"}`},
		{Body: `data: {"error":{"message":"` + quoted + `"}}` + "\n\n"},
		{Body: "data: {" + quoted + "\n\n"},
	} {
		srv := chatscript.Script(t, reply)
		_, _, err := step(t, newModel(t, srv.URL, openai.Options{MaxRetries: -1}))
		lv, ok := err.(slog.LogValuer)
		if !ok {
			t.Fatalf("error %T (%v) has no log form", err, err)
		}
		if got := lv.LogValue().String(); strings.Contains(got, quoted) || !strings.Contains(got, srv.URL) {
			t.Errorf("log form %q: want the endpoint and not the endpoint's words", got)
		}
	}
}

// TestArgumentsAsObject: a server that streams a call's arguments as a
// JSON object (Ollama's native shape) instead of a string fails the step
// with the "not a chat completion" error, naming the endpoint (docs/SPEC.md
// §9, streamed shapes).
func TestArgumentsAsObject(t *testing.T) {
	sse := `data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"read_file","arguments":{"path":"a.txt"}}}]}}]}` +
		"\n\ndata: [DONE]\n\n"
	srv := chatscript.Script(t, chatscript.Reply{Body: sse})
	_, _, err := step(t, newModel(t, srv.URL, openai.Options{}))
	if err == nil || !strings.Contains(err.Error(), "not a chat completion") || !strings.Contains(err.Error(), srv.URL) {
		t.Errorf("Step = %v, want the not-a-chat-completion error naming the endpoint", err)
	}
}
