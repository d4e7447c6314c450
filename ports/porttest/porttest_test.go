package porttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// bug is one way the fake session breaks the port; noBug is a correct session.
type bug int

const (
	noBug bug = iota
	unstableOrder
	arraySchema
	readOnlyPrompts
	ignoresCancel
	stuckAfterCancel
	effectOnDeny
	promptsToEveryone
	previousResponse
	refusalNotMarked
	backgroundToToolCall
)

// fake is a small session with four tools: echo (read-only), wait (reports
// progress, then waits for its ctx), touch (asks permission, then sets a
// flag) and turns that answer "re: <prompt>". The prompt "spawn" starts a
// background agent that asks permission through the running turn's Caller.
// Each bug breaks one rule of the port.
type fake struct {
	bug bug

	lists   atomic.Int32
	touched atomic.Bool
	stuck   atomic.Bool

	turnMu sync.Mutex // held while a turn runs

	mu         sync.Mutex // guards the fields below
	turnCaller ports.Caller
	active     []ports.Caller // callers of tool calls in flight
	last       string         // previousResponse
}

func (s *fake) RuntimeTools(context.Context) ([]domain.Tool, error) {
	schema := json.RawMessage(`{"type":"object","additionalProperties":false}`)
	tools := []domain.Tool{
		{Name: "echo", Description: "echo", InputSchema: schema},
		{Name: "wait", Description: "wait", InputSchema: schema},
		{Name: "touch", Description: "touch", InputSchema: schema},
	}
	if s.bug == arraySchema {
		tools[0].InputSchema = json.RawMessage(`{"type":"array"}`)
	}
	if s.bug == unstableOrder && s.lists.Add(1)%2 == 0 {
		slices.Reverse(tools)
	}
	return tools, nil
}

func (s *fake) InvokeTool(ctx context.Context, name string, _ json.RawMessage, caller ports.Caller) (domain.Envelope, error) {
	s.mu.Lock()
	s.active = append(s.active, caller)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.active = slices.DeleteFunc(s.active, func(c ports.Caller) bool { return c == caller })
		s.mu.Unlock()
	}()
	ok := domain.Envelope{Success: true, ToolName: name, Result: json.RawMessage(`"done"`)}
	fail := func(msg string) (domain.Envelope, error) {
		return domain.Envelope{ToolName: name, Error: msg}, nil
	}
	switch name {
	case "echo":
		if s.stuck.Load() {
			return domain.Envelope{}, errors.New("stuck since a cancelled call")
		}
		if s.bug == readOnlyPrompts {
			caller.Ask(ctx, domain.AskPrompt{Question: "sure?"})
		}
		return ok, nil
	case "wait":
		caller.Progress(ctx, 1, 0, "waiting")
		if s.bug == ignoresCancel {
			return ok, nil
		}
		<-ctx.Done()
		if s.bug == stuckAfterCancel {
			s.stuck.Store(true)
		}
		return fail("cancelled")
	case "touch":
		p := domain.PermissionPrompt{Tool: "touch", Summary: "set the flag"}
		targets := []ports.Caller{caller}
		if s.bug == promptsToEveryone {
			s.mu.Lock()
			targets = slices.Clone(s.active)
			s.mu.Unlock()
		}
		allowed := false
		for _, c := range targets {
			allowed = c.RequestPermission(ctx, p) == domain.AllowOnce || allowed
		}
		if allowed || s.bug == effectOnDeny {
			s.touched.Store(true)
		}
		if !allowed {
			return fail("Permission denied")
		}
		return ok, nil
	}
	return fail(domain.UnknownToolMessage(name))
}

