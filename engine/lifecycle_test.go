package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentmcp/agentmcp/engine"
)

// probe is a ServeFunc under test: it reports its ctx when called, then
// does what its mode says.
type probe struct {
	called chan context.Context // serve's ctx, once called
	ready  bool                 // call ready before blocking
	result error                // what serve returns
	hold   chan struct{}        // when set, serve returns only once it is closed, whatever ctx does
}

func newProbe(ready bool, result error) *probe {
	return &probe{called: make(chan context.Context, 1), ready: ready, result: result}
}

func (p *probe) serve(ctx context.Context, ready func()) error {
	p.called <- ctx
	if p.ready {
		ready()
	}
	if p.hold != nil {
		<-p.hold
		return p.result
	}
	<-ctx.Done()
	return p.result
}

// returned reports whether Wait has returned, and with what.
func returned(ch <-chan error) (error, bool) {
	select {
	case err := <-ch:
		return err, true
	default:
		return nil, false
	}
}

func waitCh(l *engine.Lifecycle) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- l.Wait() }()
	return ch
}

// TestLifecycleStartServeStop: Start returns once serve is ready; a second
// Start fails, named after the carrier; Wait (called before Start) blocks
// while serving; Stop cancels serve's ctx with cause ErrShuttingDown and
// returns once serve has; Wait then returns nil, and so does every later
// Stop; a Start after Stop fails with ErrStopped.
func TestLifecycleStartServeStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe(true, errors.New("ignored after Stop"))
		l := engine.NewLifecycle("pipe", p.serve, 0)
		waited := waitCh(l)
		if err := l.Start(t.Context()); err != nil {
			t.Fatalf("Start: %v", err)
		}
		ctx := <-p.called
		if err := l.Start(t.Context()); !errors.Is(err, engine.ErrAlreadyStarted) || err.Error() != "pipe: already started" {
			t.Errorf("a second Start: %v, want pipe: already started", err)
		}
		synctest.Wait()
		if err, ok := returned(waited); ok {
			t.Fatalf("Wait returned %v while serving", err)
		}
		if ctx.Err() != nil {
			t.Fatalf("serve's ctx ended before Stop: %v", context.Cause(ctx))
		}
		if err := l.Stop(t.Context()); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if cause := context.Cause(ctx); !errors.Is(cause, engine.ErrShuttingDown) {
			t.Errorf("serve's ctx ended with %v, want ErrShuttingDown", cause)
		}
		synctest.Wait()
		if err, ok := returned(waited); !ok || err != nil {
			t.Errorf("Wait after Stop: %v (returned: %v), want nil at once", err, ok)
		}
		if err := l.Stop(t.Context()); err != nil {
			t.Errorf("Stop after Stop: %v", err)
		}
		if err := l.Start(t.Context()); !errors.Is(err, engine.ErrStopped) || err.Error() != "pipe: stopped" {
			t.Errorf("Start after Stop: %v, want pipe: stopped", err)
		}
	})
}

// TestLifecycleStopBeforeStart: Stop before Start returns nil, again too;
// serve is never called; Start fails with ErrStopped; Wait returns nil.
func TestLifecycleStopBeforeStart(t *testing.T) {
	p := newProbe(true, nil)
	l := engine.NewLifecycle("pipe", p.serve, 0)
	for range 2 {
		if err := l.Stop(t.Context()); err != nil {
			t.Errorf("Stop before Start: %v", err)
		}
	}
	if err := l.Start(t.Context()); !errors.Is(err, engine.ErrStopped) {
		t.Errorf("Start after Stop: %v, want ErrStopped", err)
	}
	if err := l.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
	if len(p.called) != 0 {
		t.Error("serve was called after a Stop before Start")
	}
}

// TestLifecycleStopDuringStartUp: a Stop while serve is binding (before
// ready) ends serve's ctx; Start fails with ErrStopped whatever serve
// returned, Stop returns once serve has, and Wait returns nil.
func TestLifecycleStopDuringStartUp(t *testing.T) {
	for _, result := range []error{nil, context.Canceled, errors.New("validation cut short")} {
		p := newProbe(false, result)
		l := engine.NewLifecycle("pipe", p.serve, 0)
		started := make(chan error, 1)
		go func() { started <- l.Start(context.Background()) }()
		<-p.called
		if err := l.Stop(t.Context()); err != nil {
			t.Fatalf("Stop during start-up: %v", err)
		}
		if err := <-started; !errors.Is(err, engine.ErrStopped) {
			t.Errorf("serve returning %v: Start = %v, want ErrStopped", result, err)
		}
		if err := l.Wait(); err != nil {
			t.Errorf("serve returning %v: Wait = %v, want nil after Stop", result, err)
		}
	}
}

