package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentmcp/agentmcp/internal/jsonrpc"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// ConnOptions configures [Engine.ServeConn]. Zero values mean the defaults.
type ConnOptions struct {
	// MaxLineBytes bounds one incoming message, without its line ending;
	// default 4 MiB. A longer line is answered -32600 with no id and read
	// past without being buffered (docs/SPEC.md §4 "stdio framing"; K4).
	MaxLineBytes int
	// MaxInFlight bounds the requests served at once; beyond it a
	// tools/call gets the tool error "server is busy" and other requests
	// -32603, at once, so the reader never blocks (docs/SPEC.md §4).
	// Default 64.
	MaxInFlight int
	// MaxBatch bounds the elements of a 2025-03-26 batch; default 64.
	MaxBatch int
	// StartTimeout bounds start-up, the catalog's validation; default 15 s
	// (docs/SPEC.md §5.1).
	StartTimeout time.Duration
	// DrainTimeout is how long requests in flight may finish and write
	// after the input ends, and how long a stop waits for cancelled ones;
	// default 5 s (docs/SPEC.md §3 "Ending").
	DrainTimeout time.Duration
	// Principal is who is at the other end (docs/SPEC.md §1: the Caller's
	// Principal); zero for a local carrier.
	Principal ports.Principal
	// Ready, when set, is called once start-up has succeeded and frames are
	// being served.
	Ready func()
	// Close, when set, is called when serving stops before the end of the
	// input (a stop, a broken output), to end a Read blocked on r;
	// ServeConn then waits for its reader. Without it a blocked Read is
	// left to the caller (os.Stdin cannot be interrupted).
	Close func() error
}

// ErrInputClosed is ServeConn's error when the input ended during start-up
// before any frame arrived: the client went away without asking anything.
var ErrInputClosed = errors.New("input closed during start-up")

// ErrStartTimeout is ServeConn's error when start-up outlasts StartTimeout.
var ErrStartTimeout = errors.New("start-up timed out")

// errStopped is start-up's answer when ctx ended it; ServeConn returns nil.
var errStopped = errors.New("stopped during start-up")

var connIDs atomic.Uint64

// ServeConn serves one newline-delimited JSON-RPC stream, in the spirit of
// x/tools jsonrpc2_v2's connection server: r carries the client's messages,
// one JSON text per line (CR LF accepted), w receives ours, one compact
// JSON text per line, written whole and never concurrently. It is the
// engine's connection framing for stdio and Unix-socket carriers
// (docs/SPEC.md §4, §5.1, §10; MCP "Transports: stdio").
//
// Start-up: the catalog is validated first (bounded by StartTimeout);
// frames that arrive meanwhile are kept and served in order, the end of
// the input after them too. An end of input before any frame fails
// start-up with ErrInputClosed; a catalog error or ErrStartTimeout fails it
// too; ctx ending returns nil without serving. opts.Ready is called when
// serving begins.
//
// Serving: every request runs on its own goroutine; the reader never waits
// for the session. It returns:
//   - nil at the end of the input, after a drain: no new request is
//     admitted, prompts waiting for this client settle closed, requests in
//     flight may finish and write for DrainTimeout (unless ctx ends, the
//     engine shuts down or a write fails meanwhile), then the rest are
//     cancelled as shutting down (docs/SPEC.md §3 "Ending");
//   - nil when ctx ends or the engine shuts down: requests in flight are
//     cancelled with cause ErrShuttingDown (a tools/call still writes
//     "server is shutting down") and waited for, at most DrainTimeout;
//   - the write error, wrapped, when w fails (then everything is
//     cancelled); a read error, wrapped, likewise.
//
// Input-required rounds minted on this stream are valid only on it and
// end with it. ServeConn never closes r or w, and writes nothing to w once
// it has returned.
func (e *Engine) ServeConn(ctx context.Context, r io.Reader, w io.Writer, opts ConnOptions) error {
	c := e.newConn(w, opts)
	defer c.cancel(nil)
	defer c.closeWrites()
	// Every reason to stop serving ends c.ctx: ServeConn's ctx (here), the
	// engine's Shutdown (c.ctx is under it) and a failed write (update).
	unhook := context.AfterFunc(ctx, func() { c.cancel(ErrShuttingDown) })
	defer unhook()
	frames := make(chan frame, 1)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		c.read(r, frames)
	}()
	stopReader := func() {
		if opts.Close != nil {
			_ = opts.Close()
			<-readerDone
		}
	}
	early, err := c.startup(ctx, frames)
	if err != nil {
		c.shut(false) // nothing runs yet: it only marks the stream closed
		if !errors.Is(err, ErrInputClosed) {
			stopReader()
		}
		if err == errStopped {
			return nil
		}
		return err
	}
	if opts.Ready != nil {
		opts.Ready()
	}
	for _, f := range early {
		if f.err != nil {
			return c.finish(f.err, readerDone)
		}
		c.frame(f)
	}
	for {
		select {
		case f := <-frames:
			if f.err != nil {
				return c.finish(f.err, readerDone)
			}
			c.frame(f)
		case <-c.ctx.Done():
			c.shut(false)
			stopReader()
			if err := c.failure(); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			return nil
		}
	}
}

