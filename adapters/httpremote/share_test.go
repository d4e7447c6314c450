package httpremote_test

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/internal/leakcheck"
)

// slowBodyFrom opens a connection from local and sends an admitted request
// head (token) declaring a 100-byte body of which it sends nothing: the
// request holds an in-flight slot until the body read timeout.
func (e *env) slowBodyFrom(t *testing.T, local netip.Addr, token string) net.Conn {
	t.Helper()
	c := e.dialFrom(t, local)
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: %s\r\nContent-Length: 100\r\n\r\n",
		e.res.path, e.res.host, token, jsonSSE)
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestOnePrincipalHoldsAtMostHalfTheSlots: a principal holding 8 in-flight
// slots (half of them) gets 503 at once for more — a slow body included,
// which would otherwise hold a slot for the whole body timeout — while
// another principal is served (docs/SPEC.md §5.3).
func TestOnePrincipalHoldsAtMostHalfTheSlots(t *testing.T) {
	leakcheck.Check(t)
	e := start(t, config{})
	started := e.session.Started()
	e.verifier.admit("bob-token", "bob", "cli", e.clock.Now().Add(time.Hour))
	alice := netip.MustParseAddr("127.4.0.1")
	for i := range 8 {
		e.slowFrom(t, alice, i)
		<-started
	}
	c := e.slowBodyFrom(t, alice, validToken)
	if status := readStatus(t, withDeadline(c)); status != 503 {
		t.Errorf("alice's slow body with 8 slots held: status %d, want 503 at once", status)
	}
	if resp, _ := e.post(t, validToken); resp.StatusCode != 503 {
		t.Errorf("alice's next request: status %d, want 503", resp.StatusCode)
	}
	if resp, body := e.post(t, "bob-token"); resp.StatusCode != 200 {
		t.Errorf("bob while alice holds half the slots: status %d %q, want 200", resp.StatusCode, body)
	}
	e.session.Release()
	deadline := time.Now().Add(guard)
	for {
		resp, _ := e.post(t, validToken)
		if resp.StatusCode == 200 {
			break
		}
		if resp.StatusCode != 503 || time.Now().After(deadline) {
			t.Fatalf("alice once her calls ended: status %d, want 200", resp.StatusCode)
		}
	}
}

func withDeadline(c net.Conn) net.Conn {
	_ = c.SetReadDeadline(time.Now().Add(guard))
	return c
}
