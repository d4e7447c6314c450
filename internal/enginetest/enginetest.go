// Package enginetest holds what the carriers' tests repeat around the
// protocol engine: an engine shut down when the test ends with its call
// index checked empty, and the wait for a cancelled call's tool to see its
// context end (docs/SPEC.md §6). It is for tests and the test kits only;
// no production package imports it.
package enginetest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/ports"
)

// New builds the engine for s and registers a cleanup that shuts it down
// (Shutdown), failing t unless it returns within timeout with the call
// index empty. Called before a carrier registers its own Stop, the
// Shutdown runs after that Stop: cleanups run last-registered first.
func New(t testing.TB, s ports.Session, opts engine.Options, timeout time.Duration) *engine.Engine {
	t.Helper()
	eng, err := engine.New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := Shutdown(ctx, eng); err != nil {
			t.Error(err)
		}
	})
	return eng
}

// Shutdown shuts eng down, then checks what the call lifecycle promises
// once every goroutine of the engine has returned: its call index is
// empty (a zero engine.Stats) — no parked round, no task, no request name
// left behind by a path that forgot to drop it (docs/ARCHITECTURE.md "A
// call's life"). The transcript kits, the carriers' hostile tests and the
// engine's own end every engine through it.
func Shutdown(ctx context.Context, eng *engine.Engine) error {
	if err := eng.Shutdown(ctx); err != nil {
		return fmt.Errorf("engine Shutdown: %w", err)
	}
	if s := eng.Stats(); s != (engine.Stats{}) {
		return fmt.Errorf("engine Shutdown: the call index still holds %+v", s)
	}
	return nil
}

// AwaitCtxEnd waits for the held tool's context to end and checks the call
// did not end as shutting down: what cancelled it (cancelledBy, e.g. "the
// client left" or "notifications/cancelled") did. The tool is held, so
// nothing but the cancellation can end its context; guard only keeps a
// broken cancellation from hanging the test (how soon is a benchmark's
// question, never a test's on a shared machine).
func AwaitCtxEnd(t testing.TB, s *fake.Held, guard time.Duration, cancelledBy string) {
	t.Helper()
	select {
	case cause := <-s.CtxEnded():
		if errors.Is(cause, engine.ErrShuttingDown) {
			t.Errorf("the call ended as shutting down (%v); %s", cause, cancelledBy)
		}
	case <-time.After(guard):
		t.Fatalf("the tool's context did not end within %v after %s", guard, cancelledBy)
	}
}

// SlotHeldUntilReturned checks, on an HTTP host with one in-flight slot,
// that a cancelled call whose held tool has not returned still counts:
// status (a fresh request's) is 503 busy times in a row. Then it lets the
// tool return and checks the slot is free again within guard: status is
// 200, 503 until then and nothing else.
func SlotHeldUntilReturned(t testing.TB, s *fake.Held, status func() int, busy int, guard time.Duration) {
	t.Helper()
	for range busy {
		if got := status(); got != http.StatusServiceUnavailable {
			t.Fatalf("with the cancelled call's goroutine running: status %d, want 503", got)
		}
	}
	s.Let()
	<-s.Returned()
	deadline := time.Now().Add(guard)
	for {
		switch got := status(); {
		case got == http.StatusOK:
			return
		case got != http.StatusServiceUnavailable:
			t.Fatalf("after the call returned: status %d, want 200 (or 503 until then)", got)
		case time.Now().After(deadline):
			t.Fatalf("still 503 %v after the call returned, want 200", guard)
		}
	}
}
