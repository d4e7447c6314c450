package engine_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/ports"
)

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`
const modernNoElicit = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func writeCall(id, extra string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + modernMeta + `,"name":"write","arguments":{"text":"x"}` + extra + `}}`
}

func result(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	r, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("no result in %v", m)
	}
	return r
}

func errorCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// state returns the requestState of an input_required result.
func state(t *testing.T, m map[string]any) string {
	t.Helper()
	r := result(t, m)
	if r["resultType"] != "input_required" {
		t.Fatalf("resultType = %v, want input_required in %v", r["resultType"], m)
	}
	reqs := r["inputRequests"].(map[string]any)
	p := reqs["prompt"].(map[string]any)
	if p["method"] != "elicitation/create" || len(reqs) != 1 {
		t.Fatalf("inputRequests = %v", reqs)
	}
	s, _ := r["requestState"].(string)
	if len(s) != 43 {
		t.Fatalf("requestState %q is not 32 bytes of base64url", s)
	}
	return s
}

func allow(s string) string {
	return `,"requestState":"` + s + `","inputResponses":{"prompt":{"action":"accept","content":{"decision":"allow_once"}}}`
}

func envelopeOf(t *testing.T, m map[string]any) string {
	t.Helper()
	r := result(t, m)
	if r["resultType"] != "complete" {
		t.Fatalf("resultType = %v in %v", r["resultType"], m)
	}
	return r["content"].([]any)[0].(map[string]any)["text"].(string)
}

// wantDenied reads c's next message and fails unless it is a completed
// call whose envelope carries the permission error: the prompt settled
// closed. what names the case in the failure.
func wantDenied(t *testing.T, c *client, what string) {
	t.Helper()
	if got := envelopeOf(t, c.recv()); !strings.Contains(got, "Permission denied") {
		t.Errorf("%s: %s, want the prompt settled closed", what, got)
	}
}

func askEngine(t *testing.T, opts engine.Options) (*engine.Engine, *fake.Session) {
	s := fake.New()
	opts.AskClient = true
	e, err := engine.New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(t, e) })
	return e, s
}

func TestRoundsAllowOnce(t *testing.T) {
	e, _ := askEngine(t, engine.Options{})
	c := newClient(t, e)
	c.send(writeCall("1", ""))
	st := state(t, c.recv())
	c.send(writeCall("2", allow(st)))
	if got := envelopeOf(t, c.recv()); got != `{"success":true,"toolName":"write"}` {
		t.Errorf("after allow_once: %s", got)
	}
	// Single use: the same requestState again is unknown, and nothing resumes.
	c.send(writeCall("3", allow(st)))
	if m := c.recv(); errorCode(m) != -32602 || m["id"] != 3.0 {
		t.Errorf("reused requestState: %v, want -32602", m)
	}
	// A second write needs a second approval.
	c.send(writeCall("4", ""))
	state(t, c.recv())
}

func TestRoundsDenials(t *testing.T) {
	for _, answer := range []string{
		`{"action":"accept","content":{"decision":"deny"}}`,
		`{"action":"decline"}`,
		`{"action":"cancel"}`,
		`{"action":"accept","content":{"decision":"always"}}`,
		`"allow_once"`,
	} {
		e, _ := askEngine(t, engine.Options{})
		c := newClient(t, e)
		c.send(writeCall("1", ""))
		st := state(t, c.recv())
		c.send(writeCall("2", `,"requestState":"`+st+`","inputResponses":{"prompt":`+answer+`}`))
		wantDenied(t, c, "answer "+answer)
	}
}

func TestRoundsChecks(t *testing.T) {
	e, _ := askEngine(t, engine.Options{})
	c := newClient(t, e)
	c.send(writeCall("1", ""))
	st := state(t, c.recv())

	other := newClient(t, e) // another stream is another principal
	other.send(writeCall("2", allow(st)))
	if m := other.recv(); errorCode(m) != -32602 {
		t.Errorf("token presented by another principal: %v", m)
	}
	wrongArgs := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{` + modernMeta + `,"name":"write","arguments":{"text":"y"}` + allow(st) + `}}`
	c.send(wrongArgs)
	if m := c.recv(); errorCode(m) != -32602 {
		t.Errorf("token for other arguments: %v", m)
	}
	wrongTool := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{` + modernMeta + `,"name":"echo","arguments":{"text":"x"}` + allow(st) + `}}`
	c.send(wrongTool)
	if m := c.recv(); errorCode(m) != -32602 {
		t.Errorf("token for another tool: %v", m)
	}
	c.send(writeCall("5", allow(tamper(st))))
	if m := c.recv(); errorCode(m) != -32602 {
		t.Errorf("tampered token: %v", m)
	}
	for _, bad := range []string{`,"requestState":7`, `,"requestState":"` + st + `","inputResponses":[]`} {
		c.send(writeCall("6", bad))
		if m := c.recv(); errorCode(m) != -32602 {
			t.Errorf("wrong JSON type %s: %v", bad, m)
		}
	}
	// The failed checks did not use the round up; the same arguments in
	// another key order and spacing still match (the digest of their normal form).
	retry := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{` + modernMeta + `,"name":"write","arguments":{ "text" : "x" }` + allow(st) + `}}`
	c.send(retry)
	if got := envelopeOf(t, c.recv()); got != `{"success":true,"toolName":"write"}` {
		t.Errorf("valid retry after failed checks: %s", got)
	}
}

