// Package stdio is agentmcp's stdio carrier: MCP over newline-delimited
// JSON-RPC on a pair of streams, normally the process's own stdin and stdout
// (docs/SPEC.md §5.1; MCP "Transports: stdio").
//
// It is an [engine.Lifecycle] around [engine.Engine.ServeConn], which does
// the framing (a bounded line reader, frames kept during start-up, the
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
	"io"
	"os"
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
	life *engine.Lifecycle
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
	t := &Transport{eng: eng, opts: opts}
	// Stop is bounded by the drain (ServeConn's DrainTimeout), not by a
	// timer of its own.
	t.life = engine.NewLifecycle("stdio", t.serve, 0)
	return t, nil
}

// Start validates the session's catalog and returns once the server can
// answer; frames that arrive meanwhile are kept and served in order. It
// fails with an error wrapping [engine.ErrAlreadyStarted] (a second Start),
// a catalog error, or when start-up is cut short: [engine.ErrInputClosed]
// (stdin ended before anything arrived), [engine.ErrStopped] (Stop),
// [engine.ErrStartTimeout] (15 s) or ctx's error (ctx bounds start-up
// only). A failed Start ends the Transport.
func (t *Transport) Start(ctx context.Context) error { return t.life.Start(ctx) }

// serve is the whole stream: ServeConn validates the catalog while it keeps
// the frames that arrive, calls ready, and serves until stdin ends or ctx
// (Stop) does.
func (t *Transport) serve(ctx context.Context, ready func()) error {
	opts := engine.ConnOptions{
		MaxLineBytes: t.opts.MaxLineBytes,
		MaxInFlight:  t.opts.MaxInFlight,
		StartTimeout: t.opts.StartTimeout,
		DrainTimeout: t.opts.DrainTimeout,
		Ready:        ready,
	}
	if c, ok := t.opts.Stdin.(io.Closer); ok && t.opts.Stdin != os.Stdin {
		opts.Close = c.Close // Stop ends the reader too; os.Stdin ends with the process
	}
	err := t.eng.ServeConn(ctx, t.opts.Stdin, t.opts.Stdout, opts)
	if err != nil && !errors.Is(err, engine.ErrInputClosed) {
		t.eng.Logger().Error("stdio: serving failed", "err", err)
	}
	return err
}

// Wait blocks until the Transport has ended: nil when the client closed
// stdin or Stop was called, Start's error when start-up failed otherwise,
// the carrier failure when serving failed (a broken stdout, a failed read).
// Before Start it blocks until Start fails or Stop is called.
func (t *Transport) Wait() error { return t.life.Wait() }

// Stop cancels a pending Start (which then fails with
// [engine.ErrStopped]) or ends serving: calls in flight are cancelled (a
// tools/call still answers "server is shutting down" while stdout works)
// and waited for, at most DrainTimeout; then Stop returns, or when ctx ends
// first with ctx's error. Stdin is closed when it is an io.Closer other
// than os.Stdin, so the reader ends too. Stop is safe to repeat, to call
// concurrently, and before Start (a later Start fails with
// [engine.ErrStopped]).
func (t *Transport) Stop(ctx context.Context) error { return t.life.Stop(ctx) }
