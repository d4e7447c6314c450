package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wireRecorder records every JSON-RPC message a go-sdk client writes and
// reads, so a test can see what went over the wire (which handshake the
// client really used, the _meta it sent, the results it got).
//
// On stdio it is fed by recordingTransport, which wraps the client's
// transport. Over HTTP it is fed by exchangeRecorder, from the request and
// response bodies under the client's http.Client, and the client uses its
// StreamableClientTransport unwrapped: go-sdk v1.8.0 tells its streamable
// connection the negotiated version through an unexported method (the
// unexported clientConnection interface), which a wrapping Connection
// hides, so a wrapped legacy client would drop its MCP-Protocol-Version
// header and its standalone SSE GET, and would no longer be the real client.
type wireRecorder struct {
	mu       sync.Mutex
	sent     []*jsonrpc.Request
	received []*jsonrpc.Response
	incoming []*jsonrpc.Request // requests and notifications the server sent
}

// wrote records a message the client sent (its own requests and
// notifications; its answers to the server are not kept).
func (t *wireRecorder) wrote(msg jsonrpc.Message) {
	if req, ok := msg.(*jsonrpc.Request); ok {
		t.mu.Lock()
		t.sent = append(t.sent, req)
		t.mu.Unlock()
	}
}

// read records a message the client received.
func (t *wireRecorder) read(msg jsonrpc.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch m := msg.(type) {
	case *jsonrpc.Response:
		t.received = append(t.received, m)
	case *jsonrpc.Request:
		t.incoming = append(t.incoming, m)
	}
}

// recordingTransport wraps a client transport and records every message on
// its connections in wire.
type recordingTransport struct {
	inner mcp.Transport
	wire  *wireRecorder
}

func (t *recordingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recordingConn{Connection: conn, wire: t.wire}, nil
}

// requests returns the requests and notifications the client sent, in order.
func (t *wireRecorder) requests() []*jsonrpc.Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*jsonrpc.Request(nil), t.sent...)
}

// serverRequests returns the requests and notifications the server sent
// the client, in order.
func (t *wireRecorder) serverRequests() []*jsonrpc.Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*jsonrpc.Request(nil), t.incoming...)
}

// dump renders the recorded traffic for a failure log: each message the
// client sent with the response it got, then what the server sent on its own.
func (t *wireRecorder) dump() string {
	var b strings.Builder
	for _, req := range t.requests() {
		fmt.Fprintf(&b, "-> %s id=%v %s\n", req.Method, req.ID.Raw(), req.Params)
		if resp, ok := t.responseTo(req); ok && req.ID.IsValid() {
			if resp.Error != nil {
				fmt.Fprintf(&b, "<- error %v\n", resp.Error)
			} else {
				fmt.Fprintf(&b, "<- %s\n", resp.Result)
			}
		}
	}
	for _, req := range t.serverRequests() {
		fmt.Fprintf(&b, "<= %s id=%v %s\n", req.Method, req.ID.Raw(), req.Params)
	}
	return b.String()
}

// methods returns the methods of the messages the client sent, in order.
func (t *wireRecorder) methods() []string {
	var ms []string
	for _, r := range t.requests() {
		ms = append(ms, r.Method)
	}
	return ms
}

// responseTo returns the response the client received for req, if any.
func (t *wireRecorder) responseTo(req *jsonrpc.Request) (*jsonrpc.Response, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.received {
		if r.ID == req.ID {
			return r, true
		}
	}
	return nil, false
}

type recordingConn struct {
	mcp.Connection
	wire *wireRecorder
}

func (c *recordingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.wire.read(msg)
	}
	return msg, err
}

func (c *recordingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.wire.wrote(msg)
	return c.Connection.Write(ctx, msg)
}

// recordBody wraps an HTTP response body so that every JSON-RPC message in
// it reaches wire.read as the client reads it: a whole application/json
// body once it is read to its end, each text/event-stream event's data as
// soon as the event's closing blank line has been read (so before the
// client can act on it).
func recordBody(body io.ReadCloser, contentType string, wire *wireRecorder) io.ReadCloser {
	mt, _, _ := mime.ParseMediaType(contentType)
	return &bodyRecorder{ReadCloser: body, sse: mt == "text/event-stream", wire: wire}
}

type bodyRecorder struct {
	io.ReadCloser
	sse  bool
	wire *wireRecorder

	buf  []byte   // JSON: the body so far; SSE: the unfinished line
	data []string // SSE: the data lines of the current event
	done bool
}

func (b *bodyRecorder) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.buf = append(b.buf, p[:n]...)
	if b.sse {
		for {
			i := bytes.IndexByte(b.buf, '\n')
			if i < 0 {
				break
			}
			line := strings.TrimSuffix(string(b.buf[:i]), "\r")
			b.buf = b.buf[i+1:]
			switch {
			case line == "":
				b.flushEvent()
			case strings.HasPrefix(line, "data:"):
				b.data = append(b.data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			}
		}
	}
	if err == io.EOF {
		b.finish()
	}
	return n, err
}

func (b *bodyRecorder) flushEvent() {
	if len(b.data) > 0 {
		b.decode([]byte(strings.Join(b.data, "\n")))
	}
	b.data = nil
}

// finish records what an ended body still holds.
func (b *bodyRecorder) finish() {
	if b.done {
		return
	}
	b.done = true
	if b.sse {
		b.flushEvent()
	} else if len(bytes.TrimSpace(b.buf)) > 0 {
		b.decode(b.buf)
	}
}

func (b *bodyRecorder) decode(data []byte) {
	if msg, err := jsonrpc.DecodeMessage(data); err == nil {
		b.wire.read(msg)
	}
}

// paramsMeta returns params._meta of req (nil when absent).
func paramsMeta(req *jsonrpc.Request) (map[string]json.RawMessage, error) {
	if len(req.Params) == 0 {
		return nil, nil
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return nil, err
	}
	return p.Meta, nil
}