func TestRoundsMissingAnswerAsksAgainAndExtraKeysAreIgnored(t *testing.T) {
	e, _ := askEngine(t, engine.Options{})
	c := newClient(t, e)
	c.send(writeCall("1", ""))
	st := state(t, c.recv())
	c.send(writeCall("2", `,"requestState":"`+st+`","inputResponses":{"other":{"action":"accept"}}`))
	st2 := state(t, c.recv())
	if st2 == st {
		t.Fatal("asked again under the same token")
	}
	c.send(writeCall("3", `,"requestState":"`+st2+`","inputResponses":{"prompt":{"action":"accept","content":{"decision":"allow_once"}},"extra":{"x":1}}`))
	if got := envelopeOf(t, c.recv()); got != `{"success":true,"toolName":"write"}` {
		t.Errorf("with an extra key: %s", got)
	}
}

func TestRoundsNeedTheElicitationCapability(t *testing.T) {
	e, _ := askEngine(t, engine.Options{})
	c := newClient(t, e)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + modernNoElicit + `,"name":"write","arguments":{"text":"x"}}}`)
	wantDenied(t, c, "client without elicitation")
	url := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"url":{}}}}`
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + url + `,"name":"write","arguments":{"text":"x"}}}`)
	wantDenied(t, c, "client with URL elicitation only")
}

func TestAskClientOffSettlesClosed(t *testing.T) {
	e, _ := engine.New(fake.New(), engine.Options{})
	c := newClient(t, e)
	c.send(writeCall("1", ""))
	wantDenied(t, c, "AskClient off")
}

func TestRoundsExpireAfterTheirLifetime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s := askEngine(t, engine.Options{})
		c := newClient(t, e)
		c.send(writeCall("1", ""))
		early := state(t, c.recv())
		c.send(writeCall("2", ""))
		late := state(t, c.recv())
		time.Sleep(30*time.Minute - time.Second)
		c.send(writeCall("3", allow(early)))
		if got := envelopeOf(t, c.recv()); got != `{"success":true,"toolName":"write"}` {
			t.Errorf("retry at 29:59: %s, want the call to resume", got)
		}
		time.Sleep(time.Second)
		synctest.Wait() // the expiry settled the other prompt closed and its call ended
		c.send(writeCall("4", allow(late)))
		if m := c.recv(); errorCode(m) != -32602 {
			t.Errorf("retry at 30:00: %v, want -32602", m)
		}
		if calls := s.Calls(); len(calls) != 2 {
			t.Errorf("session calls = %v, want 2", calls)
		}
	})
}

func TestRoundLifetimeIsConfigurableAndCapped(t *testing.T) {
	for _, tc := range []struct {
		lifetime, lives time.Duration
	}{
		{time.Minute, time.Minute},
		{2 * time.Hour, 30 * time.Minute}, // capped at docs/SPEC.md §6's 30 minutes
	} {
		synctest.Test(t, func(t *testing.T) {
			e, _ := askEngine(t, engine.Options{RoundLifetime: tc.lifetime})
			c := newClient(t, e)
			c.send(writeCall("1", ""))
			early := state(t, c.recv())
			c.send(writeCall("2", ""))
			late := state(t, c.recv())
			time.Sleep(tc.lives - time.Second)
			c.send(writeCall("3", allow(early)))
			if got := envelopeOf(t, c.recv()); got != `{"success":true,"toolName":"write"}` {
				t.Errorf("lifetime %v: retry 1 s before %v: %s, want the call to resume", tc.lifetime, tc.lives, got)
			}
			time.Sleep(time.Second)
			synctest.Wait()
			c.send(writeCall("4", allow(late)))
			if m := c.recv(); errorCode(m) != -32602 {
				t.Errorf("lifetime %v: retry at %v: %v, want -32602", tc.lifetime, tc.lives, m)
			}
		})
	}
}

func TestShutdownSettlesParkedRounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := askEngine(t, engine.Options{})
		c := newClient(t, e)
		for i := range 3 {
			c.send(writeCall(string(rune('1'+i)), ""))
			state(t, c.recv())
		}
		if err := e.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // every parked call finished: no goroutine is left blocked
	})
}

func TestRoundBounds(t *testing.T) {
	e, s := askEngine(t, engine.Options{})
	ended := s.Ended()
	c := newClient(t, e)
	var states []string
	for i := range 4 {
		c.send(writeCall(string(rune('1'+i)), ""))
		states = append(states, state(t, c.recv()))
	}
	// A 5th parked round for the same principal makes room by ending that
	// principal's oldest (docs/SPEC.md §6): its call ends (the session sees
	// it return) and its requestState resumes nothing.
	c.send(writeCall("9", ""))
	fifth := state(t, c.recv())
	waitCalls(t, ended, "write", 1)
	c.send(writeCall("10", allow(states[0])))
	if m := c.recv(); errorCode(m) != -32602 {
		t.Errorf("retry of the evicted round: %v, want -32602", m)
	}
	for i, st := range append(states[1:], fifth) {
		c.send(writeCall(strconv.Itoa(20+i), allow(st)))
		if got := envelopeOf(t, c.recv()); got != `{"success":true,"toolName":"write"}` {
			t.Errorf("round %d after the eviction: %s, want it resumed", i+2, got)
		}
	}
	// Other principals share the host bound of 64; one principal can only
	// evict its own, so at the host bound a new prompt settles closed.
	for range 4 {
		c.send(writeCall("1", ""))
		state(t, c.recv())
	}
	parked := 4
	for range 15 {
		o := newClient(t, e)
		for range 4 {
			o.send(writeCall("1", ""))
			m := o.recv()
			if r := result(t, m); r["resultType"] == "input_required" {
				parked++
			}
		}
	}
	if parked != 64 {
		t.Errorf("parked %d rounds, want the host bound 64", parked)
	}
	o := newClient(t, e)
	o.send(writeCall("1", ""))
	wantDenied(t, o, "a new principal at the host bound")
}

func TestCancelledRetryAbandonsTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := askEngine(t, engine.Options{})
		c := newClient(t, e)
		c.send(writeCall("1", ""))
		st := state(t, c.recv())
		// The retry answers, but the tool asks no second question here; to
		// test a cancelled retry, resume with a missing answer so the call
		// is re-parked, then cancel the request that parked it (stdio: a
		// notifications/cancelled naming the chain's latest id).
		c.send(writeCall("2", `,"requestState":"`+st+`"`))
		st2 := state(t, c.recv())
		c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
		synctest.Wait()
		c.send(writeCall("3", allow(st2)))
		if m := c.recv(); errorCode(m) != -32602 {
			t.Errorf("retry after the chain was cancelled: %v, want -32602", m)
		}
	})
}

// legacy elicitation over a stream.
func legacyClient(t *testing.T, e *engine.Engine, version, caps string) *client {
	c := newClient(t, e)
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":` + caps + `,"clientInfo":{"name":"c","version":"1"}}}`)
	c.recv()
	return c
}

