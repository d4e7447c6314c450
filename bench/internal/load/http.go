package load

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmcp/agentmcp/bench/internal/wire"
)

// HTTPTarget is a Streamable HTTP endpoint on 127.0.0.1.
type HTTPTarget struct {
	// Addr is the listener, "127.0.0.1:<port>".
	Addr string
	// Path is the request target, "/mcp".
	Path string
	// Host is the Host header.
	Host string
	// Header holds extra headers sent with every request.
	Header [][2]string
	// Modern picks the 2026-07-28 wire; else 2025-11-25.
	Modern bool
	// Tokens, when set, gives the bearer token of every request (after the
	// ones in Header, which should then hold no Authorization).
	Tokens Tokens
}

// Tokens gives the bearer token of the n-th request (n counts from 1 over
// the whole load, warm-up included).
type Tokens interface{ Token(n uint64) string }

// TokenPool cycles through its tokens in order.
type TokenPool []string

func (p TokenPool) Token(n uint64) string { return p[n%uint64(len(p))] }

// ParseURL splits an http://127.0.0.1:<port>/<path> URL into Addr and Path.
// Only loopback IPv4 targets are accepted: all bench traffic stays on
// 127.0.0.1.
func ParseURL(raw string) (addr, path string, err error) {
	rest, ok := strings.CutPrefix(raw, "http://")
	if !ok {
		return "", "", fmt.Errorf("load: %q is not an http:// URL", raw)
	}
	addr, path, _ = strings.Cut(rest, "/")
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" {
		return "", "", fmt.Errorf("load: %q is not on 127.0.0.1", raw)
	}
	return addr, "/" + path, nil
}

// HTTPLoad is c clients, each with its own kept-alive connection. Requests
// are written as prepared bytes and answers read with net/http's
// ReadResponse: far less client work than an http.Client's transport, so
// the load generator is not what limits the rate.
type HTTPLoad struct {
	t     HTTPTarget
	head  []byte // request line and fixed headers
	conns []*httpConn
	want  string

	ids        atomic.Int64
	tokens     atomic.Uint64
	reconnects atomic.Int64
}

// callTimeout bounds every call: a server that hangs fails the run.
const callTimeout = 30 * time.Second

// DialHTTP opens c connections to t, makes one call on each, and fixes the
// text every later answer must carry from the first (wire.Expect).
func DialHTTP(t HTTPTarget, c int) (*HTTPLoad, error) {
	if c < 1 {
		return nil, errors.New("load: need at least one client")
	}
	h := &HTTPLoad{t: t}
	h.head = fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\n", t.Path, t.Host)
	for _, kv := range append(wire.HTTPHeaders(t.Modern), t.Header...) {
		h.head = fmt.Appendf(h.head, "%s: %s\r\n", kv[0], kv[1])
	}
	for range c {
		conn := &httpConn{h: h}
		if err := conn.dial(); err != nil {
			h.Close()
			return nil, err
		}
		h.conns = append(h.conns, conn)
	}
	for i, conn := range h.conns {
		id := h.ids.Add(1)
		text, err := conn.call(id, h.token())
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("first call on connection %d: %w", i, err)
		}
		if i == 0 {
			if h.want, err = wire.Expect(text); err != nil {
				h.Close()
				return nil, err
			}
		} else if text != h.want {
			h.Close()
			return nil, fmt.Errorf("connection %d: text %q, want %q", i, text, h.want)
		}
	}
	return h, nil
}

// Want is the text every answer carries.
func (h *HTTPLoad) Want() string { return h.want }

func (h *HTTPLoad) token() string {
	if h.t.Tokens == nil {
		return ""
	}
	return h.t.Tokens.Token(h.tokens.Add(1))
}

// Run runs one phase: every client calls in a closed loop until the phase
// is over. The first failed or wrong answer stops all clients and is
// returned.
func (h *HTTPLoad) Run(ctx context.Context, p Phase, w Watch) (Result, error) {
	var (
		stop   atomic.Bool
		issued atomic.Int64
		wg     sync.WaitGroup
		errMu  sync.Mutex
		first  error
	)
	fail := func(err error) {
		errMu.Lock()
		if first == nil {
			first = err
		}
		errMu.Unlock()
		stop.Store(true)
	}
	lats := make([][]time.Duration, len(h.conns))
	reconnects0 := h.reconnects.Load()
	ctxDone := context.AfterFunc(ctx, func() { fail(ctx.Err()) })
	defer ctxDone()

	meter := startCPU(w)
	start := time.Now()
	deadline := start.Add(p.Duration)
	for i, conn := range h.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 1024)
			defer func() { lats[i] = lat }()
			for !stop.Load() {
				if p.Count > 0 {
					if issued.Add(1) > p.Count {
						return
					}
				} else if !time.Now().Before(deadline) {
					return
				}
				id := h.ids.Add(1)
				tok := h.token()
				t0 := time.Now()
				text, err := conn.call(id, tok)
				t1 := time.Now()
				if err == nil && text != h.want {
					err = fmt.Errorf("text %q, want %q", text, h.want)
				}
				if err != nil {
					fail(fmt.Errorf("call %d: %w", id, err))
					return
				}
				lat = append(lat, t1.Sub(t0))
			}
		}()
	}
	wg.Wait()
	end := time.Now()
	cpu := meter.stop()
	if first != nil {
		return Result{}, first
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	r := summarize(all, start, end)
	r.Reconnects = h.reconnects.Load() - reconnects0
	r.CPU = cpu
	return r, nil
}

// Close closes every connection.
func (h *HTTPLoad) Close() {
	for _, c := range h.conns {
		if c.nc != nil {
			c.nc.Close()
			c.nc = nil
		}
	}
}

// httpConn is one client's connection. Only its own goroutine uses it.
type httpConn struct {
	h    *HTTPLoad
	nc   net.Conn
	br   *bufio.Reader
	req  []byte
	body []byte
	resp bytes.Buffer
}

func (c *httpConn) dial() error {
	nc, err := net.DialTimeout("tcp", c.h.t.Addr, 5*time.Second)
	if err != nil {
		return err
	}
	c.nc = nc
	if c.br == nil {
		c.br = bufio.NewReaderSize(nc, 16<<10)
	} else {
		c.br.Reset(nc)
	}
	return nil
}

// call posts one tools/call and returns the checked answer's text.
func (c *httpConn) call(id int64, token string) (string, error) {
	if c.nc == nil { // the server closed the previous connection
		if err := c.dial(); err != nil {
			return "", err
		}
		c.h.reconnects.Add(1)
	}
	c.body = wire.AppendCall(c.body[:0], id, c.h.t.Modern)
	req := append(c.req[:0], c.h.head...)
	if token != "" {
		req = append(append(append(req, "Authorization: Bearer "...), token...), "\r\n"...)
	}
	req = append(req, "Content-Length: "...)
	req = strconv.AppendInt(req, int64(len(c.body)), 10)
	req = append(append(req, "\r\n\r\n"...), c.body...)
	c.req = req

	if err := c.nc.SetDeadline(time.Now().Add(callTimeout)); err != nil {
		return "", err
	}
	if _, err := c.nc.Write(req); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return "", fmt.Errorf("reading the answer: %w", err)
	}
	c.resp.Reset()
	_, err = c.resp.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return "", fmt.Errorf("reading the answer's body: %w", err)
	}
	if resp.Close {
		c.nc.Close()
		c.nc = nil
	}
	msg, err := wire.HTTPAnswer(resp.StatusCode, resp.Header.Get("Content-Type"), c.resp.Bytes())
	if err != nil {
		return "", err
	}
	return wire.CallText(msg, id)
}
