// Package fake provides a scripted ports.Session for tests of the engine and
// the carriers: fakes are allowed for the session and the clock only.
package fake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// Session is a scripted session. Its runtime tools:
//
//	echo {text}     → success envelope whose result is the arguments (title "Echo", read-only, closed-world)
//	fail {}         → failed envelope {"success":false,"toolName":"fail","error":"it failed"}
//	boom {}         → error "boom: the tool broke"
//	slow {}         → blocks until its context ends (then error "cancelled") or Release
//	progress {n}    → reports progress 1..n of n, then succeeds
//	write {text}    → asks permission; success only when allowed once (destructive)
//	panic {}        → panics (its value names a secret that must never reach a client)
//	compose {}      → supports tasks and starts in its request (docs/SPEC.md §14):
//	                  asks "What is your name?", then turns itself into a task
//	                  (ports.StartTask), then asks "What is your favorite
//	                  color?"; success whose result is {"name","color","task"}
//	                  (an unanswered question is null, task whether it became one)
//
// Submit answers "echo: <prompt>", except the prompts "refuse" (a refused
// error), "fail" (a failure inside the turn, with a second line that must
// never reach a client), "slow" (blocks like the slow tool), "progress"
// (reports progress 1..3 of 3, "step i", then answers "progressed") and
// "background" (a background agent "indexer" asks permission through the
// running turn's Caller; the answer says whether it was allowed) and
// "panic" (the session panics).
type Session struct {
	mu      sync.Mutex
	tools   []domain.Tool
	started chan string // receives the name of every call as it starts; may be nil
	ended   chan string // receives the name of every call as it returns; may be nil
	release chan struct{}
	calls   []string
}

// New returns the scripted session with its default tools.
func New() *Session {
	obj := func(props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":{` + props + `},"additionalProperties":false}`)
	}
	return &Session{
		tools: []domain.Tool{
			{Name: "echo", Title: "Echo", Description: "Echo the arguments", InputSchema: obj(`"text":{"type":"string"}`),
				Annotations: &domain.ToolAnnotations{ReadOnlyHint: domain.Hint(true), OpenWorldHint: domain.Hint(false)}},
			{Name: "fail", Description: "Fail with a failed envelope", InputSchema: obj(``)},
			{Name: "boom", Description: "Fail with an error", InputSchema: obj(``)},
			{Name: "slow", Description: "Block until cancelled", InputSchema: obj(``)},
			{Name: "progress", Description: "Report progress", InputSchema: obj(`"n":{"type":"integer"}`)},
			{Name: "write", Description: "Needs permission", InputSchema: obj(`"text":{"type":"string"}`),
				Annotations: &domain.ToolAnnotations{DestructiveHint: domain.Hint(true)}},
			{Name: "panic", Description: "Panic", InputSchema: obj(``)},
			{Name: "compose", Description: "Ask, become a task, ask again", InputSchema: obj(``),
				TaskSupport: domain.TaskOptional, TaskStartsInRequest: true},
		},
		release: make(chan struct{}),
	}
}

// SetTools replaces the runtime catalog (to test catalog validation).
func (s *Session) SetTools(tools []domain.Tool) {
	s.mu.Lock()
	s.tools = tools
	s.mu.Unlock()
}

// Started returns a channel that receives the tool name (or "submit") of each
// call as the session starts it. Call before serving.
func (s *Session) Started() <-chan string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started == nil {
		s.started = make(chan string, 128)
	}
	return s.started
}

// Ended returns a channel that receives the tool name (or "submit") of each
// call as the session returns from it. Call before serving.
func (s *Session) Ended() <-chan string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended == nil {
		s.ended = make(chan string, 128)
	}
	return s.ended
}

// done reports that the call name returned.
func (s *Session) done(name string) {
	s.mu.Lock()
	ch := s.ended
	s.mu.Unlock()
	if ch != nil {
		ch <- name
	}
}

// Release ends every slow call that is blocked, successfully.
func (s *Session) Release() { close(s.release) }

// Calls returns the names of the calls the session received, in order.
func (s *Session) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

func (s *Session) note(name string) {
	s.mu.Lock()
	s.calls = append(s.calls, name)
	ch := s.started
	s.mu.Unlock()
	if ch != nil {
		ch <- name
	}
}