const legacyWrite = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":{"text":"x"}}}`

func TestLegacyElicitation(t *testing.T) {
	cases := []struct {
		name, answer string
		allowed      bool
	}{
		{"accepted", `{"jsonrpc":"2.0","id":"srv-1","result":{"action":"accept","content":{"decision":"allow_once"}}}`, true},
		{"declined", `{"jsonrpc":"2.0","id":"srv-1","result":{"action":"decline"}}`, false},
		{"cancelled", `{"jsonrpc":"2.0","id":"srv-1","result":{"action":"cancel"}}`, false},
		{"malformed", `{"jsonrpc":"2.0","id":"srv-1","result":{"action":"maybe"}}`, false},
		{"client error", `{"jsonrpc":"2.0","id":"srv-1","error":{"code":-32603,"message":"no UI"}}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := askEngine(t, engine.Options{})
			c := legacyClient(t, e, "2025-11-25", `{"elicitation":{}}`)
			c.send(legacyWrite)
			req := c.recv()
			if req["method"] != "elicitation/create" || req["id"] != "srv-1" {
				t.Fatalf("want an elicitation/create, got %v", req)
			}
			if p := req["params"].(map[string]any); p["mode"] != "form" {
				t.Errorf("2025-11-25 elicitation without mode form: %v", p)
			}
			c.send(`{"jsonrpc":"2.0","id":"srv-99","result":{"action":"accept","content":{"decision":"allow_once"}}}`) // unknown id: ignored
			c.send(tc.answer)
			m := c.recv()
			text := result(t, m)["content"].([]any)[0].(map[string]any)["text"].(string)
			if got := strings.Contains(text, `"success":true`); got != tc.allowed {
				t.Errorf("%s: %s", tc.name, text)
			}
		})
	}
}

func TestLegacyElicitationWhoCanBeAsked(t *testing.T) {
	for _, tc := range []struct{ version, caps string }{
		{"2025-03-26", `{"elicitation":{}}`}, // negotiated before elicitation existed
		{"2025-11-25", `{}`},                 // no capability
		{"2025-11-25", `{"elicitation":{"url":{}}}`},
	} {
		e, _ := askEngine(t, engine.Options{})
		c := legacyClient(t, e, tc.version, tc.caps)
		c.send(legacyWrite)
		m := c.recv()
		if m["method"] != nil || !strings.Contains(result(t, m)["content"].([]any)[0].(map[string]any)["text"].(string), "Permission denied") {
			t.Errorf("%s %s: %v, want the prompt settled closed", tc.version, tc.caps, m)
		}
	}
	// 2025-06-18 omits mode.
	e, _ := askEngine(t, engine.Options{})
	c := legacyClient(t, e, "2025-06-18", `{"elicitation":{}}`)
	c.send(legacyWrite)
	req := c.recv()
	if _, has := req["params"].(map[string]any)["mode"]; has {
		t.Errorf("2025-06-18 elicitation carries mode: %v", req)
	}
}

func TestLegacyElicitationEndsWithTheCall(t *testing.T) {
	e, _ := askEngine(t, engine.Options{})
	c := legacyClient(t, e, "2025-11-25", `{"elicitation":{"form":{}}}`)
	c.send(legacyWrite)
	c.recv() // elicitation/create
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	m := c.recv()
	p, _ := m["params"].(map[string]any)
	if m["method"] != "notifications/cancelled" || p["requestId"] != "srv-1" {
		t.Errorf("after the call was cancelled: %v, want notifications/cancelled for srv-1", m)
	}
	select {
	case b := <-c.out:
		t.Errorf("a message for the cancelled call: %s", b)
	default:
	}
}

func TestLegacyElicitationTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := askEngine(t, engine.Options{RoundLifetime: 2 * time.Minute})
		c := legacyClient(t, e, "2025-11-25", `{"elicitation":{}}`)
		c.send(legacyWrite)
		c.recv()
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if m := c.recv(); m["method"] != "notifications/cancelled" {
			t.Errorf("after the lifetime: %v", m)
		}
		if m := c.recv(); !strings.Contains(result(t, m)["content"].([]any)[0].(map[string]any)["text"].(string), "Permission denied") {
			t.Errorf("call result after timeout: %v", m)
		}
	})
}

func TestStopSettlesAPendingElicitation(t *testing.T) {
	// Stop with a legacy elicitation pending settles it and tells the client.
	e, _ := askEngine(t, engine.Options{})
	c := legacyClient(t, e, "2025-11-25", `{"elicitation":{}}`)
	c.send(legacyWrite)
	c.recv()
	if err := c.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if m := c.recv(); m["method"] != "notifications/cancelled" {
		t.Errorf("at Stop: %v", m)
	}
}

// impatient is a session whose write tool gives up on its permission prompt
// when released, as a session with its own timeout would, and then keeps
// running until the engine shuts down.
type impatient struct {
	*fake.Session
	giveUp chan struct{}
	asked  chan struct{}
}

func (s *impatient) InvokeTool(ctx context.Context, name string, args json.RawMessage, caller ports.Caller) (domain.Envelope, error) {
	if name != "write" {
		return s.Session.InvokeTool(ctx, name, args, caller)
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.giveUp:
			cancel()
		case <-pctx.Done():
		}
	}()
	s.asked <- struct{}{}
	if caller.RequestPermission(pctx, domain.PermissionPrompt{Tool: name}) == domain.AllowOnce {
		return domain.Envelope{Success: true, ToolName: name}, nil
	}
	<-ctx.Done() // the call goes on (until Shutdown) without its prompt
	return domain.Envelope{Success: false, ToolName: name, Error: "Permission denied"}, nil
}

// TestAbandonedPromptKeepsItsPlace: a round whose prompt the session stopped
// waiting for still stands for its call (until the call's deadline), so it
// counts toward the per-principal bound like any other: a 5th round still
// fits, by evicting the oldest (docs/SPEC.md §6).
func TestAbandonedPromptKeepsItsPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &impatient{Session: fake.New(), giveUp: make(chan struct{}), asked: make(chan struct{}, 8)}
		e, err := engine.New(s, engine.Options{AskClient: true})
		if err != nil {
			t.Fatal(err)
		}
		defer shutdown(t, e)
		c := newClient(t, e)
		for i := range 4 {
			c.send(writeCall(string(rune('1'+i)), ""))
			state(t, c.recv())
		}
		close(s.giveUp) // every parked prompt is given up by its session
		synctest.Wait()
		// The next call's session waits for its prompt (one withdrawn
		// before any request saw it would never be shown).
		s.giveUp = make(chan struct{})
		c.send(writeCall("9", ""))
		state(t, c.recv()) // a 5th round fits again
	})
}

// tamper changes the first character of a token, so the result is always
// another well-formed token (the last character of 32 bytes in base64url
// carries only 4 bits, so changing it may leave the bytes equal).
func tamper(token string) string {
	c := byte('A')
	if token[0] == 'A' {
		c = 'B'
	}
	return string(c) + token[1:]
}

// askingSession records where each write's prompts go (ports.AskingOf).
type askingSession struct {
	*fake.Session
	seen chan ports.Asking
}

func (s *askingSession) InvokeTool(ctx context.Context, name string, args json.RawMessage, caller ports.Caller) (domain.Envelope, error) {
	if name == "write" {
		s.seen <- ports.AskingOf(caller)
	}
	return s.Session.InvokeTool(ctx, name, args, caller)
}

// TestCallersSayWhereTheyAsk: every Caller the engine hands a session says
// where its prompts go, so a refusal can tell a person's decline from a
// prompt nobody could see (issue 33): the client when it can be asked
// (form elicitation on a stream, rounds for a modern request), nobody
// because AskClient is off, or nobody because this client cannot be
// asked (no form elicitation, a legacy client over HTTP).
func TestCallersSayWhereTheyAsk(t *testing.T) {
	legacyHTTP := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":{"text":"x"}}}`
	for _, c := range []struct {
		name      string
		askClient bool
		send      func(*testing.T, *engine.Engine, *client)
		want      ports.Asking
	}{
		{"modern, elicitation", true, func(_ *testing.T, _ *engine.Engine, c *client) { c.send(writeCall("1", "")) }, ports.AskingClient},
		{"modern, no elicitation", true, func(_ *testing.T, _ *engine.Engine, c *client) {
			c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + modernNoElicit + `,"name":"write","arguments":{"text":"x"}}}`)
		}, ports.AskingUnable},
		{"modern, asking off", false, func(_ *testing.T, _ *engine.Engine, c *client) { c.send(writeCall("1", "")) }, ports.AskingOff},
		{"legacy stream, elicitation", true, func(t *testing.T, e *engine.Engine, _ *client) {
			legacyClient(t, e, "2025-11-25", `{"elicitation":{}}`).send(legacyWrite)
		}, ports.AskingClient},
		{"legacy stream, no elicitation", true, func(t *testing.T, e *engine.Engine, _ *client) {
			legacyClient(t, e, "2025-11-25", `{}`).send(legacyWrite)
		}, ports.AskingUnable},
		{"legacy stream, asking off", false, func(t *testing.T, e *engine.Engine, _ *client) {
			legacyClient(t, e, "2025-11-25", `{"elicitation":{}}`).send(legacyWrite)
		}, ports.AskingOff},
		{"legacy over HTTP", true, func(t *testing.T, e *engine.Engine, _ *client) {
			// The exchange returns before the engine shuts down, as a
			// carrier's handlers do (Run stops the carriers first), so the
			// shutdown's empty-index check does not race its return.
			done := make(chan struct{})
			go func() { defer close(done); e.Exchange(t.Context(), []byte(legacyHTTP), engine.ExchangeOptions{}) }()
			t.Cleanup(func() { <-done })
		}, ports.AskingUnable},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &askingSession{Session: fake.New(), seen: make(chan ports.Asking, 1)}
			e, err := engine.New(s, engine.Options{AskClient: c.askClient})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { shutdown(t, e) })
			c.send(t, e, newClient(t, e))
			select {
			case got := <-s.seen:
				if got != c.want {
					t.Errorf("AskingOf = %v, want %v", got, c.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the write never reached the session")
			}
		})
	}
}
