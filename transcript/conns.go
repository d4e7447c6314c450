package transcript

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// StreamConn is the client's end of a stream carrier (stdio, a Unix-socket
// connection): lines written to In, messages read from Out one per line.
// End blocks until the server has ended serving and returns its result;
// Stop stops it at once (a failed run).
type StreamConn struct {
	In   io.WriteCloser
	Out  io.Reader
	End  func() error
	Stop func()

	once sync.Once
	rd   *bufio.Reader
}

var _ Conn = (*StreamConn)(nil)

func (c *StreamConn) Send(p []byte) error { _, err := c.In.Write(p); return err }
func (c *StreamConn) CloseSend() error    { return c.In.Close() }
func (c *StreamConn) Wait() error         { return c.End() }
func (c *StreamConn) Abort()              { c.once.Do(c.Stop) }

func (c *StreamConn) Recv() ([]byte, error) {
	if c.rd == nil {
		c.rd = bufio.NewReaderSize(c.Out, 1<<20)
	}
	line, err := c.rd.ReadBytes('\n')
	switch {
	case err == nil:
		return line[:len(line)-1], nil
	case errors.Is(err, io.EOF) && len(line) > 0:
		return nil, errors.New("the output ended inside a line (no newline after the last message)")
	default:
		return nil, err
	}
}

// HTTPTarget is a started Streamable HTTP host for [NewHTTPConn].
type HTTPTarget struct {
	// URL is where requests go (the host's listener); Host, when set, is
	// the Host header they carry (the remote host's public host).
	URL, Host string
	// Token is the bearer credential every request carries
	// (Authorization: Bearer Token), unless Credential is set.
	Token string
	// Credential, when set, puts the credential on every request instead
	// (a host with its own admission: a cookie, a signed header, an OAuth
	// access token from the test's issuer).
	Credential func(r *http.Request)
	// Stop ends the host and what it served (the host's Stop, then the
	// engine's Shutdown); the connection's Wait returns its error with
	// Wait's, the host's result.
	Stop func(ctx context.Context) error
	Wait func() error
}

// NewHTTPConn plays a client of t: complete lines become POSTs. A tools/call
// is sent on its own goroutine (it may block until a later step), and so is
// a subscriptions/listen, whose event stream lasts until CloseSend closes
// it (as a client going away closes its streams: the stream's end of stdin
// on HTTP); everything else waits for its answer, so that answers without
// an id keep their order. After an initialize, requests carry the negotiated revision
// in MCP-Protocol-Version; modern requests carry the headers mirroring their
// body, as a conforming client sends them.
func NewHTTPConn(t HTTPTarget) Conn {
	ctx, cancel := context.WithCancel(context.Background())
	listenCtx, closeListens := context.WithCancel(ctx)
	tr := &http.Transport{}
	return &httpConn{target: t, ctx: ctx, cancel: cancel, listenCtx: listenCtx, closeListens: closeListens,
		tr: tr, client: &http.Client{Transport: tr}, changed: make(chan struct{}), stopped: make(chan struct{})}
}

type httpConn struct {
	target HTTPTarget
	ctx    context.Context
	cancel context.CancelFunc
	tr     *http.Transport
	client *http.Client

	partial  []byte
	version  string // negotiated by the last initialize; "" before
	inflight sync.WaitGroup
	// listens are the subscriptions/listen requests in flight, on
	// listenCtx, which CloseSend ends.
	listens      sync.WaitGroup
	listenCtx    context.Context
	closeListens context.CancelFunc

	mu      sync.Mutex // guards msgs, ended, changed
	msgs    [][]byte
	ended   bool
	changed chan struct{}

	stopOnce sync.Once
	stopErr  error // Stop's, once stopped is closed
	stopped  chan struct{}
}

func (c *httpConn) Send(p []byte) error {
	c.partial = append(c.partial, p...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			return nil
		}
		line := bytes.TrimRight(c.partial[:i], "\r")
		c.partial = c.partial[i+1:]
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		c.post(append([]byte(nil), line...))
	}
}

// lineInfo is what a conforming client knows of the message it sends.
type lineInfo struct {
	method, name, modernVersion      string
	modern, call, listen, initialize bool
}

