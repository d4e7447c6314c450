package workspace_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
	"github.com/agentmcp/agentmcp/ports/porttest"
)

// patience bounds a wait before the test fails; it never paces a test.
const patience = 10 * time.Second

func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(patience)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("gave up waiting for %s", what)
		panic("unreachable")
	}
}

type result struct {
	env domain.Envelope
	err error
}

func goInvoke(s *workspace.Session, ctx context.Context, tool, args string, c ports.Caller) <-chan result {
	ch := make(chan result, 1)
	go func() {
		env, err := s.InvokeTool(ctx, tool, json.RawMessage(args), c)
		ch <- result{env, err}
	}()
	return ch
}

// heldSearch starts a search_text over many files and holds it inside its
// first progress report until release is closed.
func heldSearch(t *testing.T, s *workspace.Session) (done <-chan result, release func()) {
	t.Helper()
	held := make(chan struct{})
	rel := make(chan struct{})
	var once sync.Once
	rec := &porttest.Recorder{OnProgress: func(context.Context) {
		once.Do(func() { close(held) })
		<-rel
	}}
	release = sync.OnceFunc(func() { close(rel) })
	t.Cleanup(release) // a failed test does not leave the search parked
	done = goInvoke(s, t.Context(), "search_text", `{"pattern":"needle","path":"many"}`, rec)
	await(t, held, "the search's first progress report")
	return done, release
}

// TestReadOnlyCallsRunConcurrently holds one search in flight and runs every
// other tool beside it.
func TestReadOnlyCallsRunConcurrently(t *testing.T) {
	files := manyFiles("many", 2*workspace.ProgressEvery)
	files["a.txt"] = "needle a\n"
	s, _ := newSession(t, files)
	done, release := heldSearch(t, s)

	for _, call := range []struct{ tool, args string }{
		{"read_file", `{"path":"a.txt"}`},
		{"list_dir", `{"path":"."}`},
		{"search_text", `{"pattern":"needle","path":"a.txt"}`},
		{"write_file", `{"path":"b.txt","content":"b"}`},
	} {
		r := await(t, goInvoke(s, t.Context(), call.tool, call.args, &porttest.Recorder{Allow: true}), call.tool+" beside a search")
		if r.err != nil || !r.env.Success {
			t.Errorf("%s beside a search in flight: %+v, %v", call.tool, r.env, r.err)
		}
	}
	release()
	if r := await(t, done, "the held search"); r.err != nil || !r.env.Success {
		t.Errorf("held search: %+v, %v", r.env, r.err)
	}
}

// TestBusyRules runs a scripted turn and checks the refusals around it.
func TestBusyRules(t *testing.T) {
	s, _ := newSession(t, manyFiles("many", 2*workspace.ProgressEvery))
	started := make(chan string)
	finish := make(chan struct{})
	workspace.SetTurn(s, func(ctx context.Context, prompt string, _ ports.Caller) (string, error) {
		started <- prompt
		<-finish
		return "re: " + prompt, nil
	})
	submit := func(prompt string) <-chan result {
		ch := make(chan result, 1)
		go func() {
			res, err := s.Submit(t.Context(), prompt, ports.ClosedCaller{})
			ch <- result{domain.Envelope{Success: err == nil, Result: json.RawMessage(`"` + res.Response + `"`)}, err}
		}()
		return ch
	}

	// A call in flight when the turn starts finishes beside it.
	search, release := heldSearch(t, s)
	turn := submit("one")
	if got := await(t, started, "the first turn to start"); got != "one" {
		t.Fatalf("turn started with %q", got)
	}

	_, err := s.InvokeTool(t.Context(), "read_file", json.RawMessage(`{"path":"many/f0000.txt"}`), ports.ClosedCaller{})
	if !errors.Is(err, ports.ErrRefused) || !errors.Is(err, workspace.ErrBusy) {
		t.Errorf("tool call during a turn: %v, want ErrBusy", err)
	}
	if _, err := s.Submit(t.Context(), "two", ports.ClosedCaller{}); !errors.Is(err, ports.ErrRefused) || !errors.Is(err, workspace.ErrBusy) {
		t.Errorf("second submission during a turn: %v, want ErrBusy", err)
	}
	if got := domain.ClientMessage(workspace.ErrBusy); got != "session is busy: a turn is running; retry when it finishes" {
		t.Errorf("busy message = %q", got)
	}

	release()
	if r := await(t, search, "the search that started before the turn"); r.err != nil || !r.env.Success {
		t.Errorf("search beside the turn: %+v, %v", r.env, r.err)
	}
	finish <- struct{}{}
	if r := await(t, turn, "the first turn"); r.err != nil || string(r.env.Result) != `"re: one"` {
		t.Errorf("first turn: %s, %v", r.env.Result, r.err)
	}

	// Served again once the turn has ended.
	if env := invoke(t, s, "read_file", `{"path":"many/f0000.txt"}`, nil); !env.Success {
		t.Errorf("tool call after the turn: %+v", env)
	}
	turn = submit("three")
	await(t, started, "the next turn to start")
	finish <- struct{}{}
	if r := await(t, turn, "the next turn"); r.err != nil || string(r.env.Result) != `"re: three"` {
		t.Errorf("next turn: %s, %v", r.env.Result, r.err)
	}
}

func TestSubmitOutcomes(t *testing.T) {
	s, _ := newSession(t, nil)
	modelErr := errors.New("the model failed")
	var turns int
	workspace.SetTurn(s, func(context.Context, string, ports.Caller) (string, error) {
		turns++
		return "", modelErr
	})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Submit(ctx, "p", nil); !errors.Is(err, ports.ErrRefused) || turns != 0 {
		t.Errorf("cancelled submission: %v after %d turns; want a refusal and no turn", err, turns)
	}
	if _, err := s.Submit(t.Context(), "p", nil); err != modelErr || errors.Is(err, ports.ErrRefused) {
		t.Errorf("failing turn: %v; want the turn's own error, not a refusal", err)
	}
	s.Close()
	if _, err := s.Submit(t.Context(), "p", nil); !errors.Is(err, workspace.ErrClosed) {
		t.Errorf("submission after Close: %v, want ErrClosed", err)
	}
}
