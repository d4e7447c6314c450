package netcap_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/internal/netcap"
)

const guard = 5 * time.Second

// chanListener hands out the connections sent on conns.
type chanListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newChanListener() *chanListener {
	return &chanListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *chanListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }

// peerConn is one end of a pipe that claims to come from peer.
type peerConn struct {
	net.Conn
	peer net.Addr
}

func (c peerConn) RemoteAddr() net.Addr { return c.peer }

// from returns a connection from ip and the client's end of it.
func from(t *testing.T, ip string) (server net.Conn, client net.Conn) {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return peerConn{a, &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000}}, b
}

// accept runs Accept on its own goroutine.
func accept(l net.Listener) <-chan net.Conn {
	got := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			c = nil
		}
		got <- c
	}()
	return got
}

// limited is NewListener for a test: it fails the test on an error.
func limited(t *testing.T, raw net.Listener, c netcap.Limits) *netcap.Listener {
	t.Helper()
	l, err := netcap.NewListener(raw, c)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// offer hands c to l's Accept and returns what Accept returned, failing
// the test unless it returns within guard.
func offer(t *testing.T, l net.Listener, raw *chanListener, c net.Conn) net.Conn {
	t.Helper()
	got := accept(l)
	raw.conns <- c
	select {
	case c := <-got:
		return c
	case <-time.After(guard):
		t.Fatalf("connection from %v not accepted", c.RemoteAddr())
		return nil
	}
}

// isClosed reports whether the client end of a connection sees it closed
// (EOF) within guard.
func isClosed(t *testing.T, client net.Conn) bool {
	t.Helper()
	_ = client.SetReadDeadline(time.Now().Add(guard))
	_, err := client.Read(make([]byte, 1))
	return errors.Is(err, io.EOF)
}

// stillOpen reports whether the client end of a connection is open: a read
// times out instead of seeing EOF.
func stillOpen(client net.Conn) bool {
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, err := client.Read(make([]byte, 1))
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestListenerRefusesBadLimits(t *testing.T) {
	for _, c := range []netcap.Limits{
		{},
		{Total: -1},
		{Total: 1, PerClient: -1},
		{Total: 1, PerClient: 2},
		{Total: 1, IdleGrace: -time.Second},
	} {
		if l, err := netcap.NewListener(newChanListener(), c); !errors.Is(err, netcap.ErrLimits) || l != nil {
			t.Errorf("NewListener(%+v) = %v, %v; want ErrLimits", c, l, err)
		}
	}
}

// TestListenerTotal: with every slot held by an active connection the
// next one waits (never an active one closed) until a slot is freed;
// Close makes a waiting Accept return.
func TestListenerTotal(t *testing.T) {
	raw := newChanListener()
	waiting := make(chan struct{}, 4)
	l := limited(t, raw, netcap.Limits{Total: 2, IdleGrace: time.Nanosecond, OnWait: func() { waiting <- struct{}{} }})
	var open, clients []net.Conn
	for range 2 {
		c, client := from(t, "192.0.2.1")
		got := offer(t, l, raw, c)
		l.ConnState(got, http.StateNew)
		l.ConnState(got, http.StateActive)
		open, clients = append(open, got), append(clients, client)
	}
	third := accept(l)
	c, _ := from(t, "192.0.2.2")
	raw.conns <- c
	select {
	case <-waiting:
	case <-time.After(guard):
		t.Fatal("Accept did not wait with every slot taken by an active connection")
	}
	for i, client := range clients {
		if !stillOpen(client) {
			t.Errorf("active connection %d was closed to make room", i)
		}
	}
	open[0].Close()
	open[0].Close() // gives its slot back once only
	if got := <-third; got == nil {
		t.Fatal("the waiting Accept failed after a slot was freed")
	}
	// Two slots are taken again: Close makes a waiting Accept return.
	fourth := accept(l)
	c, _ = from(t, "192.0.2.3")
	raw.conns <- c
	<-waiting
	l.Close()
	select {
	case got := <-fourth:
		if got != nil {
			t.Error("Accept after Close returned a connection")
		}
	case <-time.After(guard):
		t.Fatal("a waiting Accept did not return at Close")
	}
}

// TestListenerEvictsIdle: at the cap, the oldest connection that never
// completed a request is closed to admit the next one, then (none such
// left) the oldest keep-alive one; a connection idle for less than
// IdleGrace is not closed, the newcomer waits until it has been, and one
// that became active meanwhile is never closed.
func TestListenerEvictsIdle(t *testing.T) {
	raw := newChanListener()
	evicted := make(chan struct{}, 8)
	l := limited(t, raw, netcap.Limits{Total: 3, IdleGrace: time.Nanosecond, OnEvict: func() { evicted <- struct{}{} }})
	type conn struct{ server, client net.Conn }
	take := func(ip string, states ...http.ConnState) conn {
		t.Helper()
		c, client := from(t, ip)
		got := offer(t, l, raw, c)
		for _, st := range states {
			l.ConnState(got, st)
		}
		return conn{got, client}
	}
	kept := take("192.0.2.1", http.StateNew, http.StateActive, http.StateIdle) // keep-alive, oldest
	fresh := take("192.0.2.2", http.StateNew)                                  // never sent a request
	busy := take("192.0.2.3", http.StateNew, http.StateActive)                 // serving a request
	next := take("192.0.2.4")                                                  // admitted in fresh's place
	if !isClosed(t, fresh.client) {
		t.Fatal("the never-used connection was not closed to admit the next one")
	}
	if !stillOpen(kept.client) || !stillOpen(busy.client) {
		t.Fatal("a keep-alive or active connection was closed while a never-used one could be")
	}
	l.ConnState(next.server, http.StateActive)
	take("192.0.2.5") // no never-used connection left: the keep-alive one goes
	if !isClosed(t, kept.client) {
		t.Fatal("the keep-alive connection was not closed to admit the next one")
	}
	if !stillOpen(busy.client) || !stillOpen(next.client) {
		t.Fatal("an active connection was closed")
	}
	if n := len(evicted); n != 2 {
		t.Errorf("OnEvict called %d times, want 2", n)
	}
	// Closing a connection that was closed to make room changes nothing.
	fresh.server.Close()
	kept.server.Close()

	// A connection idle for less than IdleGrace keeps its slot; the
	// newcomer waits until the grace has passed.
	raw2 := newChanListener()
	const grace = 30 * time.Millisecond
	waiting := make(chan struct{}, 1)
	l2 := limited(t, raw2, netcap.Limits{Total: 1, IdleGrace: grace, OnWait: func() { waiting <- struct{}{} }})
	c, client := from(t, "192.0.2.6")
	first := offer(t, l2, raw2, c)
	l2.ConnState(first, http.StateNew)
	since := time.Now()
	c2, _ := from(t, "192.0.2.7")
	second := offer(t, l2, raw2, c2)
	if d := time.Since(since); d < grace {
		t.Errorf("the newcomer was admitted %v after the connection became idle, want ≥ %v", d, grace)
	}
	if len(waiting) != 1 || !isClosed(t, client) {
		t.Error("the newcomer did not wait for the grace, then take the idle connection's place")
	}
	// An active connection is not closed; when it is answered and idle for
	// the grace, a waiting newcomer takes its place.
	l2.ConnState(second, http.StateNew)
	l2.ConnState(second, http.StateActive)
	c3, _ := from(t, "192.0.2.8")
	third := accept(l2)
	raw2.conns <- c3
	<-waiting
	select {
	case <-third:
		t.Fatal("an active connection's slot was taken")
	case <-time.After(3 * grace):
	}
	l2.ConnState(second, http.StateIdle)
	select {
	case got := <-third:
		if got == nil {
			t.Fatal("Accept failed")
		}
	case <-time.After(guard):
		t.Fatal("the waiting newcomer was not admitted once the connection was idle")
	}
}

// TestListenerPerClient: a client at its cap has its own oldest idle
// connection closed to admit its new one, however briefly idle; with none
// of its own idle, the new one is closed unanswered and Accept goes on. A
// trusted proxy (exempt) is held to the total only.
func TestListenerPerClient(t *testing.T) {
	raw := newChanListener()
	refused := make(chan struct{}, 4)
	clientOf := func(peer net.Addr) (any, bool) {
		ip := peer.(*net.TCPAddr).AddrPort().Addr().Unmap()
		return ip, ip == netip.MustParseAddr("203.0.113.9") // the "proxy"
	}
	l := limited(t, raw, netcap.Limits{
		Total: 10, PerClient: 2, ClientOf: clientOf, IdleGrace: time.Hour,
		OnRefuse: func() { refused <- struct{}{} },
	})
	take := func(ip string) (net.Conn, net.Conn) {
		t.Helper()
		c, client := from(t, ip)
		return offer(t, l, raw, c), client
	}
	a1, _ := take("192.0.2.1")
	l.ConnState(a1, http.StateNew)
	l.ConnState(a1, http.StateActive)
	a2, a2client := take("192.0.2.1")
	l.ConnState(a2, http.StateNew) // idle for far less than IdleGrace
	other, otherClient := take("192.0.2.2")
	l.ConnState(other, http.StateNew)
	take("192.0.2.1") // at its cap: its own idle a2 goes
	if !isClosed(t, a2client) {
		t.Fatal("the client's own idle connection was not closed to admit its new one")
	}
	if !stillOpen(otherClient) {
		t.Fatal("another client's idle connection was closed")
	}
	// Now both of its connections are active: the next is refused, and
	// Accept goes on to the next connection.
	got := accept(l)
	over, overClient := from(t, "192.0.2.1")
	raw.conns <- over
	<-refused
	if !isClosed(t, overClient) {
		t.Error("the client over its cap was not closed")
	}
	c, _ := from(t, "192.0.2.3")
	raw.conns <- c
	if c := <-got; c == nil || c.RemoteAddr().String() != "192.0.2.3:40000" {
		t.Fatalf("after the refusal Accept returned %v", c)
	}
	a1.Close()
	take("192.0.2.1") // a freed per-client slot is reusable
	for range 5 {
		take("203.0.113.9") // exempt: the total alone applies
	}
	if len(refused) != 0 {
		t.Error("an exempt connection was refused")
	}
}

// TestListenerSparesConnectionsWithUnreadRequests: an idle connection
// whose client has sent bytes the server has not read yet (its goroutine
// has not run: a loaded machine) is not closed to make room — its request
// is already here — however long it has been idle; one that sent nothing
// is.
func TestListenerSparesConnectionsWithUnreadRequests(t *testing.T) {
	raw, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{}, 4)
	l := limited(t, raw, netcap.Limits{Total: 1, IdleGrace: time.Nanosecond, OnWait: func() { waiting <- struct{}{} }})
	defer l.Close()
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp4", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// A request has arrived on the one connection; nobody has read it.
	client := dial()
	first := <-accept(l)
	l.ConnState(first, http.StateNew)
	if _, err := io.WriteString(client, "POST /mcp HTTP/1.1\r\n"); err != nil {
		t.Fatal(err)
	}
	// The bytes reach the server's socket (on loopback, almost at once).
	deadline := time.Now().Add(guard)
	for !netcap.HasUnread(first) {
		if time.Now().After(deadline) {
			t.Fatal("the request never reached the server's socket")
		}
		runtime.Gosched()
	}
	next := accept(l)
	dial()
	select {
	case <-waiting:
	case c := <-next:
		t.Fatalf("a connection with an unread request was closed for a newcomer (%v)", c != nil)
	case <-time.After(guard):
		t.Fatal("Accept neither waited nor admitted")
	}
	if !stillOpen(client) {
		t.Fatal("the connection with an unread request was closed")
	}
	// Once the server has read it and the connection has nothing pending
	// (an idle client), it makes room.
	if _, err := io.ReadFull(first, make([]byte, len("POST /mcp HTTP/1.1\r\n"))); err != nil {
		t.Fatal(err)
	}
	l.ConnState(first, http.StateIdle)
	select {
	case c := <-next:
		if c == nil {
			t.Fatal("Accept failed")
		}
	case <-time.After(guard):
		t.Fatal("the idle connection did not make room once it had nothing unread")
	}
}
