package httploopback_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/httploopback"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
	"github.com/agentmcp/agentmcp/internal/load"
)

// TestLoad: 64 clients send 10⁵ tools/call to the loopback host, 5 % of
// them with a wrong token, while three clients misbehave beside them: one
// holds idle connections and reconnects as each is closed, one sends
// batches with large answers and never reads, one abandons input-required
// rounds and calls. Every answer is checked: no valid call refused, none
// answered wrongly, every wrong token refused; afterwards no goroutine is
// left and the live heap is back within 10 % (docs/SPEC.md §5.2, §8).
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	goroutines := leakcheck.Snapshot()
	const stall = 300 * time.Millisecond
	eng, err := engine.New(load.Session{}, engine.Options{AskClient: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httploopback.NewWithLimits(eng, httploopback.Options{},
		httploopback.Limits{MaxInFlight: 128, MaxConns: 128, WriteStallTimeout: stall})
	if err != nil {
		t.Fatal(err)
	}
	err = h.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ep := h.Endpoint()
	lh := load.HTTPHost{URL: ep.URL, Token: ep.Token}
	lh.Addr = strings.TrimSuffix(strings.TrimPrefix(ep.URL, "http://"), "/mcp")
	lh.Host = lh.Addr
	wrongTokens := []string{strings.Repeat("0", 64), ep.Token[:63] + "x", "", ep.Token + "0"}
	clients, idle := load.HTTPClients(load.Clients)
	call := func(ctx context.Context, client, seq int) (load.Outcome, string) {
		token, valid := ep.Token, true
		if seq%20 == 0 {
			token, valid = wrongTokens[seq/20%len(wrongTokens)], false
		}
		text := fmt.Sprintf("c%d-s%d", client, seq)
		modern := seq%2 == 1
		status, b, err := lh.Post(ctx, clients[client], token, load.EchoCall(seq, text, modern), modern, "echo")
		switch {
		case err != nil:
			return load.Wrong, err.Error()
		case !valid && status == 401:
			return load.OK, ""
		case !valid:
			return load.Wrong, fmt.Sprintf("a wrong token: status %d", status)
		case status == 503:
			return load.Refused, "status 503"
		}
		return load.JudgeHTTPEcho(status, b, seq, text)
	}
	// 10⁵ calls; a tenth under the race detector, which slows each several
	// times, so the suite stays quick.
	total := load.Requests(100_000, 10_000)
	rep := load.Scenario{Name: "loopback host", Clients: load.Clients, Total: total, Call: call,
		Misbehave: lh.Misbehave(t, stall), Idle: idle}.Run(t)
	load.Stop(t, load.Stopper{What: "Stop", Stop: h.Stop}, load.Stopper{What: "engine Shutdown", Stop: eng.Shutdown})
	goroutines.Verify(t)
	rep.Check(t, "loopback host", total)
}
