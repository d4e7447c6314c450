package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/openai"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/chatscript"
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
		{"slow", chatscript.Reply{Text: "late", Mid: func(ctx context.Context) { <-ctx.Done() }}, openai.Options{RequestTimeout: 50 * time.Millisecond}, "did not finish answering within 50ms"},
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
			chatscript.Reply{Text: "hi", Usage: &chatscript.Usage{PromptTokens: 31, CompletionTokens: 4}},
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