func inspect(line []byte) lineInfo {
	var m struct {
		Method json.RawMessage `json:"method"`
		Params struct {
			Name   json.RawMessage            `json:"name"`
			TaskID json.RawMessage            `json:"taskId"`
			URI    json.RawMessage            `json:"uri"`
			Meta   map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	var li lineInfo
	if json.Unmarshal(line, &m) != nil {
		return li
	}
	_ = json.Unmarshal(m.Method, &li.method)
	_ = json.Unmarshal(m.Params.Name, &li.name)
	if strings.HasPrefix(li.method, "tasks/") {
		_ = json.Unmarshal(m.Params.TaskID, &li.name) // SEP-2663: Mcp-Name is the taskId
	}
	if li.method == "resources/read" {
		_ = json.Unmarshal(m.Params.URI, &li.name) // Mcp-Name is the resource's uri
	}
	if v, ok := m.Params.Meta["io.modelcontextprotocol/protocolVersion"]; ok {
		li.modern = true
		_ = json.Unmarshal(v, &li.modernVersion)
	}
	li.call = li.method == "tools/call"
	li.listen = li.method == "subscriptions/listen" && li.modern
	li.initialize = li.method == "initialize" && !li.modern
	return li
}

func (c *httpConn) post(line []byte) {
	li := inspect(line)
	ctx := c.ctx
	if li.listen {
		ctx = c.listenCtx
	}
	req, _ := http.NewRequestWithContext(ctx, "POST", c.target.URL, bytes.NewReader(line))
	if c.target.Host != "" {
		req.Host = c.target.Host
	}
	if c.target.Credential != nil {
		c.target.Credential(req)
	} else {
		req.Header.Set("Authorization", "Bearer "+c.target.Token)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	switch {
	case li.modern:
		req.Header.Set("MCP-Protocol-Version", li.modernVersion)
		req.Header.Set("Mcp-Method", li.method)
		if li.call || strings.HasPrefix(li.method, "tasks/") || li.method == "resources/read" || li.method == "prompts/get" {
			req.Header.Set("Mcp-Name", li.name)
		}
	case c.version != "":
		req.Header.Set("MCP-Protocol-Version", c.version)
	}
	switch {
	case li.call:
		c.inflight.Go(func() { c.exchange(req, li) })
		return
	case li.listen:
		c.listens.Go(func() { c.exchange(req, li) })
		return
	}
	c.exchange(req, li)
}

func (c *httpConn) exchange(req *http.Request, li lineInfo) {
	resp, err := c.client.Do(req)
	if err != nil {
		return // aborted
	}
	defer resp.Body.Close()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 8<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				c.add([]byte(data))
			}
		}
		return
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil || len(b) == 0 {
		return
	}
	if li.initialize && resp.StatusCode == 200 {
		var r struct {
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
		}
		if json.Unmarshal(b, &r) == nil && r.Result.ProtocolVersion != "" {
			c.version = r.Result.ProtocolVersion
		}
	}
	c.add(b)
}

func (c *httpConn) add(m []byte) {
	c.mu.Lock()
	c.msgs = append(c.msgs, m)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// CloseSend closes the listen streams, waits for the calls in flight to
// be answered, then stops the host (the HTTP counterpart of stdin's end).
func (c *httpConn) CloseSend() error {
	c.closeListens()
	go func() {
		c.listens.Wait()
		c.inflight.Wait()
		c.stop()
	}()
	return nil
}

func (c *httpConn) stop() {
	c.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.stopErr = c.target.Stop(ctx)
		c.inflight.Wait()
		c.listens.Wait()
		c.tr.CloseIdleConnections()
		c.mu.Lock()
		c.ended = true
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
		close(c.stopped)
	})
}

func (c *httpConn) Recv() ([]byte, error) {
	for {
		c.mu.Lock()
		if len(c.msgs) > 0 {
			m := c.msgs[0]
			c.msgs = c.msgs[1:]
			c.mu.Unlock()
			return m, nil
		}
		if c.ended {
			c.mu.Unlock()
			return nil, io.EOF
		}
		ch := c.changed
		c.mu.Unlock()
		<-ch
	}
}

// Wait returns once the host has stopped: Stop's error (the engine's
// Shutdown's among them) with the host's Wait.
func (c *httpConn) Wait() error {
	<-c.stopped
	return errors.Join(c.stopErr, c.target.Wait())
}

func (c *httpConn) Abort() {
	c.cancel()
	c.stop()
}
