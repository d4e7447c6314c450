package streamable_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/streamable"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/ports"
)

const guard = 5 * time.Second

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

// TestNewServerRefusesBadConnLimits: the caps are checked when the Server
// is built, before anything is bound.
func TestNewServerRefusesBadConnLimits(t *testing.T) {
	_, err := streamable.NewServer(streamable.ServerOptions{Engine: newEngine(t, fake.New()),
		Listen: func() (net.Listener, error) { return nil, nil }, Admit: func(netip.AddrPort) http.Handler { return nil }})
	if !errors.Is(err, streamable.ErrConnLimits) {
		t.Errorf("NewServer without Conns.Total: %v, want ErrConnLimits", err)
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
		err := s.Start(context.Background())
		started <- err
	}()
	<-session.entered
	if err := s.Stop(t.Context()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := <-started; !errors.Is(err, engine.ErrStopped) {
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
// engine.ErrShuttingDown and waits for its answer to be written; the
// listener Listen bound once is closed by then. (The lifecycle itself is
// carriertest's, run on both hosts.)
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
	err := s.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	bound := s.Addr()
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
	if n := listens.Load(); n != 1 {
		t.Errorf("Listen called %d times, want 1", n)
	}
	if c, err := net.DialTimeout("tcp", bound.String(), guard); err == nil {
		c.Close()
		t.Error("still listening after Stop")
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
	err := s.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	bound := s.Addr()
	go func() {
		if resp, err := http.Get("http://" + bound.String() + "/"); err == nil {
			resp.Body.Close()
		}
	}()
	<-entered
	began := time.Now()
	if err := s.Stop(t.Context()); !errors.Is(err, engine.ErrStopTimeout) {
		t.Fatalf("Stop: %v, want ErrStopTimeout", err)
	}
	if d := time.Since(began); d < stopTimeout {
		t.Errorf("Stop returned ErrStopTimeout after %v, before the %v timeout", d, stopTimeout)
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
	if err := s.Start(t.Context()); err != nil {
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

// TestCallsEndAtEngineShutdown: a call in flight ends when the engine shuts
// down, answered with the shutting-down tool error, whether the Handler is
// the Server's own (its requests' contexts derive from the engine's base)
// or mounted in a host's own mux on a plain http.Server, whose contexts
// know nothing of the engine (docs/SPEC.md §3 "Ending", §5).
func TestCallsEndAtEngineShutdown(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(t *testing.T, eng *engine.Engine) string // the address serving eng
	}{
		{"Server.NewHandler", func(t *testing.T, eng *engine.Engine) string {
			var framing *streamable.Handler
			s, err := streamable.NewServer(streamable.ServerOptions{Name: "test", Engine: eng, Conns: streamable.ConnLimits{Total: 4},
				Listen: func() (net.Listener, error) { return net.Listen("tcp4", "127.0.0.1:0") },
				Admit:  func(netip.AddrPort) http.Handler { return framing }})
			if err != nil {
				t.Fatal(err)
			}
			if framing, err = s.NewHandler(streamable.Options{}); err != nil {
				t.Fatal(err)
			}
			if err := s.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Stop(context.Background()) })
			return s.Addr().String()
		}},
		{"NewHandler in a host's mux", func(t *testing.T, eng *engine.Engine) string {
			framing, err := streamable.NewHandler(eng, streamable.Options{})
			if err != nil {
				t.Fatal(err)
			}
			mux := http.NewServeMux()
			mux.Handle("/mcp", framing)
			srv := httptest.NewServer(mux)
			t.Cleanup(srv.Close)
			return srv.Listener.Addr().String()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fake.New()
			eng := newEngine(t, s)
			addr := tc.serve(t, eng)
			t.Cleanup(s.Release) // runs first: a call left running would hold the server's Close
			started := s.Started()
			answered := make(chan []byte, 1)
			go func() {
				req, _ := http.NewRequest("POST", "http://"+addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow"}}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", jsonSSE)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					answered <- nil
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				answered <- b
			}()
			<-started
			ctx, cancel := context.WithTimeout(context.Background(), guard) // a hang guard, not a bound
			defer cancel()
			if err := eng.Shutdown(ctx); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			var b []byte
			select {
			case b = <-answered:
			case <-time.After(guard):
				t.Fatal("the call did not end at Engine.Shutdown")
			}
			var res struct {
				Content []struct{ Text string } `json:"content"`
				IsError bool                    `json:"isError"`
			}
			r := decode(t, b)
			if err := json.Unmarshal(r.Result, &res); err != nil || !res.IsError || len(res.Content) != 1 || res.Content[0].Text != "server is shutting down" {
				t.Errorf("answer %s, want the shutting-down tool error", b)
			}
			http.DefaultClient.CloseIdleConnections()
		})
	}
}
