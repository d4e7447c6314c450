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
	// Workload is the request every call sends; the zero value means
	// wire.Echo.
	Workload wire.Workload
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
	h := newHTTPLoad(t)
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
			if h.want, err = h.t.Workload.Expect(text); err != nil {
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

// newHTTPLoad prepares a load on t without connections.
func newHTTPLoad(t HTTPTarget) *HTTPLoad {
	if t.Workload.Name == "" {
		t.Workload = wire.Echo
	}
	h := &HTTPLoad{t: t}
	h.head = fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: %s\r\n", t.Path, t.Host)
	for _, kv := range append(t.Workload.HTTPHeaders(t.Modern), t.Header...) {
		h.head = fmt.Appendf(h.head, "%s: %s\r\n", kv[0], kv[1])
	}
	return h
}

// CreateTask creates the task a wire.TasksGet workload reads (2026-07-28):
// it sends wire.TaskCreate to t, then polls tasks/get until the task has
// completed (the workspace rows' turn answers at once; the bound is only
// against a server that never finishes it), and returns its id.
func CreateTask(t HTTPTarget) (string, error) {
	if !t.Modern {
		return "", errors.New("load: tasks/get is measured on the 2026-07-28 wire only")
	}
	create := t
	create.Workload = wire.TaskCreate
	conn := &httpConn{h: newHTTPLoad(create)}
	if err := conn.dial(); err != nil {
		return "", err
	}
	defer func() {
		if conn.nc != nil {
			conn.nc.Close()
		}
	}()
	msg, err := conn.roundTrip(1, conn.h.token())
	if err != nil {
		return "", fmt.Errorf("creating the task: %w", err)
	}
	id, err := wire.TaskID(msg, 1)
	if err != nil {
		return "", err
	}
	get := t
	get.Workload = wire.TasksGet(id)
	conn.h = newHTTPLoad(get)
	deadline := time.Now().Add(callTimeout)
	for n := int64(2); ; n++ {
		msg, err := conn.roundTrip(n, conn.h.token())
		if err != nil {
			return "", fmt.Errorf("reading the task: %w", err)
		}
		if _, err = get.Workload.Text(msg, n); err == nil {
			return id, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the task did not complete: %w", err)
		}
	}
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

// call posts the workload's request and returns the checked answer's
// text.
func (c *httpConn) call(id int64, token string) (string, error) {
	msg, err := c.roundTrip(id, token)
	if err != nil {
		return "", err
	}
	return c.h.t.Workload.Text(msg, id)
}

// roundTrip posts the workload's request and returns the JSON-RPC answer
// (valid until the next round trip).
func (c *httpConn) roundTrip(id int64, token string) ([]byte, error) {
	if c.nc == nil { // the server closed the previous connection
		if err := c.dial(); err != nil {
			return nil, err
		}
		c.h.reconnects.Add(1)
	}
	c.body = c.h.t.Workload.AppendRequest(c.body[:0], id, c.h.t.Modern)
	req := append(c.req[:0], c.h.head...)
	if token != "" {
		req = append(append(append(req, "Authorization: Bearer "...), token...), "\r\n"...)
	}
	req = append(req, "Content-Length: "...)
	req = strconv.AppendInt(req, int64(len(c.body)), 10)
	req = append(append(req, "\r\n\r\n"...), c.body...)
	c.req = req

	if err := c.nc.SetDeadline(time.Now().Add(callTimeout)); err != nil {
		return nil, err
	}
	if _, err := c.nc.Write(req); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	c.resp.Reset()
	_, err = c.resp.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the answer's body: %w", err)
	}
	if resp.Close {
		c.nc.Close()
		c.nc = nil
	}
	return wire.HTTPAnswer(resp.StatusCode, resp.Header.Get("Content-Type"), c.resp.Bytes())
}
