package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/conformance/proxy"
)

const token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

type seen struct {
	host, origin, auth, target string
	hasOrigin                  bool
}

// start runs backend behind a proxy and returns the proxy's front host:port
// and the backend's.
func start(t *testing.T, backend http.HandlerFunc) (front, back string) {
	t.Helper()
	be := httptest.NewServer(backend)
	t.Cleanup(be.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front = ln.Addr().String()
	h, err := proxy.New(proxy.Options{Front: front, Backend: be.URL + "/mcp", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return front, strings.TrimPrefix(be.URL, "http://")
}

func TestHostOriginAndToken(t *testing.T) {
	got := make(chan seen, 1)
	front, back := start(t, func(w http.ResponseWriter, r *http.Request) {
		o, has := r.Header["Origin"]
		s := seen{host: r.Host, auth: r.Header.Get("Authorization"), target: r.RequestURI, hasOrigin: has}
		if has {
			s.origin = o[0]
		}
		got <- s
		w.WriteHeader(http.StatusAccepted)
	})
	cases := []struct {
		name, host, origin, target string
		want                       seen
	}{
		{"own host and origin are mapped", front, "http://" + front, "/mcp",
			seen{host: back, origin: "http://" + back, hasOrigin: true, target: "/mcp"}},
		{"own host, no origin", front, "", "/mcp",
			seen{host: back, target: "/mcp"}},
		{"foreign host and origin pass through", "evil.example.com", "http://evil.example.com", "/mcp",
			seen{host: "evil.example.com", origin: "http://evil.example.com", hasOrigin: true, target: "/mcp"}},
		{"own host, foreign origin passes through", front, "http://evil.example.com", "/mcp",
			seen{host: back, origin: "http://evil.example.com", hasOrigin: true, target: "/mcp"}},
		{"localhost is not the proxy's own host", "localhost:" + strings.Split(front, ":")[1], "", "/mcp",
			seen{host: "localhost:" + strings.Split(front, ":")[1], target: "/mcp"}},
		{"target passes unchanged", front, "", "/mcp/?x=1",
			seen{host: back, target: "/mcp/?x=1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", "http://"+front+c.target, strings.NewReader(`{}`))
			req.Host = c.host
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			req.Header.Set("Authorization", "Bearer client-sent-this")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("status %d", resp.StatusCode)
			}
			s := <-got
			c.want.auth = "Bearer " + token
			if s != c.want {
				t.Errorf("backend saw %+v\nwant          %+v", s, c.want)
			}
		})
	}
}

// TestStreams: an SSE event reaches the client while the backend is still
// writing, and a client that goes away cancels the backend's request.
func TestStreams(t *testing.T) {
	release := make(chan struct{})
	cancelled := make(chan struct{})
	front, _ := start(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\ndata: {\"n\":1}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
			io.WriteString(w, "event: message\ndata: {\"n\":2}\n\n")
		case <-r.Context().Done():
			close(cancelled)
		}
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+front+"/mcp", strings.NewReader(`{}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line := make(chan string, 1)
	go func() {
		br := bufio.NewReader(resp.Body)
		br.ReadString('\n') // event:
		l, _ := br.ReadString('\n')
		line <- l
	}()
	select {
	case l := <-line:
		if !strings.Contains(l, `{"n":1}`) {
			t.Fatalf("first data line %q", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first SSE event did not stream through before the response ended")
	}
	cancel()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the client's disconnect did not cancel the backend request")
	}
	close(release)
}

func TestNewRefusesBadOptions(t *testing.T) {
	for _, o := range []proxy.Options{
		{Front: "127.0.0.1:1", Backend: "https://127.0.0.1:2/mcp", Token: token},
		{Front: "127.0.0.1:1", Backend: "::", Token: token},
		{Front: "nonsense", Backend: "http://127.0.0.1:2/mcp", Token: token},
		{Front: "127.0.0.1:1", Backend: "http://127.0.0.1:2/mcp"},
	} {
		if _, err := proxy.New(o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
}

// TestBodiesForwardedAsSent: the proxy reads a body before forwarding it
// (bodyInMemory), and the host still gets it as the client sent it: the
// same bytes, the declared length or chunked framing, and a body too large
// to hold streamed through whole.
func TestBodiesForwardedAsSent(t *testing.T) {
	type got struct {
		body          []byte
		contentLength int64
		chunked       bool
	}
	gotc := make(chan got, 1)
	front, _ := start(t, func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		gotc <- got{b, r.ContentLength, len(r.TransferEncoding) == 1 && r.TransferEncoding[0] == "chunked"}
	})
	small := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	large := bytes.Repeat([]byte("x"), 9<<20) // over what the proxy holds in memory
	for _, c := range []struct {
		name    string
		body    []byte
		chunked bool
	}{
		{"declared length", small, false},
		{"chunked", small, true},
		{"declared length, too large to hold", large, false},
		{"chunked, too large to hold", large, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var body io.Reader = bytes.NewReader(c.body)
			if c.chunked {
				body = io.MultiReader(body) // no known length: sent chunked
			}
			req, err := http.NewRequest("POST", "http://"+front+"/mcp", body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			g := <-gotc
			if !bytes.Equal(g.body, c.body) {
				t.Errorf("the host got %d bytes, want the %d sent", len(g.body), len(c.body))
			}
			if c.chunked {
				if !g.chunked || g.contentLength != -1 {
					t.Errorf("the host got Content-Length %d, chunked %v; want a chunked body", g.contentLength, g.chunked)
				}
			} else if g.chunked || g.contentLength != int64(len(c.body)) {
				t.Errorf("the host got Content-Length %d, chunked %v; want %d", g.contentLength, g.chunked, len(c.body))
			}
		})
	}
}

// TestReplicasInTurn: with two upstreams every request goes to the other
// one than the request before, its own Host and Origin mapped to that
// upstream's (a loopback host admits only its own), and the response says
// which answered.
func TestReplicasInTurn(t *testing.T) {
	type hit struct{ name, host, origin string }
	got := make(chan hit, 16)
	var backs []string
	for _, name := range []string{"a", "b"} {
		be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got <- hit{name, r.Host, r.Header.Get("Origin")}
			w.WriteHeader(http.StatusAccepted)
		}))
		t.Cleanup(be.Close)
		backs = append(backs, be.URL+"/mcp")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := ln.Addr().String()
	h, err := proxy.New(proxy.Options{Front: front, Backends: backs, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	for i := range 6 {
		req, _ := http.NewRequest("POST", "http://"+front+"/mcp", strings.NewReader(`{}`))
		req.Header.Set("Origin", "http://"+front)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		h := <-got
		want := []string{"a", "b"}[i%2]
		be := strings.TrimSuffix(strings.TrimPrefix(backs[i%2], "http://"), "/mcp")
		if h.name != want || h.host != be || h.origin != "http://"+be || resp.Header.Get("X-Proxy-Upstream") != be {
			t.Errorf("request %d reached %s with Host %q, Origin %q, answered as %q; want %s with %s's own", i, h.name, h.host, h.origin,
				resp.Header.Get("X-Proxy-Upstream"), want, be)
		}
	}
}
