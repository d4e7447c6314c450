package httploopback_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/httploopback"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/enginetest"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
	"github.com/agentmcp/agentmcp/ports"
)

const (
	jsonSSE    = "application/json, text/event-stream"
	modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	ping       = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	// guard bounds every wait of a test on the host: a refusal that waited
	// for a body, or a limit that did not hold, shows up as a timeout.
	guard = 5 * time.Second
)

// newEngine builds the engine for s, shut down within guard when the test
// ends (after the host's Stop: cleanups run last-registered first).
func newEngine(t testing.TB, s ports.Session, opts engine.Options) *engine.Engine {
	t.Helper()
	return enginetest.New(t, s, opts, guard)
}

// env is one started host and a client for it.
type env struct {
	host   *httploopback.Host
	ep     httploopback.Endpoint
	addr   string // 127.0.0.1:<port>
	client *http.Client
}

// start serves session on a free port with limits, and stops it at cleanup.
func start(t *testing.T, session ports.Session, l httploopback.Limits) *env {
	t.Helper()
	leakcheck.Check(t) // first: its cleanup runs after Stop and Shutdown
	return startEngine(t, session, engine.Options{Name: "t", Version: "1"}, l)
}

// startEngine is start with the engine's options, and without the leak
// check (a test that wants one makes it first).
func startEngine(t *testing.T, session ports.Session, opts engine.Options, l httploopback.Limits) *env {
	t.Helper()
	h, err := httploopback.NewWithLimits(newEngine(t, session, opts), httploopback.Options{}, l)
	if err != nil {
		t.Fatal(err)
	}
	err = h.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ep := h.Endpoint()
	tr := &http.Transport{}
	e := &env{host: h, ep: ep, addr: strings.TrimSuffix(strings.TrimPrefix(ep.URL, "http://"), "/mcp"), client: &http.Client{Transport: tr}}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		if err := h.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return e
}

// request builds an admitted POST of body; extra are header name, value
// pairs added to it.
func (e *env) request(ctx context.Context, body string, extra ...string) *http.Request {
	req, err := http.NewRequestWithContext(ctx, "POST", e.ep.URL, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.ep.Token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", jsonSSE)
	for i := 0; i+1 < len(extra); i += 2 {
		req.Header.Set(extra[i], extra[i+1])
	}
	return req
}

// post sends an admitted POST and returns the response and its body.
func (e *env) post(t *testing.T, body string, extra ...string) (*http.Response, []byte) {
	t.Helper()
	resp, err := e.client.Do(e.request(t.Context(), body, extra...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// answer is what postAsync's request got: the status and the whole body,
// or the error that ended it.
type answer struct {
	status int
	body   []byte
	err    error
}

// postAsync sends an admitted POST from its own goroutine and delivers what
// it got on the returned channel, for a test that acts while the request
// is in flight.
func (e *env) postAsync(body string, extra ...string) <-chan answer {
	answered := make(chan answer, 1)
	go func() {
		resp, err := e.client.Do(e.request(context.Background(), body, extra...))
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		answered <- answer{resp.StatusCode, b, err}
	}()
	return answered
}

// modernHeaders are the headers a 2026-07-28 request must carry.
func modernHeaders(method, name string) []string {
	h := []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", method}
	if name != "" {
		h = append(h, "Mcp-Name", name)
	}
	return h
}

// head is an admitted request head (no blank line) for a body of n bytes.
// Each of lines replaces the header lines of its name ("Name: value"),
// deletes them ("Name:"), or, prefixed with "+", adds one more.
func (e *env) head(n int, lines ...string) string {
	return e.headFor("/mcp", n, lines...)
}

func (e *env) headFor(target string, n int, lines ...string) string {
	hdr := []string{
		"Host: " + e.addr,
		"Authorization: Bearer " + e.ep.Token,
		"Content-Type: application/json",
		"Accept: " + jsonSSE,
		fmt.Sprintf("Content-Length: %d", n),
	}
	for _, l := range lines {
		if add, ok := strings.CutPrefix(l, "+"); ok {
			hdr = append(hdr, add)
			continue
		}
		name, value, _ := strings.Cut(l, ":")
		kept := hdr[:0]
		for _, h := range hdr {
			if hn, _, _ := strings.Cut(h, ":"); !strings.EqualFold(hn, name) {
				kept = append(kept, h)
			}
		}
		hdr = kept
		if strings.TrimSpace(value) != "" {
			hdr = append(hdr, l)
		}
	}
	return "POST " + target + " HTTP/1.1\n" + strings.Join(hdr, "\n")
}

// rawConn is a client connection that writes bytes exactly as given.
type rawConn struct {
	net.Conn
	br *bufio.Reader
}

func dial(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{Conn: c, br: bufio.NewReader(c)}
}

// send writes head (with CRLF line ends and the blank line) and body.
func (c *rawConn) send(t *testing.T, head string, body []byte) {
	t.Helper()
	msg := strings.ReplaceAll(head, "\n", "\r\n") + "\r\n\r\n"
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	if len(body) > 0 {
		if _, err := c.Write(body); err != nil {
			t.Fatal(err)
		}
	}
}

// response reads one response within guard; its body is read whole.
func (c *rawConn) response(t *testing.T) (*http.Response, []byte) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(guard))
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("response body: %v", err)
	}
	return resp, b
}

// closed waits (within guard) for the server to close the connection and
// fails if anything but EOF arrives first.
func (c *rawConn) closed(t *testing.T) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(guard))
	b, err := io.ReadAll(c.br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %v", guard)
	}
	if len(b) > 0 {
		t.Fatalf("unexpected bytes before close: %q", b)
	}
}

type rpcReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func decode(t *testing.T, b []byte) rpcReply {
	t.Helper()
	var r rpcReply
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return r
}

// toolText returns the text and isError of a tools/call result.
func toolText(t *testing.T, r rpcReply) (string, bool) {
	t.Helper()
	var res struct {
		Content []struct {
			Type, Text string
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("result %s: %v", r.Result, err)
	}
	return res.Content[0].Text, res.IsError
}

// observed reports the cause with which each slow call ended.
type observed struct {
	*fake.Session
	ended chan error
}

func newObserved() *observed { return &observed{Session: fake.New(), ended: make(chan error, 64)} }

func (o *observed) InvokeTool(ctx context.Context, name string, args json.RawMessage, c ports.Caller) (domain.Envelope, error) {
	env, err := o.Session.InvokeTool(ctx, name, args, c)
	if name == "slow" {
		o.ended <- context.Cause(ctx)
	}
	return env, err
}