// frame is one line the reader read, or the end of the input.
type frame struct {
	line     []byte
	oversize bool
	err      error // io.EOF or a read failure; the last frame
}

// conn is one served stream: the connection carrier. It owns what an
// exchange does not have — negotiation, the in-flight id space, our own
// requests to the client and the chains of parked rounds — in one state
// struct (connState) changed only through update, which also decides what
// follows from a change: closing ends the input for prompts, a failed write
// stops serving, closing with nothing running is the end of the drain (in
// the spirit of x/tools jsonrpc2_v2's inFlightState and updateInFlight).
type conn struct {
	e      *Engine
	w      io.Writer
	opts   ConnOptions
	peer   peer
	bind   string          // binds this stream's input-required rounds to it
	ctx    context.Context // the parent of every request's context
	cancel context.CancelCauseFunc

	writeMu  sync.Mutex // serialises writes to w; guards wErr
	wErr     error      // the first failed write, or errServingEnded
	inputEnd chan struct{}
	drained  chan struct{}

	mu sync.Mutex // guards s; taken by update and by readers of s
	s  connState
}

// connState is everything about a stream that changes while it is served.
type connState struct {
	version   string // negotiated legacy revision; "" before initialize
	canElicit bool   // negotiated ≥ 2025-06-18 and declared form elicitation
	inflight  map[string]*flight
	// running counts request goroutines until their answer is written: a
	// drain waits for them, not only for the ids (an id is free again as
	// soon as its answer is ready, before it is written).
	running int
	// closing: no new request is admitted and prompts waiting for this
	// client settle closed (the input ended, or serving stops).
	closing bool
	failErr error // the first failed write: serving stops
	// pending are our elicitation/create requests awaiting the client's
	// response, by id key; their ids ("srv-<n>") are our own id space.
	pending map[string]chan json.RawMessage
	nextSrv int
	// chains maps the id of a request that answered input_required to the
	// parked call, so notifications/cancelled naming it ends the call.
	chains map[string]*parkedCall

	inputEnded, drained bool // their channels are closed
}

// update applies f to the stream's state under its lock, then acts on what
// the state now says; every change of connState goes through it.
func (c *conn) update(f func(*connState)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := &c.s
	f(s)
	if s.closing && !s.inputEnded {
		s.inputEnded = true
		close(c.inputEnd)
	}
	if s.closing && s.running == 0 && !s.drained {
		s.drained = true
		close(c.drained)
	}
	if s.failErr != nil {
		c.cancel(s.failErr) // serving stops; a repeat does nothing
	}
}

// failure is the first failed write, or nil.
func (c *conn) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s.failErr
}

// flight is one request being served.
type flight struct {
	cancel    context.CancelCauseFunc
	cancelled bool // by the client: write nothing for it
}

// errCancelledByClient is the cause of a call its client cancelled.
var errCancelledByClient = errors.New("cancelled by the client")

func (e *Engine) newConn(w io.Writer, opts ConnOptions) *conn {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = 4 << 20
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 64
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 64
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 15 * time.Second
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 5 * time.Second
	}
	c := &conn{
		e: e, w: w, opts: opts,
		bind:     "conn:" + strconv.FormatUint(connIDs.Add(1), 10),
		inputEnd: make(chan struct{}),
		drained:  make(chan struct{}),
		s: connState{
			inflight: make(map[string]*flight),
			pending:  make(map[string]chan json.RawMessage),
			chains:   make(map[string]*parkedCall),
		},
	}
	c.ctx, c.cancel = context.WithCancelCause(e.base)
	c.peer = peer{carrier: c, principal: opts.Principal, notify: c.write}
	return c
}

