package httpremote_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/engine"
	"github.com/agentmcp/agentmcp/adapters/httpremote"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
)

// cancelBound is how soon a cancelled call's tool must see its context end.
const cancelBound = 100 * time.Millisecond

// TestDisconnectUnderAskingEndsTheCall: with asking on, a 2026-07-28
// tools/call declaring elicitation runs on a context of its own. Its client
// going away while the request waits for it ends the tool's context at
// once (not as shutting down); the call keeps its in-flight slot until its
// goroutine has returned (503 meanwhile, with one slot), then the slot is
// free (docs/SPEC.md §3, §5.3, §6).
func TestDisconnectUnderAskingEndsTheCall(t *testing.T) {
	leakcheck.Check(t)
	held := fake.NewHeld()
	e := start(t, config{askClient: true, held: held, limits: httpremote.Limits{MaxInFlight: 1}})
	started := held.Started()
	headers := []string{"Authorization", "Bearer " + validToken, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "slow"}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + modernMeta + `,"name":"slow","arguments":{}}}`
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	left := make(chan error, 1)
	go func() {
		resp, err := e.client.Do(e.request(ctx, "POST", e.res.path, body, headers...))
		if err == nil {
			resp.Body.Close()
		}
		left <- err
	}()
	<-started
	cancel()
	since := time.Now()
	select {
	case cause := <-held.CtxEnded():
		if took := time.Since(since); took > cancelBound {
			t.Errorf("the tool's context ended %v after the client left, want ≤ %v", took.Round(time.Millisecond), cancelBound)
		}
		if errors.Is(cause, engine.ErrShuttingDown) {
			t.Errorf("the call ended as shutting down (%v); its client left", cause)
		}
	case <-time.After(guard):
		t.Fatalf("the tool's context did not end within %v of the client leaving", guard)
	}
	if err := <-left; err == nil {
		t.Fatal("the cancelled request got an answer")
	}
	for range 3 {
		if resp, _ := e.post(t, validToken); resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("with the cancelled call's goroutine running: status %d, want 503", resp.StatusCode)
		}
	}
	held.Let()
	<-held.Returned()
	deadline := time.Now().Add(guard)
	for {
		resp, _ := e.post(t, validToken)
		if resp.StatusCode == http.StatusOK {
			break
		}
		if resp.StatusCode != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("after the call returned: status %d, want 200", resp.StatusCode)
		}
	}
}