// TestLifecycleStartCtxBoundsStartUp: Start's ctx ending before ready
// cancels serve's ctx, and Start returns ctx's error once serve has
// returned; Wait returns it too. ctx ending after Start returned changes
// nothing.
func TestLifecycleStartCtxBoundsStartUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe(false, errors.New("cut short"))
		l := engine.NewLifecycle("pipe", p.serve, 0)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		begin := time.Now()
		if err := l.Start(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Start: %v, want ctx's error", err)
		}
		if d := time.Since(begin); d != time.Second {
			t.Errorf("Start returned after %v, want ctx's 1s", d)
		}
		if served := <-p.called; served.Err() == nil {
			t.Error("serve's ctx still live after Start's ctx ended")
		}
		if err := l.Wait(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Wait: %v, want ctx's error", err)
		}

		p = newProbe(true, nil)
		l = engine.NewLifecycle("pipe", p.serve, 0)
		ctx, cancel = context.WithCancel(t.Context())
		if err := l.Start(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		synctest.Wait()
		if served := <-p.called; served.Err() != nil {
			t.Errorf("serve's ctx ended with Start's after Start returned: %v", served.Err())
		}
		if err := l.Stop(t.Context()); err != nil {
			t.Error(err)
		}
	})
}

// errServe is a carrier's own failure.
var errServe = errors.New("address in use")

// TestLifecycleServeEnds: how serve's own end reaches Start and Wait.
func TestLifecycleServeEnds(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ready     bool
		result    error
		wantStart error // nil: Start succeeds
		wantWait  error
	}{
		{"fails before ready", false, errServe, errServe, errServe},
		{"input closed before ready", false, engine.ErrInputClosed, engine.ErrInputClosed, nil},
		{"nil before ready", false, nil, engine.ErrStopped, nil},
		{"fails after ready", true, errServe, nil, errServe},
		{"ends after ready", true, nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProbe(tc.ready, tc.result)
			p.hold = make(chan struct{})
			close(p.hold) // serve returns at once
			l := engine.NewLifecycle("pipe", p.serve, 0)
			err := l.Start(t.Context())
			if (tc.wantStart == nil) != (err == nil) || !errors.Is(err, tc.wantStart) {
				t.Errorf("Start: %v, want %v", err, tc.wantStart)
			}
			if err := l.Wait(); (tc.wantWait == nil) != (err == nil) || !errors.Is(err, tc.wantWait) {
				t.Errorf("Wait: %v, want %v", err, tc.wantWait)
			}
			if err := l.Stop(t.Context()); err != nil {
				t.Errorf("Stop after the end: %v", err)
			}
			if err := l.Wait(); (tc.wantWait == nil) != (err == nil) {
				t.Errorf("Wait after Stop after the end: %v, want %v (the end came first)", err, tc.wantWait)
			}
		})
	}
}

// TestLifecycleStopIsBounded: with a stop timeout, a serve that ignores
// its ctx makes Stop return ErrStopTimeout, named after the carrier, once
// the timeout has passed; Wait still waits for serve and then returns nil.
// Without one, Stop is bounded by its ctx alone.
func TestLifecycleStopIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe(true, nil)
		p.hold = make(chan struct{})
		l := engine.NewLifecycle("pipe", p.serve, 5*time.Second)
		if err := l.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		begin := time.Now()
		if err := l.Stop(t.Context()); !errors.Is(err, engine.ErrStopTimeout) || err.Error() != "pipe: "+engine.ErrStopTimeout.Error() {
			t.Errorf("Stop: %v, want pipe: %v", err, engine.ErrStopTimeout)
		}
		if d := time.Since(begin); d != 5*time.Second {
			t.Errorf("Stop gave up after %v, want 5s", d)
		}
		waited := waitCh(l)
		synctest.Wait()
		if err, ok := returned(waited); ok {
			t.Fatalf("Wait returned %v before serve did", err)
		}
		close(p.hold)
		if err := <-waited; err != nil {
			t.Errorf("Wait: %v, want nil after Stop", err)
		}

		p = newProbe(true, nil)
		p.hold = make(chan struct{})
		defer close(p.hold)
		l = engine.NewLifecycle("pipe", p.serve, 0)
		if err := l.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if err := l.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Stop without a stop timeout: %v, want ctx's error", err)
		}
	})
}

// TestLifecycleConcurrentStops: Stops racing each other, and a Start,
// all return; each Stop nil, Wait nil.
func TestLifecycleConcurrentStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProbe(true, nil)
		l := engine.NewLifecycle("pipe", p.serve, 0)
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := l.Start(t.Context()); err != nil && !errors.Is(err, engine.ErrStopped) {
				t.Errorf("Start racing Stops: %v", err)
			}
		})
		for range 3 {
			wg.Go(func() {
				if err := l.Stop(t.Context()); err != nil {
					t.Errorf("concurrent Stop: %v", err)
				}
			})
		}
		wg.Wait()
		if err := l.Wait(); err != nil {
			t.Errorf("Wait: %v", err)
		}
	})
}
