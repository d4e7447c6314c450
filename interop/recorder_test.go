package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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
	incoming []*jsonrpc.Request // requests and notifications the server sent
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

// serverRequests returns the requests and notifications the server sent
// the client, in order.
func (t *recordingTransport) serverRequests() []*jsonrpc.Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]*jsonrpc.Request(nil), t.incoming...)
}

// dump renders the recorded traffic for a failure log: each message the
// client sent with the response it got, then what the server sent on its own.
func (t *recordingTransport) dump() string {
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
	if err != nil {
		return msg, err
	}
	c.t.mu.Lock()
	switch m := msg.(type) {
	case *jsonrpc.Response:
		c.t.received = append(c.t.received, m)
	case *jsonrpc.Request:
		c.t.incoming = append(c.t.incoming, m)
	}
	c.t.mu.Unlock()
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