func (s *Session) RuntimeTools(context.Context) ([]domain.Tool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]domain.Tool(nil), s.tools...), nil
}

func (s *Session) InvokeTool(ctx context.Context, name string, args json.RawMessage, caller ports.Caller) (domain.Envelope, error) {
	s.note(name)
	defer s.done(name)
	switch name {
	case "echo":
		return domain.Envelope{Success: true, ToolName: name, Result: args, ExecutionID: "exec-1"}, nil
	case "fail":
		return domain.Envelope{Success: false, ToolName: name, Error: "it failed"}, nil
	case "boom":
		return domain.Envelope{}, errors.New("boom: the tool broke")
	case "slow":
		select {
		case <-ctx.Done():
			return domain.Envelope{}, errors.New("cancelled")
		case <-s.release:
			return domain.Envelope{Success: true, ToolName: name}, nil
		}
	case "progress":
		var a struct{ N int }
		_ = json.Unmarshal(args, &a)
		for i := 1; i <= a.N; i++ {
			caller.Progress(ctx, float64(i), float64(a.N), fmt.Sprintf("step %d", i))
		}
		return domain.Envelope{Success: true, ToolName: name}, nil
	case "write":
		if caller.RequestPermission(ctx, domain.PermissionPrompt{Tool: name, Summary: "write text"}) != domain.AllowOnce {
			return domain.Envelope{Success: false, ToolName: name, Error: "Permission denied"}, nil
		}
		return domain.Envelope{Success: true, ToolName: name}, nil
	case "panic":
		panic(PanicValue)
	case "compose":
		return compose(ctx, caller)
	}
	return domain.Envelope{}, fmt.Errorf("no such tool %q", name)
}

func (s *Session) Submit(ctx context.Context, sub ports.Submission, caller ports.Caller) (ports.TurnResult, error) {
	s.note("submit")
	defer s.done("submit")
	prompt := sub.Prompt
	switch prompt {
	case "refuse":
		return ports.TurnResult{}, ports.Refused("session is busy")
	case "panic":
		panic(PanicValue)
	case "fail":
		return ports.TurnResult{}, errors.New("the turn failed\nsecret detail that must not reach the client")
	case "slow":
		select {
		case <-ctx.Done():
			return ports.TurnResult{}, errors.New("cancelled")
		case <-s.release:
		}
	case "progress":
		for i := 1; i <= 3; i++ {
			caller.Progress(ctx, float64(i), 3, fmt.Sprintf("step %d", i))
		}
		return ports.TurnResult{Response: "progressed"}, nil
	case "background":
		d := caller.RequestPermission(ctx, domain.PermissionPrompt{Tool: "echo", Summary: "index the workspace", Agent: "indexer"})
		if d == domain.AllowOnce {
			return ports.TurnResult{Response: "the background agent was allowed"}, nil
		}
		return ports.TurnResult{Response: "the background agent was denied"}, nil
	}
	return ports.TurnResult{Response: "echo: " + strings.TrimSpace(prompt)}, nil
}

var _ ports.Session = (*Session)(nil)

// PanicValue is what the panic tool and prompt panic with: a secret that
// must never reach a client (the engine logs it; docs/SPEC.md §3).
const PanicValue = "fake session panic: secret-7f3a"

// compose asks, turns the call into a task, and asks again.
func compose(ctx context.Context, caller ports.Caller) (domain.Envelope, error) {
	text := func(a domain.Answer) *string {
		if !a.Answered {
			return nil
		}
		return &a.Text
	}
	name := caller.Ask(ctx, domain.AskPrompt{Question: "What is your name?"})
	task := ports.StartTask(ctx, caller)
	color := caller.Ask(ctx, domain.AskPrompt{Question: "What is your favorite color?"})
	raw, err := json.Marshal(struct {
		Name  *string `json:"name"`
		Color *string `json:"color"`
		Task  bool    `json:"task"`
	}{text(name), text(color), task})
	if err != nil {
		return domain.Envelope{}, err
	}
	return domain.Envelope{Success: true, ToolName: "compose", Result: raw}, nil
}