// read is the only reader of r. It stops at the end of the input, on a read
// failure, or once serving has stopped (after its current Read returns).
func (c *conn) read(r io.Reader, frames chan<- frame) {
	lr := jsonrpc.NewLineReader(r, c.opts.MaxLineBytes)
	for {
		line, oversize, err := lr.Next()
		f := frame{line: append([]byte(nil), line...), oversize: oversize, err: err}
		select {
		case frames <- f:
		case <-c.ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// maxEarlyFrames bounds the frames kept during start-up; beyond it the
// reader waits (the client's writes block) until serving begins.
const maxEarlyFrames = 256

// startup validates the catalog while keeping the frames that arrive.
func (c *conn) startup(ctx context.Context, frames <-chan frame) ([]frame, error) {
	vctx, cancel := context.WithTimeoutCause(ctx, c.opts.StartTimeout, ErrStartTimeout)
	defer cancel()
	validated := make(chan error, 1)
	go func() { validated <- c.e.Validate(vctx) }()
	var early []frame
	for {
		in := frames
		if len(early) >= maxEarlyFrames {
			in = nil
		}
		select {
		case err := <-validated:
			switch {
			case err == nil:
				return early, nil
			case ctx.Err() != nil:
				return nil, errStopped
			case context.Cause(vctx) != nil:
				return nil, context.Cause(vctx)
			}
			return nil, err
		case f := <-in:
			if f.err != nil && len(early) == 0 {
				// The client went away before saying anything: nothing
				// to serve.
				cancel()
				<-validated
				return nil, ErrInputClosed
			}
			// Frames that arrive during start-up are kept, the end of the
			// input after them too: a client that pipes its requests and
			// closes its output still gets every answer.
			early = append(early, f)
			if f.err != nil {
				frames = nil // the reader has ended
			}
		case <-c.e.base.Done():
			cancel()
			<-validated
			return nil, ErrShuttingDown
		case <-vctx.Done():
			<-validated
			if ctx.Err() != nil {
				return nil, errStopped
			}
			return nil, context.Cause(vctx)
		}
	}
}

// lineLimitMessage says what an oversize line exceeded, naming the limit:
// "message exceeds the line limit of 4194304 bytes (4 MiB)".
func lineLimitMessage(limit int) string {
	msg := "message exceeds the line limit of " + strconv.Itoa(limit) + " bytes"
	if limit >= 1<<20 && limit%(1<<20) == 0 {
		msg += " (" + strconv.Itoa(limit>>20) + " MiB)"
	}
	return msg
}

// frame serves one line: blank lines are ignored; an oversize line is
// -32600 and invalid JSON -32700, both with no id (docs/SPEC.md §4).
func (c *conn) frame(f frame) {
	line := f.line
	switch {
	case f.oversize:
		c.write(jsonrpc.EncodeError(jsonrpc.ID{}, jsonrpc.InvalidRequest(lineLimitMessage(c.opts.MaxLineBytes))))
		return
	case jsonrpc.FirstByte(line) == 0:
		return
	case jsonrpc.FirstByte(line) == '{': // validated as it is read
		c.e.handle(&c.peer, line, false, c)
	case !jsonrpc.Valid(line):
		c.write(jsonrpc.EncodeError(jsonrpc.ID{}, jsonrpc.ErrParse))
	case jsonrpc.FirstByte(line) == '[':
		c.e.handleBatch(&c.peer, line, c.opts.MaxBatch, 0, c)
	default:
		c.write(jsonrpc.EncodeError(jsonrpc.ID{}, jsonrpc.InvalidRequest("not a JSON-RPC message")))
	}
}

// deliver writes an answer; nothing for Accepted and Cancelled.
func (c *conn) deliver(r reply) {
	if r.kind != Accepted && r.kind != Cancelled {
		c.write(r.body)
	}
}

// write sends one message as one line; after the first failure nothing more
// is written and the stream stops.
func (c *conn) write(b []byte) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if c.wErr != nil {
		return
	}
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		c.wErr = err
		c.update(func(s *connState) { s.failErr = err })
	}
}

// errServingEnded marks the stream's output closed once ServeConn returned.
var errServingEnded = errors.New("serving ended")

// closeWrites ends writing: a call that outlived its stream (a session
// ignoring cancellation) writes nothing after ServeConn has returned.
func (c *conn) closeWrites() {
	c.writeMu.Lock()
	if c.wErr == nil {
		c.wErr = errServingEnded
	}
	c.writeMu.Unlock()
}

// legacyVersion is the revision in force for legacy requests: the
// negotiated one, or 2025-03-26 before initialize (docs/SPEC.md §4).
func (c *conn) legacyVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s.version == "" {
		return defaultLegacyVersion
	}
	return c.s.version
}

func (c *conn) headers() *Headers { return nil }

func (c *conn) binding() string { return c.bind }

