package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ServeFunc is what a carrier gives its [Lifecycle]: how it binds and how
// it serves. It binds what the carrier serves on (validates the catalog,
// listens; a stream carrier hands its stream to [Engine.ServeConn], which
// validates), calls ready once clients can be served, serves until ctx
// ends or serving fails, and returns once every goroutine it started has
// ended. ctx ends at Stop, with cause [ErrShuttingDown], and at the end of
// Start's ctx before ready: serve then binds nothing more, releases what it
// bound and returns. Its error is the carrier's failure (an address in use,
// a broken listener, [ErrInputClosed]); it is ignored after Stop. It is
// called at most once, on a goroutine of its own.
type ServeFunc func(ctx context.Context, ready func()) error

// Lifecycle is the [Carrier] contract written once (docs/SPEC.md §5), in
// the way net/http's Server is one lifecycle for every listener: a carrier
// supplies a [ServeFunc] and gets Start, Stop and Wait with the meaning
// they have on every carrier. Its methods are safe for concurrent use.
//
//   - Start runs serve and returns nil once serve calls ready. It fails
//     with an error wrapping [ErrAlreadyStarted] (a second Start) or
//     [ErrStopped] (Stop came before Start returned, or serve returned nil
//     before ready), with ctx's error when ctx ended first (serve's ctx is
//     then cancelled and serve waited for), or with serve's own error
//     before ready. ctx bounds start-up only. A failed Start ends the
//     carrier.
//   - Stop cancels serve's ctx with cause [ErrShuttingDown] and returns
//     nil once serve has returned, or ctx's error when ctx ends first, or
//     past the stop timeout (when positive) an error wrapping
//     [ErrStopTimeout]; serve keeps stopping in either case. Safe to
//     repeat, concurrently, and before Start (serve is then never called).
//   - Wait blocks until the carrier has ended (before Start too) and
//     returns nil after Stop, when serve returned nil or [ErrInputClosed]
//     (the end of the input), ctx's error when Start's ctx cut start-up
//     short, and otherwise serve's error.
//
// The lifecycle errors are wrapped with the carrier's name ("stdio:
// stopped"). What a carrier bound (an address, a path) is its own: serve
// records it before calling ready, so it can be read once Start returns.
type Lifecycle struct {
	name        string
	serve       ServeFunc
	stopTimeout time.Duration
	ctx         context.Context // serve's; Stop cancels it
	cancel      context.CancelCauseFunc
	done        chan struct{} // closed once the carrier has ended

	mu       sync.Mutex // guards the fields below
	started  bool       // Start was called, or Stop before it
	stopped  bool       // Stop was called
	startErr error      // Start's ctx's error, when it cut start-up short
	err      error      // what Wait returns; set before done closes
}

var _ Carrier = (*Lifecycle)(nil)

// NewLifecycle returns the lifecycle of the carrier called name (the prefix
// of its lifecycle errors) serving with serve. stopTimeout bounds Stop (an
// HTTP host's, [StopTimeout]); zero or less leaves the bound to serve and
// Stop's ctx (a stream carrier: [Engine.ServeConn] waits at most its
// DrainTimeout for cancelled calls).
func NewLifecycle(name string, serve ServeFunc, stopTimeout time.Duration) *Lifecycle {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Lifecycle{name: name, serve: serve, stopTimeout: stopTimeout,
		ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// Start runs the carrier's serve and returns once it is ready (see
// [Lifecycle]).
func (l *Lifecycle) Start(ctx context.Context) error {
	l.mu.Lock()
	switch {
	case l.stopped:
		l.mu.Unlock()
		return l.wrap(ErrStopped)
	case l.started:
		l.mu.Unlock()
		return l.wrap(ErrAlreadyStarted)
	}
	l.started = true
	l.mu.Unlock()

	ready := make(chan struct{})
	var once sync.Once
	served := make(chan error, 1)
	go func() {
		err := l.serve(l.ctx, func() { once.Do(func() { close(ready) }) })
		l.finish(err)
		served <- err
	}()
	var err error
	select {
	case <-ready:
	case err = <-served:
	case <-ctx.Done():
		l.mu.Lock()
		l.startErr = ctx.Err()
		l.mu.Unlock()
		l.cancel(context.Cause(ctx))
		<-served
		return ctx.Err()
	}
	l.mu.Lock()
	stopped := l.stopped
	l.mu.Unlock()
	if stopped {
		return l.wrap(ErrStopped)
	}
	select {
	case <-ready:
		return nil // serving began, even if it has ended already (Wait says how)
	default:
	}
	if err == nil {
		return l.wrap(ErrStopped)
	}
	return err
}

// finish records what Wait returns for serve's err and ends the carrier.
func (l *Lifecycle) finish(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.stopped:
		err = nil
	case l.startErr != nil:
		err = l.startErr
	case errors.Is(err, ErrInputClosed):
		err = nil
	}
	l.err = err
	close(l.done)
}

// Stop ends the carrier and waits for serve (see [Lifecycle]).
func (l *Lifecycle) Stop(ctx context.Context) error {
	l.mu.Lock()
	l.stopped = true
	if !l.started {
		l.started = true // serve is never called; a later Start fails
		close(l.done)
	}
	l.mu.Unlock()
	l.cancel(ErrShuttingDown)
	var timeout <-chan time.Time
	if l.stopTimeout > 0 {
		t := time.NewTimer(l.stopTimeout)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-timeout:
		return l.wrap(ErrStopTimeout)
	}
}

// Wait blocks until the carrier has ended and says how (see [Lifecycle]).
func (l *Lifecycle) Wait() error {
	<-l.done
	return l.err
}

// wrap names a lifecycle error after the carrier.
func (l *Lifecycle) wrap(err error) error {
	if l.name == "" {
		return err
	}
	return fmt.Errorf("%s: %w", l.name, err)
}
