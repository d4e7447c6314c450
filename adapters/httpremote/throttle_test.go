package httpremote_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/httpremote"
	"github.com/agentmcp/agentmcp/ports"
)

// spendBudget sends 20 forged tokens (extra headers added) and checks they
// are all answered 401 invalid_token.
func spendBudget(t *testing.T, e *env, extra ...string) {
	t.Helper()
	for i := range 20 {
		resp, body := e.post(t, "forged", extra...)
		if resp.StatusCode != 401 {
			t.Fatalf("forged token %d: status %d, want 401", i+1, resp.StatusCode)
		}
		want(t, resp, body, 401, challengeInvalid, "", "")
	}
}

// TestForgedThenValid: 20 forged tokens are answered 401, then 429 with
// Retry-After the limiter's delay (one token every 3 s), while a valid
// token from the same address is served: every token is verified before
// anything is counted. Time then refills the budget.
func TestForgedThenValid(t *testing.T) {
	e := start(t, config{})
	spendBudget(t, e)
	for range 2 {
		resp, body := e.post(t, "forged")
		want(t, resp, body, 429, "", "3", "")
	}
	resp, body := e.post(t, validToken)
	want(t, resp, body, 200, "", "", `"result":{}`)
	if n := e.verifier.Calls(); n != 23 {
		t.Errorf("verifier called %d times, want 23", n)
	}
	e.clock.Advance(time.Second)
	resp, body = e.post(t, "forged")
	want(t, resp, body, 429, "", "2", "")
	e.clock.Advance(2 * time.Second)
	resp, body = e.post(t, "forged")
	want(t, resp, body, 401, challengeInvalid, "", "")
	resp, body = e.post(t, "forged")
	want(t, resp, body, 429, "", "3", "")
	// A missing token spends the same budget.
	resp, body = e.post(t, "")
	want(t, resp, body, 429, "", "3", "")
	e.clock.Advance(time.Minute)
	spendBudget(t, e)
}

// TestUncountedNeverThrottled: expired tokens (and the other uncounted
// refusals) are answered as such however many arrive, and leave the budget
// untouched; even a client over its budget gets them, not 429.
func TestUncountedNeverThrottled(t *testing.T) {
	e := start(t, config{})
	for range 30 {
		resp, body := e.post(t, "expired")
		want(t, resp, body, 401, challengeInvalid, "", "")
	}
	spendBudget(t, e)
	for _, r := range []struct {
		token, challenge string
		status           int
	}{
		{"expired", challengeInvalid, 401},
		{"wrong-audience", challengeInvalid, 401},
		{"not-yet-valid", challengeInvalid, 401},
		{"missing-scope", challengeScope, 403},
		{"principal-not-allowed", "", 403},
		{"keys-unavailable", "", 503},
	} {
		resp, body := e.post(t, r.token)
		want(t, resp, body, r.status, r.challenge, "", "")
	}
	resp, body := e.post(t, "forged")
	want(t, resp, body, 429, "", "3", "")
}

