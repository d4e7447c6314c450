// Package pipecarrier is the smallest stream carrier: one in-memory
// connection (two net.Pipes, one each way, so the client can end its
// output and still read the answers) served by an agentmcp engine, with the
// lifecycle every carrier keeps (docs/SPEC.md §5 of agentmcp: Start once,
// Stop safe to repeat and before Start, Wait for the end), which
// engine.Lifecycle implements: the carrier supplies only how it serves. A
// test dials it with Client; a real carrier would accept connections from a
// listener instead.
package pipecarrier

import (
	"context"
	"errors"
	"net"

	"github.com/agentmcp/agentmcp/engine"
)

var _ engine.Carrier = (*Carrier)(nil)

// Carrier serves one net.Pipe connection. Start, Stop and Wait are its
// Lifecycle's; their errors are named "pipecarrier: …" (errors.Is matches
// engine.ErrAlreadyStarted and engine.ErrStopped).
type Carrier struct {
	*engine.Lifecycle
	eng    *engine.Engine
	client *Client
	in     net.Conn // the server's reading end
	out    net.Conn // the server's writing end
}

// New builds a carrier over eng; nothing is served until Start. A nil
// engine is an error.
func New(eng *engine.Engine) (*Carrier, error) {
	if eng == nil {
		return nil, errors.New("pipecarrier: nil engine")
	}
	cw, sr := net.Pipe() // client → server
	sw, cr := net.Pipe() // server → client
	c := &Carrier{eng: eng, client: &Client{r: cr, w: cw}, in: sr, out: sw}
	// No stop timeout of its own: ServeConn bounds the drain.
	c.Lifecycle = engine.NewLifecycle("pipecarrier", c.serve, 0)
	return c, nil
}

// serve hands the connection to the engine, which validates the catalog,
// calls ready and serves until the client ends its output or ctx (Stop)
// ends.
func (c *Carrier) serve(ctx context.Context, ready func()) error {
	defer c.out.Close() // the client reads the end
	defer c.in.Close()
	return c.eng.ServeConn(ctx, c.in, c.out, engine.ConnOptions{Ready: ready, Close: c.in.Close})
}

// Client is the client's end of the connection.
func (c *Carrier) Client() *Client { return c.client }

// Client is the client's end: it writes the client's lines and reads the
// server's.
type Client struct {
	r, w net.Conn
}

func (c *Client) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *Client) Write(p []byte) (int, error) { return c.w.Write(p) }

// CloseWrite ends the client's output: the server reads the end of input,
// drains, and then ends the client's input.
func (c *Client) CloseWrite() error { return c.w.Close() }

// Close ends both directions.
func (c *Client) Close() error { return errors.Join(c.w.Close(), c.r.Close()) }
