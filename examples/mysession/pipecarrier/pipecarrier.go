// Package pipecarrier is the smallest stream carrier: one in-memory
// connection (two net.Pipes, one each way, so the client can end its
// output and still read the answers) served by an agentmcp engine, with the lifecycle
// every carrier keeps (docs/SPEC.md §5 of agentmcp): Start once, Stop safe
// to repeat and before Start, Wait for the end. A test dials it with
// Client; a real carrier would accept connections from a listener instead.
package pipecarrier

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/agentmcp/agentmcp/engine"
)

// Errors of the lifecycle: engine's shared ones, with this carrier's name
// (errors.Is matches engine.ErrAlreadyStarted and engine.ErrStopped).
var (
	ErrAlreadyStarted = fmt.Errorf("pipecarrier: %w", engine.ErrAlreadyStarted)
	ErrStopped        = fmt.Errorf("pipecarrier: %w", engine.ErrStopped)
)

var _ engine.Carrier = (*Carrier)(nil)

// Carrier serves one net.Pipe connection.
type Carrier struct {
	eng    *engine.Engine
	client *Client
	in     net.Conn // the server's reading end
	out    net.Conn // the server's writing end
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	started bool
	stopped bool
	end     sync.Once
	done    chan struct{} // closed when the carrier has ended
	err     error         // why, set before done is closed
}

// finish ends the carrier once, with err as Wait's result.
func (c *Carrier) finish(err error) {
	c.end.Do(func() { c.err = err; close(c.done) })
}

// New builds a carrier over eng; nothing is served until Start. A nil
// engine is an error.
func New(eng *engine.Engine) (*Carrier, error) {
	if eng == nil {
		return nil, errors.New("pipecarrier: nil engine")
	}
	cw, sr := net.Pipe() // client → server
	sw, cr := net.Pipe() // server → client
	ctx, cancel := context.WithCancel(context.Background())
	return &Carrier{eng: eng, client: &Client{r: cr, w: cw}, in: sr, out: sw, ctx: ctx, cancel: cancel, done: make(chan struct{})}, nil
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

// Start validates the catalog and begins serving; it returns once the
// engine serves frames, or with why it could not.
func (c *Carrier) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return ErrAlreadyStarted
	}
	c.started = true
	if c.stopped {
		c.mu.Unlock()
		return ErrStopped
	}
	c.mu.Unlock()
	ready := make(chan struct{})
	go func() {
		err := c.eng.ServeConn(c.ctx, c.in, c.out, engine.ConnOptions{
			Ready: func() { close(ready) },
			Close: c.in.Close,
		})
		if errors.Is(err, engine.ErrInputClosed) {
			err = nil
		}
		c.in.Close()
		c.out.Close() // the client reads the end
		c.finish(err)
	}()
	select {
	case <-ready:
		return nil
	case <-c.done:
		if c.err != nil {
			return c.err
		}
		return ErrStopped
	case <-ctx.Done():
		c.cancel()
		<-c.done
		return ctx.Err()
	}
}

// Stop ends serving and waits for it, or for ctx. It is safe to repeat,
// to call concurrently and before Start.
func (c *Carrier) Stop(ctx context.Context) error {
	c.mu.Lock()
	c.stopped = true
	started := c.started
	c.mu.Unlock()
	c.cancel()
	if !started {
		c.client.Close()
		c.in.Close()
		c.out.Close()
		c.finish(nil)
		return nil
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Wait blocks until serving has ended: nil after Stop or when the client
// closed its end, else the failure.
func (c *Carrier) Wait() error {
	<-c.done
	return c.err
}
