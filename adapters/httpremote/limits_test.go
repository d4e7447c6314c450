package httpremote_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/httpremote"
	"github.com/agentmcp/agentmcp/ports"
)

func (v *fakeVerifier) setGate(gate, entered chan struct{}) {
	v.mu.Lock()
	v.gate, v.entered = gate, entered
	v.mu.Unlock()
}

// keyRefreshVerifier is a fakeVerifier that reports its next key refresh.
type keyRefreshVerifier struct {
	*fakeVerifier
	due func() time.Time
}

func (v keyRefreshVerifier) NextKeyRefresh() time.Time { return v.due() }

var _ ports.KeyRefreshReporter = keyRefreshVerifier{}

// TestVerdictCache: a successful verification is reused, by the SHA-256 of
// the token, until the earliest of the token's exp, the verifier's next key
// refresh and the TTL; refusals are never cached; the cache is bounded.
func TestVerdictCache(t *testing.T) {
	e := start(t, config{limits: httpremote.Limits{MaxCached: 2}})
	v := e.verifier
	ok := func(token string, wantCalls int) {
		t.Helper()
		resp, body := e.post(t, token)
		want(t, resp, body, 200, "", "", `"result":{}`)
		if n := v.Calls(); n != wantCalls {
			t.Fatalf("after %s: verifier called %d times, want %d", token, n, wantCalls)
		}
	}
	ok(validToken, 1)
	ok(validToken, 1)
	e.clock.Advance(httpremote.VerdictCacheTTL - time.Second)
	ok(validToken, 1)
	e.clock.Advance(time.Second)
	ok(validToken, 2) // the TTL ended
	v.admit("short", "bob", "cli", e.clock.Now().Add(10*time.Second))
	ok("short", 3)
	ok("short", 3)
	e.clock.Advance(10 * time.Second)
	ok("short", 4) // exp reached
	// Bounded: a third token evicts the one used least recently.
	v.admit("third", "carol", "cli", e.clock.Now().Add(time.Hour))
	ok(validToken, 4)
	ok("third", 5)
	ok(validToken, 5)
	ok("short", 6) // evicted by "third"
	// Refusals are never cached.
	for range 2 {
		_, _ = e.post(t, "expired")
	}
	if n := v.Calls(); n != 8 {
		t.Errorf("verifier called %d times, want 8", n)
	}
}

func TestVerdictCacheUntilKeyRefresh(t *testing.T) {
	clock := newFakeClock()
	fv := newFakeVerifier(publicURL, clock)
	due := clock.Now().Add(5 * time.Second)
	e := start(t, config{
		verifier: keyRefreshVerifier{fv, func() time.Time { return due }},
		limits:   httpremote.Limits{Now: clock.Now},
	})
	post := func(wantCalls int) {
		t.Helper()
		resp, body := e.post(t, validToken)
		want(t, resp, body, 200, "", "", `"result":{}`)
		if n := fv.Calls(); n != wantCalls {
			t.Fatalf("verifier called %d times, want %d", n, wantCalls)
		}
	}
	post(1)
	post(1)
	clock.Advance(5 * time.Second)
	post(2) // the keys were due: verified again
}

// TestVerificationCap: at most MaxVerifying verifications run at once;
// the next request gets 503 Retry-After: 1, is not counted or audited, and
// a cached verdict needs no slot.
func TestVerificationCap(t *testing.T) {
	e := start(t, config{limits: httpremote.Limits{MaxVerifying: 2}})
	resp, body := e.post(t, validToken) // cached from now on
	want(t, resp, body, 200, "", "", `"result":{}`)
	gate, entered := make(chan struct{}), make(chan struct{}, 2)
	e.verifier.setGate(gate, entered)
	results := make(chan int, 2)
	for range 2 {
		go func() {
			resp, err := e.client.Do(e.request(t.Context(), "POST", e.res.path, ping, "Authorization", "Bearer forged"))
			if err != nil {
				results <- 0
				return
			}
			resp.Body.Close()
			results <- resp.StatusCode
		}()
	}
	for range 2 {
		select {
		case <-entered:
		case <-time.After(guard):
			t.Fatal("verifications did not start")
		}
	}
	resp, body = e.post(t, "forged")
	want(t, resp, body, 503, "", "1", "")
	resp, body = e.post(t, validToken)
	want(t, resp, body, 200, "", "", `"result":{}`)
	close(gate)
	for range 2 {
		if c := <-results; c != 401 {
			t.Errorf("gated request: status %d, want 401", c)
		}
	}
	if n := e.verifier.Calls(); n != 3 {
		t.Errorf("verifier called %d times, want 3", n)
	}
	if n := len(e.audit.Records()); n != 2 {
		t.Errorf("%d audit records, want 2 (the 503 has none)", n)
	}
}

