package httpremote_test

import (
	"context"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/httpremote"
	"github.com/agentmcp/agentmcp/internal/enginetest"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/hostile"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
)

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
	left := hostile.Abandon(e.client, e.request(ctx, "POST", e.res.path, body, headers...))
	<-started
	cancel()
	enginetest.AwaitCtxEnd(t, held, guard, "the client left")
	if err := <-left; err == nil {
		t.Fatal("the cancelled request got an answer")
	}
	enginetest.SlotHeldUntilReturned(t, held, func() int {
		resp, _ := e.post(t, validToken)
		return resp.StatusCode
	}, 3, guard)
}
