package httploopback_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/engine"
	"github.com/agentmcp/agentmcp/adapters/httploopback"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
	"github.com/agentmcp/agentmcp/ports"
)

// cancelBound is how soon a cancelled call's tool must see its context end.
const cancelBound = 100 * time.Millisecond

// askMeta is a 2026-07-28 request's _meta declaring form elicitation, so
// its calls run under input-required rounds when asking is on.
const askMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`

func heldCall(id, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"slow","arguments":` + args + `,` + askMeta + `}}`
}

// startAsking serves s on a host whose engine asks its clients.
func startAsking(t *testing.T, s ports.Session, l httploopback.Limits) *env {
	t.Helper()
	h, err := httploopback.NewWithLimits(newEngine(t, s, engine.Options{Name: "t", Version: "1", AskClient: true}), httploopback.Options{}, l)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := h.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	e := &env{host: h, ep: ep, addr: strings.TrimSuffix(strings.TrimPrefix(ep.URL, "http://"), "/mcp"), client: &http.Client{Transport: tr}}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		if err := h.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return e
}

// awaitCtxEnd waits for the held tool's context to end, at most
// cancelBound after since (generously bounded by guard), and checks the
// call ended because its client left, not as shutting down.
func awaitCtxEnd(t *testing.T, s *fake.Held, since time.Time) {
	t.Helper()
	select {
	case cause := <-s.CtxEnded():
		if took := time.Since(since); took > cancelBound {
			t.Errorf("the tool's context ended %v after the client left, want ≤ %v", took.Round(time.Millisecond), cancelBound)
		}
		if errors.Is(cause, engine.ErrShuttingDown) {
			t.Errorf("the call ended as shutting down (%v); its client left", cause)
		}
	case <-time.After(guard):
		t.Fatalf("the tool's context did not end within %v of the client leaving", guard)
	}
}

// statusUntil posts ping until it gets want, within guard; it fails the
// test on any status but busy (503) and want.
func (e *env) statusUntil(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for {
		resp, _ := e.post(t, ping)
		switch {
		case resp.StatusCode == want:
			return
		case resp.StatusCode != http.StatusServiceUnavailable:
			t.Fatalf("status %d, want %d (or 503 until then)", resp.StatusCode, want)
		case time.Now().After(deadline):
			t.Fatalf("still 503 %v later, want %d", guard, want)
		}
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
	left := make(chan error, 1)
	go func() {
		resp, err := e.client.Do(e.request(ctx, heldCall("1", `{}`), modernHeaders("tools/call", "slow")...))
		if err == nil {
			resp.Body.Close()
		}
		left <- err
	}()
	<-started
	cancel()
	awaitCtxEnd(t, s, time.Now())
	if err := <-left; err == nil {
		t.Fatal("the cancelled request got an answer")
	}
	// Held by a tool slow to return, the call still counts.
	for range 3 {
		if resp, _ := e.post(t, ping); resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("with the cancelled call's goroutine running: status %d, want 503", resp.StatusCode)
		}
	}
	s.Let()
	<-s.Returned()
	e.statusUntil(t, http.StatusOK)
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
	left := make(chan error, 1)
	go func() {
		resp, err := e.client.Do(e.request(ctx, retry, headers...))
		if err == nil {
			resp.Body.Close()
		}
		left <- err
	}()
	<-s.Asked() // the retry's answer reached the tool, which now waits
	cancel()
	awaitCtxEnd(t, s, time.Now())
	if err := <-left; err == nil {
		t.Fatal("the cancelled retry got an answer")
	}
	if resp, _ := e.post(t, ping); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("with the cancelled call's goroutine running: status %d, want 503", resp.StatusCode)
	}
	s.Let()
	<-s.Returned()
	e.statusUntil(t, http.StatusOK)
}
