// Package stdio is agentmcp's stdio carrier: MCP over newline-delimited
// JSON-RPC on a pair of streams, normally the process's own stdin and stdout
// (docs/SPEC.md §5.1; MCP "Transports: stdio").
//
// The carrier only frames bytes: it reads one line at a time (bounded, so a
// huge line is answered -32600 and read past without being buffered), hands
// each to the shared engine, and writes one compact JSON message per line.
// Nothing else is ever written to stdout; logs go to the Logger.
//
// Lifecycle: [New] → [Transport.Attach] → [Transport.Start] →
// [Transport.Wait] / [Transport.Stop]. A restart needs a new Attach.
package stdio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/adapters/engine"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// Options configures a Transport. Zero values mean the defaults.
type Options struct {
	Name, Version string
	// Stdin and Stdout default to os.Stdin and os.Stdout.
	Stdin  io.Reader
	Stdout io.Writer
	// SubmitTool names the submission tool (default agent_submit).
	SubmitTool domain.SubmitTool
	// Instructions is the initialize and server/discover results'
	// instructions (docs/SPEC.md §2); "" leaves it out.
	Instructions string
	// AskClient lets prompts reach the client (docs/SPEC.md §6); off by default.
	// Turn it on only when you trust whoever drives this process's stdin to
	// approve the session's tool calls.
	AskClient bool
	// RoundLifetime bounds a prompt's wait for its answer; default 30 min.
	RoundLifetime time.Duration
	// Logger receives operational logs; nil discards. Never stdout.
	Logger *slog.Logger
	// MaxLineBytes bounds one incoming line; default 4 MiB.
	MaxLineBytes int
	// StartTimeout bounds Start; default 15 s.
	StartTimeout time.Duration
	// DrainTimeout is how long calls in flight may finish after stdin ends,
	// and how long Stop waits for them; default 5 s.
	DrainTimeout time.Duration
}

// Lifecycle errors.
var (
	ErrNotAttached    = errors.New("stdio: not attached")
	ErrAlreadyStarted = errors.New("stdio: already started")
	ErrInputClosed    = errors.New("stdio: input closed during startup")
	ErrStartTimeout   = errors.New("stdio: startup timed out")
	ErrStopped        = errors.New("stdio: stopped during startup")
)

type state int

const (
	idle state = iota
	attached
	starting
	started
	stopped
)

// Transport is the stdio carrier. Its methods are safe for concurrent use.
type Transport struct {
	opts   Options
	submit domain.SubmitTool
	logger *slog.Logger

	mu      sync.Mutex // guards the fields below
	state   state
	session ports.Session
	run     *run // the current or last run; nil before the first Start
}

// run is one Start…end of a Transport.
type run struct {
	eng      *engine.Engine
	stream   *engine.Stream
	stop     chan struct{} // closed by Stop
	stopOnce sync.Once
	once     sync.Once
	done     chan struct{} // closed when serving has ended
	err      error         // why serving ended; set before done closes

	failOnce sync.Once
	failed   chan struct{} // closed on a carrier failure (broken stdout)
	failErr  error
}

