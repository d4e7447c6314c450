package workspace_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/waitfor"
	"github.com/agentmcp/agentmcp/ports"
	"github.com/agentmcp/agentmcp/ports/porttest"
)

// patience bounds a wait before the test fails; it never paces a test.
const patience = 10 * time.Second

// await receives from ch within patience.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	return waitfor.Value(t, ch, patience, what)
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
