package engine

import (
	"context"
	"errors"
	"time"
)

// Carrier is the one lifecycle every carrier of an engine has
// (docs/SPEC.md §5 "Carriers"): stdio.Transport, unixsocket.Server,
// httploopback.Host and httpremote.Host, and any carrier written on
// [Engine.ServeConn] or [Engine.Exchange]. A carrier is built once with
// its engine, binds nothing until Start, and serves once. [Lifecycle]
// implements the contract once: every carrier here keeps one and supplies
// only how it binds and serves (its [ServeFunc]).
//
// Each method has one meaning, the same for every carrier:
//
//   - Start validates the session's catalog (docs/SPEC.md §2: a violation
//     fails start-up before anything is bound or read), then binds and
//     begins serving, and returns once clients can be served. ctx bounds
//     start-up only. It fails with an error wrapping [ErrAlreadyStarted]
//     (a second Start), [ErrStopped] (Stop came first, or during start-up:
//     then nothing was bound), the catalog's error, ctx's error, or the
//     carrier's own (an address in use, [ErrInputClosed]). A failed Start
//     ends the carrier. What a started carrier bound (an address, an
//     endpoint) is read from the carrier after Start.
//   - Stop ends the carrier: it stops accepting, cancels the calls in
//     flight with cause [ErrShuttingDown] (where the carrier can still
//     write, a tools/call answers "server is shutting down"), and returns
//     once every goroutine the carrier started has ended. It is bounded by
//     the carrier's stop timeout (an HTTP host's 5 s; past it, an error
//     wrapping [ErrStopTimeout]) or a stream carrier's drain (5 s per
//     stream), and by ctx (ctx's error); the carrier keeps stopping in
//     either case. Stop is safe to repeat, to call
//     concurrently, and before Start (a later Start fails with
//     [ErrStopped]).
//   - Wait blocks until the carrier has ended — by Stop, a failed Start,
//     the end of its input (a stdio client closing stdin), or a failure
//     while serving — and returns nil after Stop or the end of input, the
//     error that ended it otherwise (a failed Start's included, but nil
//     when that was [ErrStopped] or [ErrInputClosed]). Before Start it
//     blocks like any other time. After Stop returns nil, Wait returns at
//     once.
//
// A carrier never shuts its engine down (several carriers may serve one
// engine): the composition root stops every carrier, then calls
// [Engine.Shutdown], which ends what belongs to no carrier (calls parked in
// input-required rounds). [Engine.Run] does both in that order.
type Carrier interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	Wait() error
}

// The lifecycle errors every [Carrier] shares. A carrier wraps them with
// its name ("httploopback: stopped"), so errors.Is matches them whichever
// carrier returned them.
var (
	ErrAlreadyStarted = errors.New("already started")
	ErrStopped        = errors.New("stopped")
	ErrStopTimeout    = errors.New("calls still running when the stop timeout ended")
)

// StopTimeout is what [Carrier.Stop] and the engine's part of [Engine.Run]
// are each bounded by (docs/SPEC.md §3 "Ending").
const StopTimeout = 5 * time.Second

// Run serves the engine on started carriers until ctx ends (a signal, say)
// or one of them ends, then stops every carrier and shuts the engine down:
// the order docs/SPEC.md §5 requires, written once. Start the carriers
// first (what they bound is read from them after Start); a carrier that
// was never started is stopped all the same.
//
// It returns nil when ctx ended or a carrier ended cleanly (its Wait
// returned nil: Stop, the end of stdio's input), else the first carrier's
// failure. A stop or shutdown that does not finish within its bound is
// logged to the engine's Logger as a warning, not returned: the carriers
// have been asked to end and the process can exit.
func (e *Engine) Run(ctx context.Context, carriers ...Carrier) error {
	ended := make(chan error, len(carriers))
	for _, c := range carriers {
		go func() { ended <- c.Wait() }()
	}
	var err error
	select {
	case err = <-ended:
	case <-ctx.Done():
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), StopTimeout+time.Second)
	defer cancel()
	for _, c := range carriers {
		if serr := c.Stop(stopCtx); serr != nil {
			e.logger.Warn("carrier stop did not finish cleanly", "err", serr)
		}
	}
	shutCtx, cancelShut := context.WithTimeout(context.WithoutCancel(ctx), StopTimeout)
	defer cancelShut()
	if serr := e.Shutdown(shutCtx); serr != nil {
		e.logger.Warn("engine shutdown did not finish cleanly", "err", serr)
	}
	return err
}
