package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/waitfor"
	"github.com/agentmcp/agentmcp/ports"
)

// The legacy tools/call of the slow tool, and the notifications/cancelled
// naming it, as a 2025-era HTTP client POSTs them.
const (
	legacySlow   = `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow","arguments":{}}}`
	cancelSlow   = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"user"}}`
	modernSlow   = `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{` + modernNoElicit + `,"name":"slow","arguments":{}}}`
	legacyHeader = "2025-11-25"
)

var (
	alice = ports.Principal{Issuer: "https://as.example", Subject: "alice", Client: "app"}
	bob   = ports.Principal{Issuer: "https://as.example", Subject: "bob", Client: "app"}
	// errLeft ends a request's ctx in these tests: the client went away.
	errLeft = errors.New("the client went away")
)

// exchanges runs bodies through Exchange as an HTTP host would, each on a
// context the test can end.
type exchanges struct {
	t *testing.T
	e *engine.Engine
	s *fake.Held
	// started receives the tool name of each call the session starts.
	started <-chan string
}

func newExchanges(t *testing.T) *exchanges {
	s := fake.NewHeld()
	started := s.Started()
	e, err := engine.New(s, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Let() // a slow call returns as soon as its ctx ends
	t.Cleanup(func() { shutdown(t, e) })
	return &exchanges{t: t, e: e, s: s, started: started}
}

// start serves body for who in the background, once the slow call has
// started; leave ends its request (the client going away).
func (x *exchanges) start(who ports.Principal, body string, h engine.Headers) (replies <-chan engine.Reply, leave func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	out := make(chan engine.Reply, 1)
	go func() { out <- x.e.Exchange(ctx, []byte(body), engine.ExchangeOptions{Principal: who, Headers: h}) }()
	if name := <-x.started; name != "slow" {
		x.t.Fatalf("the session started %q, want slow", name)
	}
	return out, func() { cancel(errLeft) }
}

func (x *exchanges) cancel(who ports.Principal) {
	x.t.Helper()
	r := x.e.Exchange(context.Background(), []byte(cancelSlow), engine.ExchangeOptions{Principal: who})
	if r.Kind != engine.Accepted || len(r.Body) != 0 {
		x.t.Fatalf("notifications/cancelled: kind %d body %s, want Accepted (202) and no body", r.Kind, r.Body)
	}
}

// ended is the cause with which the next slow call's ctx ended.
func (x *exchanges) ended() error {
	return waitfor.Value(x.t, x.s.CtxEnded(), 10*time.Second, "a slow call's ctx to end")
}

var legacyHeaders = engine.Headers{ProtocolVersion: legacyHeader, HasProtocolVersion: true}

// TestExchangeCancelledByNotification: a 2025-era client's
// notifications/cancelled, POSTed while the request it names stays open,
// ends that call (docs/SPEC.md §3 "Cancellation"): the tool's ctx ends and
// the request answers nothing.
func TestExchangeCancelledByNotification(t *testing.T) {
	for _, h := range []engine.Headers{{}, legacyHeaders} {
		x := newExchanges(t)
		replies, leave := x.start(alice, legacySlow, h)
		defer leave()
		x.cancel(alice)
		if err := x.ended(); err == nil || err.Error() != "cancelled by the client" {
			t.Errorf("the call's ctx ended with %v, want the client's cancellation", err)
		}
		if r := <-replies; r.Kind != engine.Cancelled || len(r.Body) != 0 {
			t.Errorf("the cancelled request answered kind %d: %s", r.Kind, r.Body)
		}
	}
}

// TestExchangeCancelNeverCrossesPrincipals: another principal's
// notifications/cancelled naming the same id is accepted and does nothing.
func TestExchangeCancelNeverCrossesPrincipals(t *testing.T) {
	x := newExchanges(t)
	replies, leave := x.start(alice, legacySlow, engine.Headers{})
	x.cancel(bob)
	x.cancel(ports.Principal{}) // the loopback host's principal
	leave()
	if err := x.ended(); !errors.Is(err, errLeft) {
		t.Errorf("alice's call ended with %v, want only her own request's end", err)
	}
	if r := <-replies; r.Kind != engine.Cancelled {
		t.Errorf("kind %d: %s", r.Kind, r.Body)
	}
}

// TestExchangeCancelAmbiguousID: two calls of one principal in flight with
// the same id (two loopback clients counting ids from 0): a cancellation
// naming it cancels neither, since it cannot tell whose it is.
func TestExchangeCancelAmbiguousID(t *testing.T) {
	x := newExchanges(t)
	r1, leave1 := x.start(ports.Principal{}, legacySlow, engine.Headers{})
	r2, leave2 := x.start(ports.Principal{}, legacySlow, engine.Headers{})
	x.cancel(ports.Principal{})
	leave1()
	if err := x.ended(); !errors.Is(err, errLeft) {
		t.Errorf("a call ended with %v, want its own request's end", err)
	}
	<-r1
	// One call left with that id: now a cancellation reaches it.
	x.cancel(ports.Principal{})
	if err := x.ended(); err == nil || err.Error() != "cancelled by the client" {
		t.Errorf("the remaining call ended with %v, want the client's cancellation", err)
	}
	if r := <-r2; r.Kind != engine.Cancelled {
		t.Errorf("kind %d: %s", r.Kind, r.Body)
	}
	leave2()
}

// TestExchangeCancelLeavesModernCalls: a modern request is cancelled by
// closing it; a notifications/cancelled naming its id does nothing.
func TestExchangeCancelLeavesModernCalls(t *testing.T) {
	x := newExchanges(t)
	h := engine.Headers{ProtocolVersion: "2026-07-28", HasProtocolVersion: true, Method: "tools/call", HasMethod: true, Name: "slow", HasName: true}
	replies, leave := x.start(alice, modernSlow, h)
	x.cancel(alice)
	leave()
	if err := x.ended(); !errors.Is(err, errLeft) {
		t.Errorf("the modern call ended with %v, want its request's end", err)
	}
	<-replies
}
