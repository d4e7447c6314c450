package interop

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// recordingTransport wraps a client transport and records every message the
// client writes and reads, so a test can see what went over the wire (which
// handshake the client really used, the _meta it sent, the results it got).
type recordingTransport struct {
	inner mcp.Transport

	mu       sync.Mutex
	sent     []*jsonrpc.Request
	received []*jsonrpc.Response
}

func (t *recordingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recordingConn{Connection: conn, t: t}, nil
}

// requests returns the requests and notifications the client sent, in order.
func (t *recordingTransport) requests() []*jsonrpc.Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*jsonrpc.Request(nil), t.sent...)
}

// methods returns the methods of the messages the client sent, in order.
func (t *recordingTransport) methods() []string {
	var ms []string
	for _, r := range t.requests() {
		ms = append(ms, r.Method)
	}
	return ms
}

// responseTo returns the response the client received for req, if any.
func (t *recordingTransport) responseTo(req *jsonrpc.Request) (*jsonrpc.Response, bool) {
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
	t *recordingTransport
}

func (c *recordingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		c.t.mu.Lock()
		c.t.received = append(c.t.received, resp)
		c.t.mu.Unlock()
	}
	return msg, err
}

func (c *recordingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.t.mu.Lock()
		c.t.sent = append(c.t.sent, req)
		c.t.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
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