// dialFrom opens a connection from local (a 127.x.y.z address: another
// client) to the host, closed at cleanup.
func (e *env) dialFrom(t *testing.T, local netip.Addr) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: guard, LocalAddr: &net.TCPAddr{IP: local.AsSlice()}}
	c, err := d.Dial("tcp", e.addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// openConn opens a keep-alive connection from local and completes one
// request on it; the connection stays open.
func openConn(t *testing.T, e *env, local netip.Addr) net.Conn {
	t.Helper()
	c := e.dialFrom(t, local)
	_ = c.SetDeadline(time.Now().Add(guard))
	head := "GET " + e.res.metadataPath + " HTTP/1.1\r\nHost: " + e.res.host + "\r\n\r\n"
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("connection from %v: %v", local, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("connection from %v: status %d", local, resp.StatusCode)
	}
	return c
}

// stillOpen reports whether c is still open: a short read times out.
func stillOpen(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// closedCount is how many of conns the host has closed.
func closedCount(conns []net.Conn) int {
	closed := 0
	for _, c := range conns {
		if !stillOpen(c) {
			closed++
		}
	}
	return closed
}

// slowFrom starts a slow tools/call with a valid token on a new connection
// from local; the connection stays active until the session releases it.
func (e *env) slowFrom(t *testing.T, local netip.Addr, id int) net.Conn {
	t.Helper()
	c := e.dialFrom(t, local)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow"}}`, id)
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: %s\r\nContent-Length: %d\r\n\r\n",
		e.res.path, e.res.host, validToken, jsonSSE, len(body))
	if _, err := io.WriteString(c, head+body); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPerClientConnections: 16 connections per client address. An address
// at its cap has its own oldest idle connection closed to admit its next
// one, while other addresses' connections stay; with all 16 of its
// connections active, its next one is closed at once, unanswered, and
// other addresses are still served. A trusted proxy is held to the total
// only (docs/SPEC.md §5.3).
func TestPerClientConnections(t *testing.T) {
	refused := make(chan struct{}, 8)
	evicted := make(chan struct{}, 8)
	e := start(t, config{proxies: []string{"127.0.0.1"}, limits: httpremote.Limits{
		MaxInFlight:   64,
		OnConnRefused: func() { refused <- struct{}{} },
		OnConnEvicted: func() { evicted <- struct{}{} },
	}})
	started := e.session.Started()
	a, b := netip.MustParseAddr("127.2.0.1"), netip.MustParseAddr("127.2.0.2")
	other := openConn(t, e, b)
	var idle []net.Conn
	for range 16 {
		idle = append(idle, openConn(t, e, a))
	}
	if c := rawRequest(t, e.addr, a, e.forgedHead()); c != 401 {
		t.Errorf("17th connection from one address: status %d, want 401 (served)", c)
	}
	<-evicted
	// One of the address's idle connections made room (the oldest as the
	// server saw them go idle); the other address's was left alone.
	closed := closedCount(idle)
	if closed != 1 || !stillOpen(other) {
		t.Errorf("%d of the address's connections closed (want 1); the other address's open: %v", closed, stillOpen(other))
	}
	for _, c := range idle {
		c.Close()
	}
	for i := range 16 {
		e.slowFrom(t, a, i)
		<-started
	}
	if c := rawRequest(t, e.addr, a, e.forgedHead()); c != 0 {
		t.Errorf("17th connection with 16 active: status %d, want it closed unanswered", c)
	}
	select {
	case <-refused:
	case <-time.After(guard):
		t.Fatal("the 17th connection was not refused")
	}
	if c := rawRequest(t, e.addr, b, e.forgedHead()); c != 401 {
		t.Errorf("another address: status %d, want 401", c)
	}
	e.session.Release()
	proxy := netip.MustParseAddr("127.0.0.1")
	for range 20 {
		openConn(t, e, proxy)
	}
	if len(refused) != 0 {
		t.Error("a trusted proxy's connection was refused")
	}
}

// TestTotalConnections: at the total, an idle connection is closed to admit
// the next one; with every connection active the next waits, no active
// one is closed, and it is served once one closes (docs/SPEC.md §5.3).
func TestTotalConnections(t *testing.T) {
	waiting := make(chan struct{}, 16)
	evicted := make(chan struct{}, 16)
	e := start(t, config{limits: httpremote.Limits{
		MaxConns:      4,
		OnAcceptWait:  func() { waiting <- struct{}{} },
		OnConnEvicted: func() { evicted <- struct{}{} },
	}})
	started := e.session.Started()
	var conns []net.Conn
	for i := range 4 {
		conns = append(conns, openConn(t, e, loopbackAddr(i+1)))
	}
	if c := rawRequest(t, e.addr, loopbackAddr(5), e.forgedHead()); c != 401 {
		t.Errorf("with 4 idle connections: status %d, want 401 (served)", c)
	}
	<-evicted
	// One idle connection made room (the oldest as the server saw them go
	// idle, which the client cannot order exactly).
	closed := closedCount(conns)
	for _, c := range conns {
		c.Close()
	}
	if closed != 1 {
		t.Errorf("%d idle connections closed to make room for one, want 1", closed)
	}
	var busy []net.Conn
	for i := range 4 {
		busy = append(busy, e.slowFrom(t, loopbackAddr(10+i), i))
		<-started
	}
	done := make(chan int, 1)
	go func() { done <- rawRequest(t, e.addr, loopbackAddr(20), e.forgedHead()) }()
	select {
	case <-waiting:
	case <-time.After(guard):
		t.Fatal("Accept did not wait with every connection active")
	}
	for i, c := range busy {
		if !stillOpen(c) {
			t.Errorf("active connection %d was closed", i)
		}
	}
	busy[0].Close()
	select {
	case c := <-done:
		if c != 401 {
			t.Errorf("the waiting connection: status %d, want 401", c)
		}
	case <-time.After(guard):
		t.Fatal("the waiting connection was not served after one closed")
	}
	e.session.Release()
}