func (s *fake) Submit(ctx context.Context, sub ports.Submission, caller ports.Caller) (ports.TurnResult, error) {
	prompt := sub.Prompt
	if !s.turnMu.TryLock() {
		if s.bug == refusalNotMarked {
			return ports.TurnResult{}, errors.New("busy")
		}
		return ports.TurnResult{}, ports.Refused("busy")
	}
	defer s.turnMu.Unlock()
	s.mu.Lock()
	s.turnCaller = caller
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.turnCaller = nil
		s.mu.Unlock()
	}()

	if prompt == "spawn" {
		done := make(chan struct{})
		go func() { // the background agent
			defer close(done)
			s.mu.Lock()
			target := s.turnCaller
			if s.bug == backgroundToToolCall && len(s.active) > 0 {
				target = s.active[len(s.active)-1]
			}
			s.mu.Unlock()
			target.RequestPermission(ctx, domain.PermissionPrompt{Tool: "touch", Summary: "helper wants the flag", Agent: "helper"})
		}()
		<-done
	}
	response := "re: " + prompt
	if s.bug == previousResponse {
		s.mu.Lock()
		response, s.last = s.last, response
		s.mu.Unlock()
	}
	return ports.TurnResult{Response: response}, nil
}

func (s *fake) fixture() Fixture {
	return Fixture{
		Session:          s,
		ReadOnly:         Call{Tool: "echo"},
		Cancellable:      Call{Tool: "wait"},
		Guarded:          Call{Tool: "touch"},
		SideEffect:       s.touched.Load,
		Turn:             func(i int) (string, string) { p := fmt.Sprintf("prompt %d", i); return p, "re: " + p },
		BackgroundPrompt: "spawn",
	}
}

// noTurns is the fake declaring that it runs no turns, as the workspace
// session does; its Submit refuses (or, with refusalNotMarked, fails).
type noTurns struct{ *fake }

func (s noTurns) Submit(context.Context, ports.Submission, ports.Caller) (ports.TurnResult, error) {
	if s.bug == refusalNotMarked {
		return ports.TurnResult{}, errors.New("no model")
	}
	return ports.TurnResult{}, ports.Refused("no model")
}

func TestSuitePassesACorrectSession(t *testing.T) {
	TestSession(t, func(t *testing.T) Fixture { return (&fake{}).fixture() })
}

func TestSuitePassesACorrectSessionWithoutTurns(t *testing.T) {
	TestSession(t, func(t *testing.T) Fixture {
		f := (&fake{}).fixture()
		f.Session, f.Turn, f.BackgroundPrompt = noTurns{f.Session.(*fake)}, nil, ""
		return f
	})
}

// TestSuiteCatchesBrokenSessions runs each check against a session with one
// bug and expects it to fail, with a message naming the broken rule, while
// the same check passes the correct session.
func TestSuiteCatchesBrokenSessions(t *testing.T) {
	tests := []struct {
		name    string
		check   string
		bug     bug
		noTurns bool           // the session declares no turns (Fixture.Turn nil)
		mutate  func(*Fixture) // breaks the fixture rather than the session
		want    string
	}{
		{name: "unstable order", check: "RuntimeTools", bug: unstableOrder, want: "not stable"},
		{name: "array schema", check: "RuntimeTools", bug: arraySchema, want: `root type must be "object"`},
		{name: "read-only call prompts", check: "ReadOnly", bug: readOnlyPrompts, want: "raised prompts"},
		{name: "cancellation ignored", check: "Cancellation", bug: ignoresCancel, want: "cancellation did not reach the tool"},
		{name: "stuck after cancellation", check: "Cancellation", bug: stuckAfterCancel, want: "no longer serves"},
		{name: "effect despite closed caller", check: "ClosedCallerDenies", bug: effectOnDeny, want: "had its side effect"},
		{name: "blind side-effect probe", check: "AllowOnce", mutate: func(f *Fixture) { f.SideEffect = func() bool { return false } }, want: "cannot see the effect"},
		{name: "prompts to every caller", check: "PromptsReachOnlyTheirCaller", bug: promptsToEveryone, want: "reached a bystander"},
		{name: "effect despite deny", check: "PromptsReachOnlyTheirCaller", bug: effectOnDeny, want: "had its side effect"},
		{name: "previous turn's response", check: "OwnTurn", bug: previousResponse, want: "lone Submit"},
		{name: "unmarked refusal", check: "OwnTurn", bug: refusalNotMarked, noTurns: true, want: "want a refusal"},
		{name: "background prompt to a tool call", check: "BackgroundPrompts", bug: backgroundToToolCall, want: "reached the Caller of a tool call"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := lookupCheck(t, tt.check)
			newFixture := func(b bug) Fixture {
				f := (&fake{bug: b}).fixture()
				if tt.noTurns {
					f.Session, f.Turn, f.BackgroundPrompt = noTurns{f.Session.(*fake)}, nil, ""
				}
				return f
			}
			if rec := runCheck(t, check, newFixture(noBug)); rec.Failed() {
				t.Fatalf("%s fails the correct session: %s", tt.check, rec.messages())
			}
			broken := newFixture(tt.bug)
			if tt.mutate != nil {
				tt.mutate(&broken)
			}
			rec := runCheck(t, check, broken)
			if !rec.Failed() {
				t.Fatalf("%s passed a broken session (%s)", tt.check, tt.name)
			}
			t.Logf("%s reports: %s", tt.check, rec.messages())
			if !strings.Contains(rec.messages(), tt.want) {
				t.Errorf("%s failed with %q, want a message containing %q", tt.check, rec.messages(), tt.want)
			}
		})
	}
}

