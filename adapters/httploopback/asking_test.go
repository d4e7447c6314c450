package httploopback_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/httploopback"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/enginetest"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/hostile"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
	"github.com/agentmcp/agentmcp/ports"
)

// askMeta is a 2026-07-28 request's _meta declaring form elicitation, so
// its calls run under input-required rounds when asking is on.
const askMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`

func heldCall(id, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"slow","arguments":` + args + `,` + askMeta + `}}`
}

// startAsking serves s on a host whose engine asks its clients.
func startAsking(t *testing.T, s ports.Session, l httploopback.Limits) *env {
	t.Helper()
	return startEngine(t, s, engine.Options{Name: "t", Version: "1", AskClient: true}, l)
}

// status returns what posts ping and reports the answer's status.
func (e *env) status(t *testing.T) func() int {
	return func() int {
		resp, _ := e.post(t, ping)
		return resp.StatusCode
	}
}

// TestDisconnectUnderAskingEndsTheCall: with asking on, a 2026-07-28
// tools/call declaring elicitation runs on a context of its own (it may
// be parked in a round). Its client going away while the request waits for
// it ends the tool's context at once; the call keeps its in-flight slot
// until its goroutine has returned (503 meanwhile, with one slot), then
// the slot is free (docs/SPEC.md §3, §5.2, §6).
func TestDisconnectUnderAskingEndsTheCall(t *testing.T) {
	leakcheck.Check(t)
	s := fake.NewHeld()
	started := s.Started()
	e := startAsking(t, s, httploopback.Limits{MaxInFlight: 1})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	left := hostile.Abandon(e.client, e.request(ctx, heldCall("1", `{}`), modernHeaders("tools/call", "slow")...))
	<-started
	cancel()
	enginetest.AwaitCtxEnd(t, s, guard, "the client left")
	if err := <-left; err == nil {
		t.Fatal("the cancelled request got an answer")
	}
	// Held by a tool slow to return, the call still counts.
	enginetest.SlotHeldUntilReturned(t, s, e.status(t), 3, guard)
}

// TestDisconnectOfARetryEndsTheCall: the same when the request that goes
// away is the retry that answered the call's prompt: the resumed call ends
// with it.
func TestDisconnectOfARetryEndsTheCall(t *testing.T) {
	leakcheck.Check(t)
	s := fake.NewHeld()
	started := s.Started()
	e := startAsking(t, s, httploopback.Limits{MaxInFlight: 1})
	headers := modernHeaders("tools/call", "slow")
	resp, b := e.post(t, heldCall("1", `{"ask":true}`), headers...)
	<-started
	r := decode(t, b)
	var first struct{ ResultType, RequestState string }
	if resp.StatusCode != 200 || r.Error != nil || json.Unmarshal(r.Result, &first) != nil || first.ResultType != "input_required" {
		t.Fatalf("first call: %d %s", resp.StatusCode, b)
	}
	retry := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{"ask":true},` +
		`"inputResponses":{"prompt":{"action":"accept","content":{"decision":"allow_once"}}},"requestState":"` + first.RequestState + `",` + askMeta + `}}`
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	left := hostile.Abandon(e.client, e.request(ctx, retry, headers...))
	<-s.Asked() // the retry's answer reached the tool, which now waits
	cancel()
	enginetest.AwaitCtxEnd(t, s, guard, "the client left")
	if err := <-left; err == nil {
		t.Fatal("the cancelled retry got an answer")
	}
	enginetest.SlotHeldUntilReturned(t, s, e.status(t), 1, guard)
}