// negotiated reports whether the stream was initialized.
func (c *conn) negotiated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s.version != ""
}

// negotiate records an initialize; false when the stream was initialized
// already.
func (c *conn) negotiate(version string, caps []byte) (ok bool) {
	c.update(func(s *connState) {
		if s.version != "" {
			return
		}
		s.version, ok = version, true
		// elicitation/create exists from 2025-06-18 (docs/SPEC.md §6's table).
		s.canElicit = version >= "2025-06-18" && declaresFormElicitation(caps)
	})
	return ok
}

func (c *conn) inFlight(i jsonrpc.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s.inflight[i.Key()] != nil
}

func (c *conn) atBound() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.s.inflight) >= c.opts.MaxInFlight
}

// newInbound: a connection's messages run side by side, one inbound each.
func (c *conn) newInbound(bool) *inbound { return new(inbound) }

// run admits a request to be served on its own goroutine, which gives its
// answer to to, or answers at once: a duplicate in-flight id (-32600), the
// in-flight bound (busy), or a stream that is closing (shutting down).
func (c *conn) run(p *peer, in *inbound, _ bool, to sink) {
	key := in.id.Key()
	// The admission's outcome, copied into variables assigned once below:
	// the goroutine captures those by value (no allocation each).
	var adm struct {
		refuse *Error
		msg    string
		f      *flight
		ctx    context.Context
		cancel context.CancelCauseFunc
		elicit elicitFunc
	}
	c.update(func(s *connState) {
		switch {
		case s.inflight[key] != nil:
			adm.refuse = jsonrpc.InvalidRequest("id is already in flight")
			return
		case s.closing:
			adm.msg = ErrShuttingDown.Error()
			return
		case len(s.inflight) >= c.opts.MaxInFlight:
			adm.msg = "server is busy"
			return
		}
		adm.ctx, adm.cancel = context.WithCancelCause(c.ctx)
		adm.f = &flight{cancel: adm.cancel}
		s.inflight[key] = adm.f
		s.running++
		if !in.modern && s.canElicit && c.e.rounds != nil {
			adm.elicit = c.elicit
		}
	})
	switch {
	case adm.refuse != nil:
		to.deliver(answerErr(in.id, adm.refuse))
		return
	case adm.msg != "":
		to.deliver(c.e.refusal(in, adm.msg))
		return
	}
	ctx, cancel, f, elicit := adm.ctx, adm.cancel, adm.f, adm.elicit
	run := func() {
		r := c.e.serve(ctx, p, in, elicit)
		var cancelled bool
		c.update(func(s *connState) {
			delete(s.inflight, key)
			cancelled = f.cancelled
		})
		cancel(nil)
		if cancelled {
			c.e.abandon(in, errCancelledByClient)
			r = reply{kind: Cancelled} // docs/SPEC.md §3: no response for a cancelled request
		}
		to.deliver(r)
		if in.written != nil {
			in.written()
		}
		c.update(func(s *connState) { s.running-- })
	}
	if !c.e.goCall(run) {
		c.update(func(s *connState) {
			delete(s.inflight, key)
			s.running--
		})
		cancel(nil)
		to.deliver(c.e.refusal(in, ErrShuttingDown.Error()))
	}
}

// route takes a client's response (to our elicitation/create) or
// notification. notifications/initialized changes nothing (requests are
// served from the initialize answer on), so it is ignored like every
// unknown notification; notifications/cancelled ends the request it names,
// or the parked call whose chain's latest id it is.
func (c *conn) route(m jsonrpc.Message) {
	if !m.HasMethod {
		c.response(&m)
		return
	}
	i, ok := cancelledID(&m)
	if !ok {
		return
	}
	key := i.Key()
	var (
		f  *flight
		pc *parkedCall
	)
	c.update(func(s *connState) {
		if f = s.inflight[key]; f != nil {
			f.cancelled = true
		}
		pc = s.chains[key]
		delete(s.chains, key)
	})
	if f != nil {
		f.cancel(errCancelledByClient)
	}
	if pc != nil {
		c.e.endParked(pc, errCancelledByClient)
	}
}

func mustMembers(obj []byte) []jsonrpc.Member {
	ms, _ := jsonrpc.Members(obj, nil)
	return ms
}

// parkedOn remembers that request i parked pc: i is now the chain's latest
// id, the only one whose notifications/cancelled ends the call (an earlier
// id of the chain is a finished request, ignored like any other). Chains
// whose calls have ended are dropped, so the map stays bounded by the
// parked rounds.
func (c *conn) parkedOn(i jsonrpc.ID, pc *parkedCall) {
	c.update(func(s *connState) {
		for k, x := range s.chains {
			if x == pc || x.ended() {
				delete(s.chains, k)
			}
		}
		s.chains[i.Key()] = pc
	})
}

