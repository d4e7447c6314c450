package interop

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// chatEndpoint is a scripted OpenAI-compatible Chat Completions endpoint on
// 127.0.0.1 for the agent scenarios: the binary's real model adapter talks
// to it ("serve … --model scripted --model-url <url>"). It streams every
// answer as Server-Sent Events (tool-call pieces keyed by index, then
// "data: [DONE]"), choosing it from the conversation:
//
//   - after a tool result: "I wrote hello.txt." when the result's envelope
//     succeeded, else "The write was not allowed.";
//   - the prompt "slow": one chunk, then it holds the answer until the
//     request's context ends (reported on cancelled);
//   - a prompt starting "Write hello.txt": a write_file call of hello.txt;
//   - "read along": streams "Reading along: part one." and holds the rest
//     (" Part two.") until release is closed or the request ends;
//   - anything else: "still here: <prompt>".
type chatEndpoint struct {
	url string

	// streaming receives once the "slow" answer has started; cancelled
	// once its request's context has ended.
	streaming chan struct{}
	cancelled chan struct{}

	// release lets the "read along" answer finish.
	release chan struct{}

	mu       sync.Mutex
	requests []chatRequest
}

// chatRequest is what the endpoint keeps of a request.
type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role       string            `json:"role"`
		Content    string            `json:"content"`
		ToolCallID string            `json:"tool_call_id"`
		ToolCalls  []json.RawMessage `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// wroteContent is what the scripted write_file call writes.
const wroteContent = "hello from the agent\n"

func newChatEndpoint(t *testing.T) *chatEndpoint {
	t.Helper()
	e := &chatEndpoint{streaming: make(chan struct{}, 1), cancelled: make(chan struct{}, 1), release: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(srv.Close)
	e.url = srv.URL + "/v1"
	return e
}

func (e *chatEndpoint) recorded() []chatRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]chatRequest(nil), e.requests...)
}

func (e *chatEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req chatRequest
	if err != nil || r.URL.Path != "/v1/chat/completions" || json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
		http.Error(w, `{"error":{"message":"chat endpoint: not a chat completion request"}}`, http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.requests = append(e.requests, req)
	e.mu.Unlock()

	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	send := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"object": "chat.completion.chunk",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	done := func() { io.WriteString(w, "data: [DONE]\n\n") }
	answer := func(text string) {
		send(map[string]any{"role": "assistant", "content": ""}, nil)
		for _, piece := range strings.SplitAfter(text, " ") {
			send(map[string]any{"content": piece}, nil)
		}
		send(map[string]any{}, "stop")
		done()
	}

	last := req.Messages[len(req.Messages)-1]
	switch {
	case last.Role == "tool" && strings.Contains(last.Content, `"success":true`):
		answer("I wrote hello.txt.")
	case last.Role == "tool":
		answer("The write was not allowed.")
	case last.Content == "slow":
		send(map[string]any{"role": "assistant", "content": "thinking"}, nil)
		e.streaming <- struct{}{}
		<-r.Context().Done()
		e.cancelled <- struct{}{}
	case last.Content == "read along":
		send(map[string]any{"role": "assistant", "content": ""}, nil)
		send(map[string]any{"content": "Reading along: part one."}, nil)
		select {
		case <-e.release:
		case <-r.Context().Done():
			return
		}
		send(map[string]any{"content": " Part two."}, nil)
		send(map[string]any{}, "stop")
		done()
	case strings.HasPrefix(last.Content, "Write hello.txt"):
		args, _ := json.Marshal(map[string]string{"path": "hello.txt", "content": wroteContent})
		send(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "type": "function",
			"function": map[string]any{"name": "write_file", "arguments": ""}}}}, nil)
		half := len(args) / 2
		for _, piece := range []string{string(args[:half]), string(args[half:])} {
			send(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": piece}}}}, nil)
		}
		send(map[string]any{}, "tool_calls")
		done()
	default:
		answer("still here: " + last.Content)
	}
}

// checkAgentRequests checks what the model saw over the scenario: the
// configured model name, streamed requests, the workspace's tools, and
// nothing of the cancelled "slow" turn in the turn after it.
func checkAgentRequests(t *testing.T, e *chatEndpoint) {
	t.Helper()
	reqs := e.recorded()
	if len(reqs) != 4 {
		t.Fatalf("the model endpoint got %d requests, want 4 (write step, answer step, slow, after)", len(reqs))
	}
	for i, r := range reqs {
		var tools []string
		for _, tool := range r.Tools {
			tools = append(tools, tool.Function.Name)
		}
		if r.Model != "scripted" || !r.Stream || strings.Join(tools, " ") != "list_dir read_file search_text write_file edit_file find_files" {
			t.Errorf("request %d: model %q stream %v tools %q", i+1, r.Model, r.Stream, tools)
		}
	}
	var roles []string
	for _, m := range reqs[3].Messages {
		roles = append(roles, m.Role)
		if m.Content == "slow" {
			t.Errorf("the turn after the cancelled one still carries its prompt")
		}
	}
	if got := strings.Join(roles, " "); got != "system user assistant tool assistant user" {
		t.Errorf("the last request's roles = %s, want the first turn (with its tool exchange) then the new prompt", got)
	}
}