// New returns a stdio transport. It fails when the submission tool's name
// breaks the MCP tool-name rule.
func New(opts Options) (*Transport, error) {
	submit, err := opts.SubmitTool.Resolve()
	if err != nil {
		return nil, fmt.Errorf("stdio: %w", err)
	}
	if opts.Stdin == nil {
		opts.Stdin = os.Stdin
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = 4 << 20
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 15 * time.Second
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 5 * time.Second
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Transport{opts: opts, submit: submit, logger: logger}, nil
}

// Attach sets the session to serve. It fails with ErrAlreadyStarted while a
// run is starting or serving.
func (t *Transport) Attach(s ports.Session) error {
	if s == nil {
		return errors.New("stdio: nil session")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state == starting || t.state == started {
		return ErrAlreadyStarted
	}
	t.session, t.state = s, attached
	return nil
}

// Start validates the session's catalog and returns once the server can
// answer. Frames that arrive meanwhile are kept and served in order. It
// fails with ErrNotAttached, ErrAlreadyStarted, a catalog error, or when
// startup is cut short: ErrInputClosed (stdin ended), ErrStopped (Stop),
// ErrStartTimeout (15 s) or ctx's error.
func (t *Transport) Start(ctx context.Context) error {
	t.mu.Lock()
	switch t.state {
	case idle, stopped:
		t.mu.Unlock()
		return ErrNotAttached
	case starting, started:
		t.mu.Unlock()
		return ErrAlreadyStarted
	}
	eng, err := engine.New(t.session, engine.Options{
		Name: t.opts.Name, Version: t.opts.Version, SubmitTool: t.submit, Instructions: t.opts.Instructions,
		AskClient: t.opts.AskClient, RoundLifetime: t.opts.RoundLifetime, Logger: t.logger,
	})
	if err != nil {
		t.mu.Unlock()
		return fmt.Errorf("stdio: %w", err)
	}
	r := &run{eng: eng, stop: make(chan struct{}), done: make(chan struct{}), failed: make(chan struct{})}
	t.run, t.state = r, starting
	t.mu.Unlock()

	frames := make(chan frame)
	go t.read(r, frames)

	err = t.startup(ctx, r, frames)
	t.mu.Lock()
	if err != nil {
		t.state, t.session = stopped, nil
		t.mu.Unlock()
		if errors.Is(err, ErrStopped) {
			r.end(nil)
		} else {
			r.end(err)
		}
		t.closeInput()
		return err
	}
	t.state = started
	t.mu.Unlock()
	return nil
}

type frame struct {
	line     []byte
	oversize bool
	err      error // io.EOF or a read failure; last frame
}

// read is the only reader of stdin. It stops at the end of input or once the
// run has ended (after its current read returns).
func (t *Transport) read(r *run, frames chan<- frame) {
	lr := newLineReader(t.opts.Stdin, t.opts.MaxLineBytes)
	for {
		line, oversize, err := lr.next()
		f := frame{line: append([]byte(nil), line...), oversize: oversize, err: err}
		select {
		case frames <- f:
		case <-r.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (t *Transport) startup(ctx context.Context, r *run, frames <-chan frame) error {
	vctx, cancel := context.WithTimeoutCause(ctx, t.opts.StartTimeout, ErrStartTimeout)
	defer cancel()
	validated := make(chan error, 1)
	go func() { validated <- r.eng.Validate(vctx) }()

	var early []frame
	for {
		select {
		case err := <-validated:
			if err != nil {
				if cause := context.Cause(vctx); cause != nil {
					return cause
				}
				return err
			}
			r.stream = r.eng.NewStream(t.write(r), engine.StreamOptions{OnWriteError: r.fail})
			go t.serve(r, early, frames)
			return nil
		case f := <-frames:
			if f.err != nil && len(early) == 0 {
				// The client went away before saying anything: nothing
				// to serve, so start-up is cancelled.
				cancel()
				<-validated
				return ErrInputClosed
			}
			// Frames that arrive during start-up are kept, the end of
			// input after them too: a client that pipes its requests and
			// closes stdin still gets every answer.
			early = append(early, f)
			if f.err != nil {
				frames = nil // the reader has ended
			}
		case <-vctx.Done():
			<-validated
			return context.Cause(vctx)
		case <-r.stop:
			cancel()
			<-validated
			return ErrStopped
		}
	}
}

// write returns the stream's send function: one line per message.
func (t *Transport) write(r *run) func([]byte) error {
	return func(b []byte) error {
		line := make([]byte, 0, len(b)+1)
		line = append(append(line, b...), '\n')
		_, err := t.opts.Stdout.Write(line)
		return err
	}
}

func (r *run) fail(err error) {
	r.failOnce.Do(func() { r.failErr = err; close(r.failed) })
}

// end records why the run ended and releases Wait.
func (r *run) end(err error) {
	r.once.Do(func() { r.err = err; close(r.done) })
}

// serve feeds frames to the stream until input ends, the output breaks or
// Stop is called.
func (t *Transport) serve(r *run, early []frame, frames <-chan frame) {
	handle := func(f frame) (eof bool, err error) {
		switch {
		case f.err != nil:
			return true, f.err
		case f.oversize:
			r.stream.Oversize()
		default:
			r.stream.Handle(f.line)
		}
		return false, nil
	}
	for _, f := range early {
		if eof, err := handle(f); eof {
			t.finish(r, err)
			return
		}
	}
	for {
		select {
		case f := <-frames:
			if eof, err := handle(f); eof {
				t.finish(r, err)
				return
			}
		case <-r.failed:
			t.logger.Error("stdio: output failed; stopping", "err", r.failErr)
			t.shutdown(r)
			r.end(fmt.Errorf("stdio: write: %w", r.failErr))
			return
		case <-r.stop:
			t.shutdown(r)
			r.end(nil)
			return
		}
	}
}

// finish handles the end of input: calls in flight may finish and write for
// DrainTimeout, then the rest are cancelled; Wait returns nil (or the read
// failure).
func (t *Transport) finish(r *run, readErr error) {
	select {
	case <-r.stop:
		// Stop closed the input: stop now, as Stop promises, not after a grace.
		t.shutdown(r)
		r.end(nil)
		return
	default:
	}
	// Calls already read keep running and writing for DrainTimeout: nothing
	// new can arrive after the end of input. Then the rest are stopped like
	// at Stop (they still answer "server is shutting down"), with a grace of
	// their own so their answers are written before Wait returns.
	drain, cancel := context.WithTimeout(context.Background(), t.opts.DrainTimeout)
	defer cancel()
	if r.stream.Drain(drain) != nil {
		t.shutdown(r)
	} else {
		r.eng.Shutdown()
		t.waitParked(r)
	}
	t.mu.Lock()
	if t.run == r {
		t.state, t.session = stopped, nil
	}
	t.mu.Unlock()
	if errors.Is(readErr, io.EOF) {
		readErr = nil
	} else if readErr != nil {
		readErr = fmt.Errorf("stdio: read: %w", readErr)
	}
	r.end(readErr)
}

func (t *Transport) shutdown(r *run) {
	ctx, cancel := context.WithTimeout(context.Background(), t.opts.DrainTimeout)
	defer cancel()
	r.eng.Shutdown()
	switch {
	case r.stream != nil && r.stream.Stop(ctx) != nil:
		// The grace is spent; parked calls are not waited for either.
		t.logger.Warn("stdio: calls still running at stop")
	case r.eng.Wait(ctx) != nil:
		t.logger.Warn("stdio: parked calls still running at stop")
	}
	t.mu.Lock()
	if t.run == r {
		t.state, t.session = stopped, nil
	}
	t.mu.Unlock()
}

// waitParked waits (bounded) for calls the engine parked in input-required
// rounds, which Shutdown has just ended.
func (t *Transport) waitParked(r *run) {
	ctx, cancel := context.WithTimeout(context.Background(), t.opts.DrainTimeout)
	defer cancel()
	if err := r.eng.Wait(ctx); err != nil {
		t.logger.Warn("stdio: parked calls still running after the end of input")
	}
}

// Wait blocks until the current run ends: nil when the client closed the
// stream or Stop was called, the carrier failure otherwise (a broken stdout,
// a failed read). Before the first Start it returns nil at once.
func (t *Transport) Wait() error {
	t.mu.Lock()
	r := t.run
	t.mu.Unlock()
	if r == nil {
		return nil
	}
	<-r.done
	return r.err
}

// Stop cancels a pending Start or ends serving: calls in flight are
// cancelled (a tools/call still answers "server is shutting down" while
// stdout works) and Stop waits for them until ctx ends or DrainTimeout
// passes. It is safe to repeat and to call concurrently. Stdin is closed when
// it is an io.Closer other than os.Stdin, so the reader ends too; a reader
// blocked on os.Stdin ends with the process.
func (t *Transport) Stop(ctx context.Context) error {
	t.mu.Lock()
	r := t.run
	t.mu.Unlock()
	if r == nil {
		return nil
	}
	r.stopOnce.Do(func() {
		close(r.stop)
		t.closeInput()
	})
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *Transport) closeInput() {
	if c, ok := t.opts.Stdin.(io.Closer); ok && t.opts.Stdin != os.Stdin {
		_ = c.Close()
	}
}
