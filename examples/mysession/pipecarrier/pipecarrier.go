// Package pipecarrier is the smallest stream carrier: one in-memory
// connection (net.Pipe) served by an agentmcp engine, with the lifecycle
// every carrier keeps (docs/SPEC.md §5 of agentmcp): Start once, Stop safe
// to repeat and before Start, Wait for the end. A test dials it with
// Client; a real carrier would accept connections from a listener instead.
package pipecarrier

import (
	"context"
	"errors"
	"net"
	"sync"

	"github.com/agentmcp/agentmcp/engine"
)

// Errors of the lifecycle.
var (
	ErrAlreadyStarted = errors.New("pipecarrier: already started")
	ErrStopped        = errors.New("pipecarrier: stopped")
)

// Carrier serves one net.Pipe connection.
type Carrier struct {
	eng            *engine.Engine
	client, server net.Conn
	ctx            context.Context
	cancel         context.CancelFunc

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
	client, server := net.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	return &Carrier{eng: eng, client: client, server: server, ctx: ctx, cancel: cancel, done: make(chan struct{})}, nil
}

// Client is the client's end of the connection.
func (c *Carrier) Client() net.Conn { return c.client }

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
		err := c.eng.ServeConn(c.ctx, c.server, c.server, engine.ConnOptions{
			Ready: func() { close(ready) },
			Close: c.server.Close,
		})
		if errors.Is(err, engine.ErrInputClosed) {
			err = nil
		}
		c.server.Close()
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
		c.server.Close()
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
