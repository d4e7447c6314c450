package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/enginetest"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
)

const askingMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`

// TestExchangeLeftByItsClientIsNeverShuttingDown: with asking on, a
// 2026-07-28 tools/call declaring elicitation whose request context ends
// (the HTTP client went away) ends its tool's context with the client's
// cause, waits for the call's goroutine, and answers nothing — the kind is
// Cancelled, never "server is shutting down" (docs/SPEC.md §3, §6).
func TestExchangeLeftByItsClientIsNeverShuttingDown(t *testing.T) {
	leakcheck.Check(t) // first: its cleanup runs after the Shutdown
	s := fake.NewHeld()
	started := s.Started()
	eng := enginetest.New(t, s, engine.Options{AskClient: true}, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{},` + askingMeta + `}}`
	replies := make(chan engine.Reply, 1)
	go func() {
		replies <- eng.Exchange(ctx, []byte(body), engine.ExchangeOptions{Headers: engine.Headers{
			ProtocolVersion: "2026-07-28", HasProtocolVersion: true, Method: "tools/call", HasMethod: true, Name: "slow", HasName: true,
		}})
	}()
	<-started
	cancel()
	select {
	case cause := <-s.CtxEnded():
		if errors.Is(cause, engine.ErrShuttingDown) {
			t.Errorf("the call ended as shutting down (%v)", cause)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the tool's context did not end when the request's did")
	}
	select {
	case r := <-replies:
		t.Fatalf("Exchange returned %v %s before the call's goroutine did", r.Kind, r.Body)
	case <-time.After(20 * time.Millisecond):
	}
	s.Let()
	r := <-replies
	if r.Kind != engine.Cancelled || len(r.Body) != 0 {
		t.Fatalf("Exchange = %v %s, want Cancelled and nothing to write", r.Kind, r.Body)
	}
}
