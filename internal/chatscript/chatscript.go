// Package chatscript is a scripted OpenAI-compatible Chat Completions
// endpoint for tests: a real HTTP server on 127.0.0.1 that answers POST
// /v1/chat/completions with the replies a test scripts, streamed as
// Server-Sent Events (text pieces, tool-call pieces keyed by index, a
// finish_reason, then "data: [DONE]") when the request asks for stream,
// whole otherwise. It stands in for the model, the one thing no test can
// run here; everything between the agent and it is the real code.
//
// It records every request (its decoded body and headers) and, for a reply
// with a Mid hook, lets the test act while the answer is half sent — to
// observe the request's context being cancelled, for one.
package chatscript

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"unicode/utf8"
)

// Message is one message of a recorded request.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls"`
	ToolCallID string     `json:"tool_call_id"`
}

// ToolCall is a tool call as the wire carries it.
type ToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Tool is a function tool of a recorded request.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// Request is one recorded request.
type Request struct {
	N        int // 1 for the first request
	Header   http.Header
	Body     []byte
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools"`
	Stream   bool      `json:"stream"`
}

// LastUser returns the content of the request's last user message.
func (r *Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// UserPrompts returns the contents of the request's user messages, oldest
// first: what the model was shown of the conversation's prompts.
func (r *Request) UserPrompts() []string {
	var us []string
	for _, m := range r.Messages {
		if m.Role == "user" {
			us = append(us, m.Content)
		}
	}
	return us
}

// Call is one tool call a reply makes.
type Call struct {
	ID, Name, Arguments string
	// NoIndex leaves "index" out of the streamed pieces (some servers do).
	NoIndex bool
}

// Reply is one scripted answer.
type Reply struct {
	// Status, when not 0 or 200, answers with that status, Header and
	// Body (raw) instead of a completion.
	Status int
	Header map[string]string
	// Body, when set on a 200 reply, is sent raw instead of a completion
	// (a malformed answer).
	Body string

	// Text is the assistant's text; streamed in pieces of at most 4 bytes.
	Text string
	// Calls are the assistant's tool calls.
	Calls []Call
	// NoChoices answers a completion whose choices list is empty.
	NoChoices bool
	// Finish is the finish_reason; default "tool_calls" with calls, else
	// "stop".
	Finish string

	// Usage, when set, reports token counts: in the whole answer's "usage",
	// or streamed as a last chunk without choices (OpenAI's shape with
	// stream_options.include_usage).
	Usage *Usage

	// Streamed shapes of servers other than OpenAI (docs/SPEC.md §9):
	//
	// SameIndex sends every call at index 0, told apart only by their ids
	// (Ollama, ollama/ollama #15457 and #16212).
	SameIndex bool
	// WholeCalls sends each call whole in one piece: id, name and all the
	// arguments (Ollama; servers that buffer calls, theroyallab/tabbyAPI
	// #460).
	WholeCalls bool
	// ArgsInHead sends the first piece of the arguments with the id and name
	// (vLLM with Mistral's parser, vllm-project/vllm #34887); otherwise the
	// head carries "arguments":"".
	ArgsInHead bool
	// EmptyDeltas puts an empty delta, an empty content and an empty
	// tool_calls list between the pieces (jjang-ai/vmlx #219).
	EmptyDeltas bool
	// ArgPiece is the size of the streamed argument pieces (default 5, at
	// least 4).
	ArgPiece int

	// Mid, when set, runs after the first piece of the answer has been
	// sent (streamed) or before anything is sent (whole), with the
	// request's context: a test holds the answer there.
	Mid func(ctx context.Context)
	// MidAfterText, when > 0 on a streamed reply, runs Mid after that many
	// pieces of Text instead (a test holds the stream mid-text).
	MidAfterText int
}

// Usage is a reply's token counts.
type Usage struct{ Prompt, Completion int }

func (u *Usage) wire() map[string]any {
	return map[string]any{"prompt_tokens": u.Prompt, "completion_tokens": u.Completion, "total_tokens": u.Prompt + u.Completion}
}

// Server is the scripted endpoint.
type Server struct {
	// URL is the base URL to configure ("http://127.0.0.1:<port>/v1").
	URL string

	srv    *httptest.Server
	answer func(*Request) Reply

	mu   sync.Mutex
	reqs []*Request
}

// New starts a server that answers each request with answer(request); it
// is closed when the test ends.
func New(t testing.TB, answer func(r *Request) Reply) *Server {
	t.Helper()
	s := Serve(answer)
	t.Cleanup(s.Close)
	return s
}

// Serve is New outside a test (the end-to-end test's model,
// internal/e2eparts): the server runs until Close.
func Serve(answer func(r *Request) Reply) *Server {
	s := &Server{answer: answer}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/v1"
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Script starts a server that answers with replies in order; a request
// beyond them gets a 500 that says the script is exhausted.
func Script(t testing.TB, replies ...Reply) *Server {
	var mu sync.Mutex
	next := 0
	return New(t, func(*Request) Reply {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(replies) {
			return Reply{Status: 500, Body: `{"error":{"message":"chatscript: the script has no more replies"}}`}
		}
		next++
		return replies[next-1]
	})
}

// Requests returns the requests received so far.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.reqs...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req := &Request{Header: r.Header.Clone(), Body: body}
	if err := json.Unmarshal(body, req); err != nil {
		http.Error(w, `{"error":{"message":"chatscript: the request is not JSON"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	req.N = len(s.reqs)
	s.mu.Unlock()

	reply := s.answer(req)
	for k, v := range reply.Header {
		w.Header().Set(k, v)
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.Status)
		io.WriteString(w, reply.Body)
		return
	}
	if reply.Body != "" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, reply.Body)
		return
	}
	if req.Stream {
		s.stream(w, r.Context(), reply)
	} else {
		if reply.Mid != nil {
			reply.Mid(r.Context())
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(whole(reply))
	}
}

func finish(r Reply) string {
	switch {
	case r.Finish != "":
		return r.Finish
	case len(r.Calls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func whole(r Reply) any {
	if r.NoChoices {
		return map[string]any{"id": "chatcmpl-script", "object": "chat.completion", "model": "scripted", "choices": []any{}}
	}
	msg := map[string]any{"role": "assistant", "content": r.Text}
	if len(r.Calls) > 0 {
		var calls []any
		for _, c := range r.Calls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		msg["tool_calls"] = calls
	}
	out := map[string]any{"id": "chatcmpl-script", "object": "chat.completion", "model": "scripted",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish(r)}}}
	if r.Usage != nil {
		out["usage"] = r.Usage.wire()
	}
	return out
}

// stream writes r as SSE chunks, flushing each.
func (s *Server) stream(w http.ResponseWriter, ctx context.Context, r Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	mid := r.Mid
	if r.MidAfterText > 0 {
		mid = nil
	}
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
		if mid != nil {
			mid(ctx)
			mid = nil
		}
	}
	chunk := func(choices ...any) map[string]any {
		if choices == nil {
			choices = []any{}
		}
		return map[string]any{"id": "chatcmpl-script", "object": "chat.completion.chunk", "model": "scripted", "choices": choices}
	}
	delta := func(d map[string]any, fin any) any {
		return map[string]any{"index": 0, "delta": d, "finish_reason": fin}
	}
	if r.NoChoices {
		send(chunk())
		io.WriteString(w, "data: [DONE]\n\n")
		return
	}
	send(chunk(delta(map[string]any{"role": "assistant", "content": ""}, nil)))
	for i, piece := range pieces(r.Text, 4) {
		send(chunk(delta(map[string]any{"content": piece}, nil)))
		if i+1 == r.MidAfterText && r.Mid != nil {
			r.Mid(ctx)
		}
	}
	empties := func() {
		if r.EmptyDeltas {
			send(chunk(delta(map[string]any{}, nil)))
			send(chunk(delta(map[string]any{"content": ""}, nil)))
			send(chunk(delta(map[string]any{"tool_calls": []any{}}, nil)))
		}
	}
	size := 5
	if r.ArgPiece > 0 {
		size = max(r.ArgPiece, 4) // pieces needs room for a whole UTF-8 rune
	}
	for i, c := range r.Calls {
		index := i
		if r.SameIndex {
			index = 0
		}
		args := pieces(c.Arguments, size)
		first := ""
		switch {
		case r.WholeCalls:
			first, args = c.Arguments, nil
		case r.ArgsInHead && len(args) > 0:
			first, args = args[0], args[1:]
		}
		head := map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": first}}
		if !c.NoIndex {
			head["index"] = index
		}
		empties()
		send(chunk(delta(map[string]any{"tool_calls": []any{head}}, nil)))
		for _, piece := range args {
			p := map[string]any{"function": map[string]any{"arguments": piece}}
			if !c.NoIndex {
				p["index"] = index
			}
			empties()
			send(chunk(delta(map[string]any{"tool_calls": []any{p}}, nil)))
		}
	}
	send(chunk(delta(map[string]any{}, finish(r))))
	if r.Usage != nil {
		c := chunk()
		c["usage"] = r.Usage.wire()
		send(c)
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

// pieces cuts s into pieces of at most n bytes (n >= 4), on UTF-8
// boundaries.
func pieces(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		cut := min(n, len(s))
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut--
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}
