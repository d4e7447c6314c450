// Package stdio is agentmcp's stdio carrier: MCP over newline-delimited
// JSON-RPC on a pair of streams, normally the process's own stdin and stdout
// (docs/SPEC.md §5.1; MCP "Transports: stdio").
//
// It is a lifecycle around [engine.Engine.ServeConn], which does the
// framing (a bounded line reader, frames kept during start-up, the
// drain-then-stop order at the end of input). Nothing but MCP messages is
// ever written to stdout; logs go to the engine's Logger.
//
// Lifecycle: the Transport is an [engine.Carrier] (docs/SPEC.md §5): [New]
// → [Transport.Start] → [Transport.Wait] / [Transport.Stop], then the
// engine's Shutdown ([engine.Engine.Run] does the last two in order). A
// Transport serves once.
package stdio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/engine"
)

// Options configures a Transport. Zero values mean the defaults.
type Options struct {
	// Stdin and Stdout default to os.Stdin and os.Stdout.
	Stdin  io.Reader
	Stdout io.Writer
	// MaxLineBytes bounds one incoming message; default 4 MiB.
	MaxLineBytes int
	// MaxInFlight bounds the requests served at once; beyond it a
	// tools/call gets the tool error "server is busy", other requests
	// -32603 (docs/SPEC.md §4). Default 64.
	MaxInFlight int
	// StartTimeout bounds Start; default 15 s.
	StartTimeout time.Duration
	// DrainTimeout is how long calls in flight may finish after stdin ends,
	// and how long Stop waits for them; default 5 s.
	DrainTimeout time.Duration
}

// Transport is the stdio carrier. Its methods are safe for concurrent use.
type Transport struct {
	eng  *engine.Engine
	opts Options

	mu       sync.Mutex
	started  bool
	stopped  bool               // Stop was called
	cancel   context.CancelFunc // ends serving; set by Start
	startErr error              // ctx's error when it cut start-up short
	done     chan struct{}      // closed when serving has ended
	err      error              // why; set before done closes
}

var _ engine.Carrier = (*Transport)(nil)

// New returns a stdio carrier serving eng. It fails when eng is nil.
func New(eng *engine.Engine, opts Options) (*Transport, error) {
	if eng == nil {
		return nil, errors.New("stdio: nil engine")
	}
	if opts.Stdin == nil {
		opts.Stdin = os.Stdin
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	return &Transport{eng: eng, opts: opts, done: make(chan struct{})}, nil
}

// Start validates the session's catalog and returns once the server can
// answer; frames that arrive meanwhile are kept and served in order. It
// fails with an error wrapping [engine.ErrAlreadyStarted] (a second Start),
// a catalog error, or when start-up is cut short: [engine.ErrInputClosed]
// (stdin ended before anything arrived), [engine.ErrStopped] (Stop),
// [engine.ErrStartTimeout] (15 s) or ctx's error (ctx bounds start-up
// only). A failed Start ends the Transport.
func (t *Transport) Start(ctx context.Context) error {
	t.mu.Lock()
	switch {
	case t.stopped:
		t.mu.Unlock()
		return errStopped
	case t.started:
		t.mu.Unlock()
		return errAlreadyStarted
	}
	t.started = true
	serve, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	t.mu.Unlock()

	ready := make(chan struct{})
	served := make(chan error, 1)
	opts := engine.ConnOptions{
		MaxLineBytes: t.opts.MaxLineBytes,
		MaxInFlight:  t.opts.MaxInFlight,
		StartTimeout: t.opts.StartTimeout,
		DrainTimeout: t.opts.DrainTimeout,
		Ready:        func() { close(ready) },
	}
	if c, ok := t.opts.Stdin.(io.Closer); ok && t.opts.Stdin != os.Stdin {
		opts.Close = c.Close // Stop ends the reader too; os.Stdin ends with the process
	}
	go func() {
		err := t.eng.ServeConn(serve, t.opts.Stdin, t.opts.Stdout, opts)
		if err != nil && !errors.Is(err, engine.ErrInputClosed) {
			t.eng.Logger().Error("stdio: serving failed", "err", err)
		}
		served <- err
		t.end(err)
	}()
	select {
	case <-ready:
		return nil
	case err := <-served:
		select {
		case <-ready:
			// It started and has already ended (its input closed at
			// once): that is a start; Wait says how serving ended. Both
			// cases can be ready when this select runs, and it picks
			// either.
			return nil
		default:
		}
		if err == nil {
			return errStopped // Stop ended start-up
		}
		return err
	case <-ctx.Done():
		t.mu.Lock()
		t.startErr = ctx.Err()
		t.mu.Unlock()
		cancel()
		<-t.done
		return ctx.Err()
	}
}

// The shared lifecycle errors, as this carrier reports them.
var (
	errAlreadyStarted = fmt.Errorf("stdio: %w", engine.ErrAlreadyStarted)
	errStopped        = fmt.Errorf("stdio: %w", engine.ErrStopped)
)

// end records why serving ended and releases Wait; a stop or a clean end of
// input is nil, a start-up cut short by its ctx is ctx's error.
func (t *Transport) end(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.startErr != nil:
		err = t.startErr
	case errors.Is(err, engine.ErrInputClosed):
		err = nil
	}
	t.err = err
	close(t.done)
}

// Wait blocks until the Transport has ended: nil when the client closed
// stdin or Stop was called, Start's error when start-up failed otherwise,
// the carrier failure when serving failed (a broken stdout, a failed read).
// Before Start it blocks until Start fails or Stop is called.
func (t *Transport) Wait() error {
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// Stop cancels a pending Start (which then fails with
// [engine.ErrStopped]) or ends serving: calls in flight are cancelled (a
// tools/call still answers "server is shutting down" while stdout works)
// and waited for, at most DrainTimeout; then Stop returns, or when ctx ends
// first with ctx's error. Stdin is closed when it is an io.Closer other
// than os.Stdin, so the reader ends too. Stop is safe to repeat, to call
// concurrently, and before Start (a later Start fails with
// [engine.ErrStopped]).
func (t *Transport) Stop(ctx context.Context) error {
	t.mu.Lock()
	if !t.started && !t.stopped {
		t.stopped = true // a later Start fails
		t.mu.Unlock()
		close(t.done)
		return nil
	}
	t.stopped = true
	cancel := t.cancel
	t.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-t.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
