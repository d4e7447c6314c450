package streamable_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/engine"
	"github.com/agentmcp/agentmcp/adapters/streamable"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/ports"
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

func TestLimitListenerTotal(t *testing.T) {
	raw := newChanListener()
	waiting := make(chan struct{}, 4)
	l := streamable.LimitListener(raw, streamable.ConnLimits{Total: 2, OnWait: func() { waiting <- struct{}{} }})
	var open []net.Conn
	for range 2 {
		got := accept(l)
		c, _ := from(t, "192.0.2.1")
		raw.conns <- c
		open = append(open, <-got)
	}
	third := accept(l)
	select {
	case <-waiting:
	case <-time.After(guard):
		t.Fatal("Accept did not wait with every slot taken")
	}
	c, _ := from(t, "192.0.2.2")
	select {
	case raw.conns <- c:
		t.Fatal("a connection was taken from the queue with every slot taken")
	case <-time.After(20 * time.Millisecond):
	}
	open[0].Close()
	open[0].Close() // gives its slot back once only
	raw.conns <- c
	if got := <-third; got == nil {
		t.Fatal("the waiting Accept failed after a slot was freed")
	}
	// Two slots are taken again: Close makes a waiting Accept return.
	fourth := accept(l)
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

func TestLimitListenerPerClient(t *testing.T) {
	raw := newChanListener()
	refused := make(chan struct{}, 4)
	clientOf := func(peer net.Addr) (any, bool) {
		ip := peer.(*net.TCPAddr).AddrPort().Addr().Unmap()
		return ip, ip == netip.MustParseAddr("203.0.113.9") // the "proxy"
	}
	l := streamable.LimitListener(raw, streamable.ConnLimits{
		Total: 10, PerClient: 2, ClientOf: clientOf,
		OnRefuse: func() { refused <- struct{}{} },
	})
	take := func(ip string) net.Conn {
		t.Helper()
		got := accept(l)
		c, _ := from(t, ip)
		raw.conns <- c
		select {
		case c := <-got:
			return c
		case <-time.After(guard):
			t.Fatalf("connection from %s not accepted", ip)
			return nil
		}
	}
	a1 := take("192.0.2.1")
	take("192.0.2.1")
	// The third from the same client is closed unanswered; Accept goes on
	// to the next connection.
	got := accept(l)
	over, overClient := from(t, "192.0.2.1")
	raw.conns <- over
	<-refused
	if _, err := overClient.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("the client over its cap read %v, want EOF (closed)", err)
	}
	other, _ := from(t, "192.0.2.2")
	raw.conns <- other
	if c := <-got; c == nil || c.RemoteAddr().String() != "192.0.2.2:40000" {
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

// server returns a Server for session (nil: a fresh fake) on
// 127.0.0.1:<free port> serving h; it counts the calls of Listen in
// *listens.
func server(t *testing.T, session ports.Session, h http.Handler, listens *atomic.Int32, o streamable.ServerOptions) *streamable.Server {
	t.Helper()
	if session == nil {
		session = fake.New()
	}
	o.Name, o.Engine = "test", newEngine(t, session)
	o.Conns.Total = 4
	o.Listen = func() (net.Listener, error) {
		listens.Add(1)
		return net.Listen("tcp4", "127.0.0.1:0")
	}
	o.Admit = func(netip.AddrPort) http.Handler { return h }
	s, err := streamable.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

func TestServerLifecycle(t *testing.T) {
	var listens atomic.Int32
	var handed netip.AddrPort
	eng := newEngine(t, fake.New())
	o := streamable.ServerOptions{Name: "test", Engine: eng, Conns: streamable.ConnLimits{Total: 4}}
	o.Listen = func() (net.Listener, error) {
		listens.Add(1)
		return net.Listen("tcp4", "127.0.0.1:0")
	}
	framing, err := streamable.NewHandler(eng, streamable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o.Admit = func(bound netip.AddrPort) http.Handler {
		handed = bound
		return framing
	}
	s, err := streamable.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := s.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if bound != handed || bound.Port() == 0 {
		t.Errorf("Start = %v, Admit got %v: want the same bound address", bound, handed)
	}
	resp := post(t, t.Context(), bound.String(), ping)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || decode(t, b).Error != nil {
		t.Fatalf("ping through the framing: %d %s", resp.StatusCode, b)
	}
	if _, err := s.Start(t.Context()); !errors.Is(err, streamable.ErrAlreadyStarted) {
		t.Errorf("second Start: %v", err)
	}
	if err := s.Stop(t.Context()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := s.Stop(t.Context()); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if err := s.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
	if _, err := s.Start(t.Context()); !errors.Is(err, streamable.ErrStopped) {
		t.Errorf("Start after Stop: %v", err)
	}
	if n := listens.Load(); n != 1 {
		t.Errorf("Listen called %d times, want 1", n)
	}
	if c, err := net.DialTimeout("tcp", bound.String(), guard); err == nil {
		c.Close()
		t.Error("still listening after Stop")
	}
}

// blockingCatalog's RuntimeTools blocks until its context ends.
type blockingCatalog struct {
	*fake.Session
	entered chan struct{}
}

func (b *blockingCatalog) RuntimeTools(ctx context.Context) ([]domain.Tool, error) {
	close(b.entered)
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestServerStopWinsAgainstPendingStart(t *testing.T) {
	session := &blockingCatalog{Session: fake.New(), entered: make(chan struct{})}
	var listens atomic.Int32
	s := server(t, session, http.NotFoundHandler(), &listens, streamable.ServerOptions{})
	started := make(chan error, 1)
	go func() {
		_, err := s.Start(context.Background())
		started <- err
	}()
	<-session.entered
	if err := s.Stop(t.Context()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := <-started; !errors.Is(err, streamable.ErrStopped) {
		t.Fatalf("Start: %v, want ErrStopped", err)
	}
	if n := listens.Load(); n != 0 {
		t.Errorf("Listen called %d times after Stop won", n)
	}
	if err := s.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
}

// TestServerStopCancelsInFlight: Stop cancels a request with cause
// engine.ErrShuttingDown and waits for its answer to be written.
func TestServerStopCancelsInFlight(t *testing.T) {
	entered := make(chan struct{})
	cause := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done()
		cause <- context.Cause(r.Context())
		_, _ = io.WriteString(w, "shutting down")
	})
	var listens atomic.Int32
	s := server(t, nil, h, &listens, streamable.ServerOptions{})
	bound, err := s.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	body := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + bound.String() + "/")
		if err != nil {
			body <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body <- string(b)
	}()
	<-entered
	if err := s.Stop(t.Context()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := <-cause; !errors.Is(err, engine.ErrShuttingDown) {
		t.Errorf("request cancelled with cause %v, want engine.ErrShuttingDown", err)
	}
	if b := <-body; b != "shutting down" {
		t.Errorf("client got %q", b)
	}
}

// TestServerStopTimeout: a handler that ignores cancellation makes Stop
// return ErrStopTimeout after StopTimeout; the server still stops once the
// handler returns.
func TestServerStopTimeout(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		close(entered)
		<-release
	})
	var listens atomic.Int32
	const stopTimeout = 100 * time.Millisecond
	s := server(t, nil, h, &listens, streamable.ServerOptions{StopTimeout: stopTimeout})
	bound, err := s.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		if resp, err := http.Get("http://" + bound.String() + "/"); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	began := time.Now()
	if err := s.Stop(t.Context()); !errors.Is(err, streamable.ErrStopTimeout) {
		t.Fatalf("Stop: %v, want ErrStopTimeout", err)
	}
	if d := time.Since(began); d < stopTimeout || d > guard {
		t.Errorf("Stop returned after %v, want about %v", d, stopTimeout)
	}
	close(release)
	if err := s.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
}

// brokenListener's Accept fails for good.
type brokenListener struct{ net.Listener }

var errBroken = errors.New("listener broke")

func (brokenListener) Accept() (net.Conn, error) { return nil, errBroken }

// TestServerServeFailure: when serving fails on its own the server stops
// and Wait returns the failure, named after the host.
func TestServerServeFailure(t *testing.T) {
	if _, err := streamable.NewServer(streamable.ServerOptions{Name: "test"}); err == nil {
		t.Error("NewServer without Engine, Listen and Admit succeeded")
	}
	o := streamable.ServerOptions{Name: "test", Engine: newEngine(t, fake.New()), Conns: streamable.ConnLimits{Total: 1}}
	o.Listen = func() (net.Listener, error) {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		return brokenListener{ln}, err
	}
	o.Admit = func(netip.AddrPort) http.Handler { return http.NotFoundHandler() }
	s, err := streamable.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	err = s.Wait()
	if !errors.Is(err, errBroken) || !strings.HasPrefix(err.Error(), "test: serve: ") {
		t.Errorf("Wait: %v, want test: serve: %v", err, errBroken)
	}
	if err := s.Stop(t.Context()); err != nil {
		t.Errorf("Stop after the failure: %v", err)
	}
}