// TestSuiteReportsAMissingProgress checks that a fixture whose Cancellable
// call never reports progress fails the check instead of hanging or passing.
func TestSuiteReportsAMissingProgress(t *testing.T) {
	f := (&fake{}).fixture()
	f.Cancellable = Call{Tool: "echo"}
	rec := runCheck(t, lookupCheck(t, "Cancellation"), f)
	if !rec.Failed() || !strings.Contains(rec.messages(), "must report progress") {
		t.Errorf("Cancellation with a call that reports no progress: failed=%v %q", rec.Failed(), rec.messages())
	}
}

// TestRecorderAnswersClosedAfterFinish checks the Recorder's late-use rule.
func TestRecorderAnswersClosedAfterFinish(t *testing.T) {
	c := &Recorder{Name: "call", Allow: true}
	if got := c.RequestPermission(t.Context(), domain.PermissionPrompt{Tool: "x"}); got != domain.AllowOnce {
		t.Fatalf("before Finish: %v, want AllowOnce", got)
	}
	c.Finish()
	if got := c.RequestPermission(t.Context(), domain.PermissionPrompt{Tool: "x"}); got != domain.Deny {
		t.Errorf("after Finish: %v, want Deny", got)
	}
	c.Progress(t.Context(), 2, 0, "")
	if late := c.LateUses(); len(late) != 2 {
		t.Errorf("LateUses = %q, want 2 entries", late)
	}
	if perms, _ := c.Requests(); len(perms) != 1 {
		t.Errorf("recorded %d prompts, want only the one before Finish", len(perms))
	}
}

func lookupCheck(t *testing.T, name string) func(testing.TB, Fixture) {
	t.Helper()
	for _, c := range checks {
		if c.name == name {
			return c.run
		}
	}
	t.Fatalf("no check %q", name)
	return nil
}

// recorder is a testing.TB that records failures instead of reporting them,
// so a check can be seen failing. Fatal and Skip end the check's goroutine.
type recorder struct {
	testing.TB

	mu     sync.Mutex // guards the fields below
	failed bool
	msgs   []string
}

// runCheck runs check on its own goroutine against a recorder and returns it
// once the check has ended (returned, failed fatally or skipped).
func runCheck(t *testing.T, check func(testing.TB, Fixture), f Fixture) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r, f)
	}()
	<-done
	return r
}

func (r *recorder) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
	r.msgs = append(r.msgs, msg)
}

func (r *recorder) messages() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.msgs, " | ")
}

func (r *recorder) Helper() {}
func (r *recorder) Fail()   { r.fail("Fail") }
func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}
func (r *recorder) Error(args ...any)                 { r.fail(fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) { r.fail(fmt.Sprintf(format, args...)) }
func (r *recorder) FailNow()                          { r.fail("FailNow"); runtime.Goexit() }
func (r *recorder) Fatal(args ...any)                 { r.fail(fmt.Sprint(args...)); runtime.Goexit() }
func (r *recorder) Fatalf(format string, args ...any) {
	r.fail(fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (r *recorder) Skip(args ...any)                 { runtime.Goexit() }
func (r *recorder) Skipf(format string, args ...any) { runtime.Goexit() }
func (r *recorder) SkipNow()                         { runtime.Goexit() }