// finish handles the end of the input: a drain (requests in flight may
// finish and write for DrainTimeout), then what a stop does to the rest.
func (c *conn) finish(readErr error, readerDone <-chan struct{}) error {
	c.shut(true)
	<-readerDone
	if errors.Is(readErr, io.EOF) {
		return nil
	}
	return fmt.Errorf("read: %w", readErr)
}

// shut ends serving, once: no new request is admitted and prompts waiting
// for this client settle closed (update, closing). With drain, requests in
// flight may finish and write for DrainTimeout, unless serving is stopped
// meanwhile; then (or at once without drain) the rest are cancelled as
// shutting down (a tools/call still answers "server is shutting down" while
// the stream can write) and waited for, at most DrainTimeout. Last, the
// stream's parked rounds end: nothing can resume them.
func (c *conn) shut(drain bool) {
	c.update(func(s *connState) { s.closing = true })
	if drain {
		t := time.NewTimer(c.opts.DrainTimeout)
		select {
		case <-c.drained:
		case <-t.C:
		case <-c.ctx.Done():
		}
		t.Stop()
	}
	select {
	case <-c.drained:
	default:
		c.cancel(ErrShuttingDown)
		t := time.NewTimer(c.opts.DrainTimeout)
		select {
		case <-c.drained:
		case <-t.C:
			c.e.logger.Warn("engine: calls still running after a stream stopped; the session ignores cancellation")
		}
		t.Stop()
	}
	c.e.endRounds(c.bind)
	c.e.endTasks(c.bind)
}

type elicitRequest struct {
	JSONRPC string      `json:"jsonrpc"`
	ID      string      `json:"id"`
	Method  string      `json:"method"`
	Params  elicitParms `json:"params"`
}

type cancelledParams struct {
	RequestID string `json:"requestId"`
	Reason    string `json:"reason"`
}

type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// elicit sends elicitation/create to a legacy client and waits for its
// response until the round lifetime passes, the call's ctx ends or the
// stream's input ends; then it sends notifications/cancelled for our
// request so the client can close its dialog (docs/SPEC.md §6 "Legacy
// stdio"). It returns the result, or nil when there is none (an error
// response included).
func (c *conn) elicit(ctx context.Context, f domain.Form) json.RawMessage {
	ch := make(chan json.RawMessage, 1)
	var srvID, key, version string
	c.update(func(s *connState) {
		s.nextSrv++
		srvID = "srv-" + strconv.Itoa(s.nextSrv)
		key = "s:" + srvID
		s.pending[key] = ch
		version = s.version
	})

	params := elicitParms{Mode: "form", Message: f.Message, RequestedSchema: f.RequestedSchema}
	if version == "2025-06-18" {
		params.Mode = "" // that revision has form mode only, unnamed
		if f.RequestedSchema20250618 != nil {
			params.RequestedSchema = f.RequestedSchema20250618 // nor titled enums
		}
	}
	if id, ok := relatedTask(ctx); ok {
		params.Meta = relatedTaskMeta(id) // a 2025-11-25 task's prompt (docs/SPEC.md §14)
	}
	req, _ := domain.MarshalJSON(elicitRequest{JSONRPC: "2.0", ID: srvID, Method: "elicitation/create", Params: params})
	c.write(req)

	timer := time.NewTimer(c.e.roundLifetime)
	defer timer.Stop()
	var reason string
	select {
	case raw := <-ch:
		return raw
	case <-ctx.Done():
		reason = "the request was cancelled"
	case <-timer.C:
		reason = "no answer in time"
	case <-c.inputEnd:
		reason = "the input ended"
	}
	c.update(func(s *connState) { delete(s.pending, key) })
	note, _ := domain.MarshalJSON(notification{JSONRPC: "2.0", Method: "notifications/cancelled",
		Params: cancelledParams{RequestID: srvID, Reason: reason}})
	c.write(note)
	return nil
}

// response routes a client's response to our pending request; a response
// for an unknown id is ignored.
func (c *conn) response(m *jsonrpc.Message) {
	key := m.ID.Key()
	var ch chan json.RawMessage
	c.update(func(s *connState) {
		ch = s.pending[key]
		delete(s.pending, key)
	})
	if ch == nil {
		return
	}
	if m.Result != nil {
		ch <- append(json.RawMessage(nil), m.Result...)
	} else {
		ch <- nil // an error response: the prompt settles closed
	}
}
