package bench

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"testing"

	"github.com/agentmcp/agentmcp/bench/internal/wire"
)

// These tests run with plain `go test ./...` (no -bench): every server the
// benchmarks measure answers the workload correctly on every transport and
// wire, and the HTTP client really keeps its connection alive. (The checker
// itself is tested in internal/wire, the separate-process rows in
// cmd/benchtable.)

const smokeCalls = 20

func TestStdioServersAnswer(t *testing.T) {
	for _, name := range stdioNames {
		t.Run(name, func(t *testing.T) {
			c, closeAll := openStdio(t, name)
			defer closeAll()
			want := expectText(t, c.call, envelope(name))
			for id := int64(1000); id < 1000+smokeCalls; id++ {
				if got, err := c.call(id); err != nil || got != want {
					t.Fatalf("call %d: %q, %v", id, got, err)
				}
			}
		})
	}
}

func TestHTTPServersAnswer(t *testing.T) {
	for _, w := range wire.Wires {
		for _, name := range httpNames {
			t.Run(w+"/"+name, func(t *testing.T) {
				url, extra, stop := startHTTP(t, name)
				defer stop()
				defer sharedTransport.CloseIdleConnections()
				c := newHTTPClient(url, extra, wire.Modern(w))
				want := expectText(t, c.call, envelope(name))

				// Every call after the warm-up reuses the kept-alive
				// connection: the benchmarks measure no TCP handshakes.
				var fresh atomic.Int32
				trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
					if !i.Reused {
						fresh.Add(1)
					}
				}}
				for id := int64(1000); id < 1000+smokeCalls; id++ {
					got, err := tracedCall(c, id, trace)
					if err != nil || got != want {
						t.Fatalf("call %d: %q, %v", id, got, err)
					}
				}
				if n := fresh.Load(); n != 0 {
					t.Errorf("%d of %d calls opened a new connection", n, smokeCalls)
				}
			})
		}
	}
}

// tracedCall is httpClient.call with a client trace on the request.
func tracedCall(c *httpClient, id int64, trace *httptrace.ClientTrace) (string, error) {
	saved := sharedClient.Transport
	defer func() { sharedClient.Transport = saved }()
	sharedClient.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return saved.RoundTrip(r.WithContext(httptrace.WithClientTrace(context.Background(), trace)))
	})
	return c.call(id)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