// TestForgedXFFFromUntrustedPeer: without trusted proxies, X-Forwarded-For
// is ignored: forged values all collapse to the socket peer.
func TestForgedXFFFromUntrustedPeer(t *testing.T) {
	e := start(t, config{})
	for i := range 20 {
		resp, _ := e.post(t, "forged", "X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i))
		if resp.StatusCode != 401 {
			t.Fatalf("forged %d: status %d", i+1, resp.StatusCode)
		}
	}
	resp, body := e.post(t, "forged", "X-Forwarded-For", "198.51.100.99")
	want(t, resp, body, 429, "", "3", "")
	if n := e.host.ThrottledClients(); n != 1 {
		t.Errorf("%d clients counted, want 1", n)
	}
	for _, r := range e.audit.Records() {
		if r.Remote != ports.AddressLoopback {
			t.Errorf("audit %+v: want the peer's class, loopback", r)
		}
	}
}

// TestTrustedProxy: behind a trusted proxy (the socket peer 127.0.0.1),
// X-Forwarded-For is read right to left and the first hop that is not a
// trusted proxy is the client; hops to its left are the client's own
// writing and change nothing.
func TestTrustedProxy(t *testing.T) {
	e := start(t, config{proxies: []string{"127.0.0.1", "10.0.0.2"}})
	const xff = "X-Forwarded-For"
	spendBudget(t, e, xff, "203.0.113.5, 198.51.100.7")
	for _, v := range [][]string{
		{xff, "203.0.113.5, 198.51.100.7"},
		{xff, "192.0.2.1, 198.51.100.7"},        // the client rewrote its own hops
		{xff, "198.51.100.7, 10.0.0.2"},         // a second trusted proxy
		{xff, "198.51.100.7,127.0.0.1"},         // ... and the first one again
		{xff, "192.0.2.1", xff, "198.51.100.7"}, // two header fields, joined
		{xff, "::ffff:198.51.100.7"},            // IPv4-mapped folds to IPv4
	} {
		resp, body := e.post(t, "forged", v...)
		want(t, resp, body, 429, "", "3", "")
	}
	// Another client behind the same proxy has a budget of its own.
	resp, body := e.post(t, "forged", xff, "198.51.100.7, 203.0.113.5")
	want(t, resp, body, 401, challengeInvalid, "", "")
	// A hop that is not a literal IP makes the proxy the client; so does no
	// header, and a header of trusted hops only.
	for _, v := range [][]string{
		{xff, "198.51.100.7, proxy.internal"},
		{xff, "198.51.100.7:4711"},
		{xff, "198.51.100.7, "},
		{xff, "[2001:db8::1]"},
		{},
		{xff, "10.0.0.2, 127.0.0.1"},
	} {
		resp, body := e.post(t, "forged", v...)
		want(t, resp, body, 401, challengeInvalid, "", "")
	}
	if n := e.host.ThrottledClients(); n != 3 {
		t.Errorf("%d clients counted, want 3 (198.51.100.7, 203.0.113.5, the proxy)", n)
	}
	recs := e.audit.Records()
	classes := map[ports.AddressClass]int{}
	for _, r := range recs {
		classes[r.Remote]++
	}
	if classes[ports.AddressPublic] != 27 || classes[ports.AddressLoopback] != 6 {
		t.Errorf("audit classes %v, want 27 public and 6 loopback", classes)
	}
	// IPv6 clients are counted by /64.
	spendBudget(t, e, xff, "2001:db8:1:2::1")
	resp, body = e.post(t, "forged", xff, "2001:db8:1:2:ffff:ffff:ffff:ffff")
	want(t, resp, body, 429, "", "3", "")
	resp, body = e.post(t, "forged", xff, "2001:db8:1:3::1")
	want(t, resp, body, 401, challengeInvalid, "", "")
	// Private addresses are classed as such.
	_, _ = e.post(t, "forged", xff, "10.1.2.3")
	_, _ = e.post(t, "forged", xff, "fd00::1")
	recs = e.audit.Records()
	for _, r := range recs[len(recs)-2:] {
		if r.Remote != ports.AddressPrivate {
			t.Errorf("audit %+v, want private", r)
		}
	}
}

// TestFloodFromDistinctSources: forged tokens from 4096+200 real distinct
// source addresses (127.1.x.y, each its own TCP connection) keep the table
// at 4096 clients.
func TestFloodFromDistinctSources(t *testing.T) {
	if testing.Short() {
		t.Skip("4296 connections")
	}
	e := start(t, config{})
	const n = httpremote.MaxThrottledClients + 200
	head := e.forgedHead()
	var wg sync.WaitGroup
	work := make(chan int)
	var mu sync.Mutex
	statuses := map[int]int{}
	for range 16 {
		wg.Go(func() {
			for i := range work {
				c := rawRequest(t, e.addr, loopbackAddr(i), head)
				mu.Lock()
				statuses[c]++
				mu.Unlock()
			}
		})
	}
	for i := 1; i <= n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	if statuses[401] != n {
		t.Errorf("statuses %v, want %d × 401", statuses, n)
	}
	if got := e.host.ThrottledClients(); got != httpremote.MaxThrottledClients {
		t.Errorf("%d clients tracked, want %d", got, httpremote.MaxThrottledClients)
	}
}

// TestFloodThroughProxy: the same flood as X-Forwarded-For values through a
// trusted proxy, on one connection; the client counted least recently is
// the one forgotten, and while idle clients remain a busy one is kept.
func TestFloodThroughProxy(t *testing.T) {
	e := start(t, config{proxies: []string{"127.0.0.1"}})
	const xff = "X-Forwarded-For"
	spendBudget(t, e, xff, "198.51.100.1") // A: busy, then idle
	e.clock.Advance(time.Minute)
	for i := 1; i < httpremote.MaxThrottledClients-1; i++ {
		resp, _ := e.post(t, "forged", xff, netip.AddrFrom4([4]byte{100, 127, byte(i >> 8), byte(i)}).String())
		if resp.StatusCode != 401 {
			t.Fatalf("client %d: status %d", i, resp.StatusCode)
		}
	}
	spendBudget(t, e, xff, "198.51.100.2") // B: busy, the table is full
	if got := e.host.ThrottledClients(); got != httpremote.MaxThrottledClients {
		t.Fatalf("%d clients tracked, want %d", got, httpremote.MaxThrottledClients)
	}
	resp, _ := e.post(t, "forged", xff, "198.51.100.3") // C evicts A, the idle one
	if resp.StatusCode != 401 {
		t.Fatalf("C: status %d", resp.StatusCode)
	}
	resp, body := e.post(t, "forged", xff, "198.51.100.2")
	want(t, resp, body, 429, "", "3", "")
	if got := e.host.ThrottledClients(); got != httpremote.MaxThrottledClients {
		t.Errorf("%d clients tracked, want %d", got, httpremote.MaxThrottledClients)
	}
}

// TestAuditAndLogsHoldNoSecret: neither audit records nor the host's logs
// (at debug level) hold a token or a client address.
func TestAuditAndLogsHoldNoSecret(t *testing.T) {
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := start(t, config{proxies: []string{"127.0.0.1"}, logger: logger})
	secrets := []string{"forged-secret-token", validToken, "expired"}
	const xff = "X-Forwarded-For"
	for range 22 {
		_, _ = e.post(t, "forged-secret-token", xff, "198.51.100.77")
	}
	_, _ = e.post(t, validToken, xff, "198.51.100.77")
	_, _ = e.post(t, "expired", xff, "2001:db8::77")
	_, _ = e.post(t, "", xff, "10.9.8.7")
	recs := e.audit.Records()
	if len(recs) != 24 {
		t.Fatalf("%d audit records, want 24", len(recs))
	}
	dump := fmt.Sprintf("%#v %+v", recs, recs)
	for _, s := range append(secrets[:2], "198.51.100.77", "2001:db8::77", "10.9.8.7", "127.0.0.1") {
		if strings.Contains(dump, s) {
			t.Errorf("audit records hold %q: %s", s, dump)
		}
	}
	// The logs name the listening address, never a client's.
	for _, s := range append(secrets[:2], "198.51.100.77", "2001:db8::77", "10.9.8.7") {
		if strings.Contains(logs.String(), s) {
			t.Errorf("logs hold %q:\n%s", s, logs.String())
		}
	}
	if !recs[20].Throttled || recs[20].Refusal != ports.RefusalBadSignature {
		t.Errorf("record 21 = %+v, want the real refusal, throttled", recs[20])
	}
}
