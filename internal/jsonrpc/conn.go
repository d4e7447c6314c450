package jsonrpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// Conn is one JSON-RPC 2.0 connection over a newline-delimited stream, in
// the manner of x/tools jsonrpc2_v2's Connection: it reads the frames
// (LineReader), answers what is not JSON-RPC, routes the responses to the
// requests it sent (Call), keeps the ids of the incoming requests in
// flight under a bound (Accept), cancels one by id (Cancel), serves
// batches, and ends with a drain. What the messages mean is its
// Handler's: the connection is JSON-RPC only.
//
// All its state is one struct changed only through update, which also
// does what follows from a change (jsonrpc2_v2's updateInFlight): closing
// ends the input for outgoing calls, closing with nothing running ends
// the drain, a failed write stops serving.
type Conn struct {
	w      io.Writer
	h      Handler
	opts   ConnOptions
	ctx    context.Context // the parent of every incoming request's context
	cancel context.CancelCauseFunc

	writeMu sync.Mutex // serialises writes to w; guards wErr
	wErr    error      // the first failed write, or errServingEnded

	inputEnd chan struct{} // closed once the connection is closing
	eof      chan struct{} // closed once the input ended (finish), before the drain
	drained  chan struct{} // closed once closing with nothing running

	mu sync.Mutex // guards s; taken by update and by the readers of s
	s  connState
}

// connState is everything about a connection that changes while it is
// served.
type connState struct {
	incoming map[string]*Incoming // requests in flight, by ID.Key
	// running counts accepted requests until their goroutine is done (Done):
	// a drain waits for them, not only for the ids (an id is free again as
	// soon as its answer is ready, before it is written).
	running int
	// closing: no new request is accepted and outgoing calls end (the
	// input ended, or serving stops).
	closing bool
	failErr error // the first failed write: serving stops
	// outgoing are our requests awaiting the peer's response, by ID.Key;
	// their ids ("srv-<n>") are our own id space.
	outgoing map[string]chan []byte
	nextID   int

	inputEnded, drained bool // their channels are closed
}

// ConnOptions configures a Conn. Zero values mean the defaults.
type ConnOptions struct {
	// MaxLineBytes bounds one frame, without its line ending; default
	// 4 MiB. A longer line is answered -32600 with no id and read past
	// without being buffered.
	MaxLineBytes int
	// MaxInFlight bounds the incoming requests accepted at once (Accept);
	// default 64.
	MaxInFlight int
	// StartTimeout bounds Start; default 15 s.
	StartTimeout time.Duration
	// DrainTimeout is how long accepted requests may finish and write
	// after the input ends, and how long a stop waits for cancelled ones;
	// default 5 s.
	DrainTimeout time.Duration
	// Start, when set, runs before serving begins (ctx bounded by
	// StartTimeout); frames that arrive meanwhile are kept and served in
	// order once it returns nil. Its error fails Serve.
	Start func(ctx context.Context) error
	// Ready, when set, is called once Start has succeeded.
	Ready func()
	// Close, when set, is called when serving stops before the end of the
	// input (a stop, a broken output), to end a Read blocked on r; Serve
	// then waits for its reader. Without it a blocked Read is left to the
	// caller (os.Stdin cannot be interrupted).
	Close func() error
	// StopCause is the cause requests are cancelled with when serving
	// stops (Serve's ctx ends, or a drain runs out); nil means
	// context.Canceled.
	StopCause error
	// Logger receives the one warning a Conn logs: requests still running
	// after a stop (a handler ignoring cancellation). nil discards.
	Logger *slog.Logger
}

// Handler serves what a Conn reads, on the reading goroutine.
type Handler interface {
	// Request serves a request whose id is not in flight. Its answer goes
	// to reply exactly once, on this goroutine (answered at once) or on a
	// goroutine of the handler's own after Accept. inBatch: the request is
	// an element of a batch.
	// (m is passed by value: through the interface a pointer would move
	// every decoded message to the heap.)
	Request(m Message, inBatch bool, reply Replier)
	// Notification serves a notification (nothing is ever answered).
	Notification(m Message)
	// Batch says whether arr, a JSON array (valid JSON text), is served as
	// a batch: nil, or the error that answers it whole (no id).
	Batch(arr []byte) *Error
	// Closed runs once, when serving has ended and the drain is over:
	// what lived on the connection ends with it.
	Closed()
}

// Errors of Serve's start-up.
var (
	// ErrInputClosed: the input ended during start-up before any frame
	// arrived: the peer went away without asking anything.
	ErrInputClosed = errors.New("input closed during start-up")
	// ErrStartTimeout: Start outlasted StartTimeout.
	ErrStartTimeout = errors.New("start-up timed out")
)

// Errors of Accept.
var (
	ErrInFlight = InvalidRequest("id is already in flight")
	ErrClosing  = errors.New("the connection is closing")
	ErrBusy     = errors.New("too many requests in flight")
)

// ErrInputEnded is Call's error when the connection closed before the
// response came.
var ErrInputEnded = errors.New("the input ended")

// errStopped is start-up's answer when Serve's ctx ended it; Serve returns
// nil.
var errStopped = errors.New("stopped during start-up")

// errServingEnded marks the output closed once Serve returned.
var errServingEnded = errors.New("serving ended")

// NewConn returns a connection that writes to w and whose requests'
// contexts derive from parent: parent ending (with its cause) ends serving
// and every request.
func NewConn(parent context.Context, w io.Writer, h Handler, opts ConnOptions) *Conn {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = 4 << 20
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 64
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 15 * time.Second
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Conn{w: w, h: h, opts: opts, inputEnd: make(chan struct{}), eof: make(chan struct{}), drained: make(chan struct{}),
		s: connState{incoming: make(map[string]*Incoming), outgoing: make(map[string]chan []byte)}}
	c.ctx, c.cancel = context.WithCancelCause(parent)
	return c
}

// update applies f to the connection's state under its lock, then acts on
// what the state now says; every change of connState goes through it.
func (c *Conn) update(f func(*connState)) {
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

// frame is one line the reader read, or the end of the input.
type frame struct {
	line     []byte
	oversize bool
	err      error // io.EOF or a read failure; the last frame
}

// Serve serves the stream read from r until the input ends, ctx or the
// parent ends, or a write fails. It returns:
//   - nil at the end of the input, after a drain: no new request is
//     accepted, outgoing calls end, accepted requests may finish and write
//     for DrainTimeout (unless ctx or the parent ends or a write fails
//     meanwhile), then the rest are cancelled with StopCause;
//   - nil when ctx or the parent ends: the requests in flight are
//     cancelled (with StopCause, or the parent's cause) and waited for, at
//     most DrainTimeout;
//   - the write error, wrapped, when w fails; a read error, wrapped;
//   - start-up's: ErrInputClosed, ErrStartTimeout, Start's error, or the
//     parent's cause (nil when ctx ended it).
//
// Handler.Closed runs before it returns (not when start-up failed). Serve
// never closes r or w, and writes nothing to w once it has returned.
func (c *Conn) Serve(ctx context.Context, r io.Reader) error {
	defer c.cancel(nil)
	defer c.closeWrites()
	// Every reason to stop serving ends c.ctx: ctx (here), the parent (c.ctx
	// is under it) and a failed write (update).
	unhook := context.AfterFunc(ctx, func() { c.cancel(c.stopCause()) })
	defer unhook()
	frames := make(chan frame, 1)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		c.read(r, frames)
	}()
	stopReader := func() {
		if c.opts.Close != nil {
			_ = c.opts.Close()
			<-readerDone
		}
	}
	early, err := c.startup(ctx, frames)
	if err != nil {
		c.update(func(s *connState) { s.closing = true }) // nothing runs yet
		if !errors.Is(err, ErrInputClosed) {
			stopReader()
		}
		if err == errStopped {
			return nil
		}
		return err
	}
	if c.opts.Ready != nil {
		c.opts.Ready()
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

// read is the only reader of r. It stops at the end of the input, on a read
// failure, or once serving has stopped (after its current Read returns).
func (c *Conn) read(r io.Reader, frames chan<- frame) {
	lr := NewLineReader(r, c.opts.MaxLineBytes)
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
// reader waits (the peer's writes block) until serving begins.
const maxEarlyFrames = 256

// startup runs Start while keeping the frames that arrive.
func (c *Conn) startup(ctx context.Context, frames <-chan frame) ([]frame, error) {
	if c.opts.Start == nil {
		return nil, nil
	}
	vctx, cancel := context.WithTimeoutCause(ctx, c.opts.StartTimeout, ErrStartTimeout)
	defer cancel()
	started := make(chan error, 1)
	go func() { started <- c.opts.Start(vctx) }()
	var early []frame
	for {
		in := frames
		if len(early) >= maxEarlyFrames {
			in = nil
		}
		select {
		case err := <-started:
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
				// The peer went away before saying anything: nothing to
				// serve.
				cancel()
				<-started
				return nil, ErrInputClosed
			}
			// Frames that arrive during start-up are kept, the end of the
			// input after them too: a peer that pipes its requests and
			// closes its output still gets every answer.
			early = append(early, f)
			if f.err != nil {
				frames = nil // the reader has ended
			}
		case <-c.ctx.Done():
			cancel()
			<-started
			if ctx.Err() != nil {
				return nil, errStopped
			}
			return nil, context.Cause(c.ctx)
		case <-vctx.Done():
			<-started
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
func (c *Conn) frame(f frame) {
	line := f.line
	switch {
	case f.oversize:
		c.Write(EncodeError(ID{}, InvalidRequest(lineLimitMessage(c.opts.MaxLineBytes))))
	case FirstByte(line) == 0:
	case FirstByte(line) == '{': // validated as it is read
		c.message(line, false, c)
	case !Valid(line):
		c.Write(EncodeError(ID{}, ErrParse))
	case FirstByte(line) == '[':
		c.batch(line)
	default:
		c.Write(EncodeError(ID{}, InvalidRequest("not a JSON-RPC message")))
	}
}

// Done is closed once serving has ended (Serve is returning) or stops
// (its context or the parent's ended, a write failed): what waits for the
// connection's next message gives up then.
func (c *Conn) Done() <-chan struct{} { return c.ctx.Done() }

// InputEnded is closed once the input has ended (the peer closed its
// side, or reading failed), before the drain begins; never when serving
// stops for another reason (Done ends then). A request that lasts until
// its client ends it (a subscription) ends here rather than holding the
// drain: the peer has gone.
func (c *Conn) InputEnded() <-chan struct{} { return c.eof }

// Reply writes a single message's answer (Conn is its frame's Replier).
func (c *Conn) Reply(answer []byte) {
	if answer != nil {
		c.Write(answer)
	}
}

// message decodes one JSON object and serves it: an error answers at once
// (a notification gets none), a response goes to the call that awaits it,
// a notification and a request to the handler — a request reusing an id
// in flight is -32600, the first is untouched, whatever its method.
func (c *Conn) message(obj []byte, inBatch bool, reply Replier) {
	// (The cases read m as a value: a pointer passed on would move it to
	// the heap.)
	m, err := DecodeMessage(obj)
	switch {
	case err == ErrParse:
		reply.Reply(EncodeError(ID{}, err))
	case err != nil && m.IsNotification():
		reply.Reply(nil) // a notification never gets a reply, not even an error
	case err != nil:
		reply.Reply(EncodeError(m.ID, err))
	case !m.HasMethod:
		c.response(&m)
		reply.Reply(nil)
	case !m.HasID:
		c.h.Notification(m)
		reply.Reply(nil)
	case c.InFlight(m.ID):
		reply.Reply(EncodeError(m.ID, ErrInFlight))
	default:
		c.h.Request(m, inBatch, reply)
	}
}

// batch serves a JSON array: each element as a message, answered with one
// array once every element is done, or nothing when no element had an
// answer. The handler may refuse it whole first.
func (c *Conn) batch(arr []byte) {
	if err := c.h.Batch(arr); err != nil {
		c.Write(EncodeError(ID{}, err))
		return
	}
	elems := Elements(arr)
	b := NewBatch(len(elems), c.Reply)
	for i, el := range elems {
		if FirstByte(el) != '{' {
			b.Element(i).Reply(EncodeError(ID{}, InvalidRequest("not a JSON-RPC message")))
			continue
		}
		c.message(el, true, b.Element(i))
	}
}

// Write sends one message as one line; after the first failure nothing
// more is written and serving stops.
func (c *Conn) Write(b []byte) {
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

// closeWrites ends writing: a request that outlived its stream (a handler
// ignoring cancellation) writes nothing after Serve has returned.
func (c *Conn) closeWrites() {
	c.writeMu.Lock()
	if c.wErr == nil {
		c.wErr = errServingEnded
	}
	c.writeMu.Unlock()
}

// failure is the first failed write, or nil.
func (c *Conn) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s.failErr
}

// Incoming is one accepted request: in flight from Accept until Finish,
// counted by the drain until Done.
type Incoming struct {
	c         *Conn
	key       string
	ctx       context.Context
	cancel    context.CancelCauseFunc
	cancelled bool // by Cancel: nothing is written for it (under c.mu)
}

// Accept admits request id: it is in flight from now on, on a context of
// its own under the connection's. It fails with ErrInFlight (the id is in
// flight), ErrClosing (the connection is closing) or ErrBusy (MaxInFlight
// requests are in flight).
func (c *Conn) Accept(id ID) (*Incoming, error) {
	key := id.Key()
	var r *Incoming
	var err error
	c.update(func(s *connState) {
		switch {
		case s.incoming[key] != nil:
			err = ErrInFlight
		case s.closing:
			err = ErrClosing
		case len(s.incoming) >= c.opts.MaxInFlight:
			err = ErrBusy
		default:
			r = &Incoming{c: c, key: key}
			r.ctx, r.cancel = context.WithCancelCause(c.ctx)
			s.incoming[key] = r
			s.running++
		}
	})
	return r, err
}

// Context is the request's: it ends when the request is cancelled
// (Cancel), when serving stops, or with Finish.
func (r *Incoming) Context() context.Context { return r.ctx }

// Finish ends the request's flight: its id is free again and its context
// ends. It reports whether Cancel cancelled it (then nothing may be
// written for it).
func (r *Incoming) Finish() (cancelled bool) {
	r.c.update(func(s *connState) {
		delete(s.incoming, r.key)
		cancelled = r.cancelled
	})
	r.cancel(nil)
	return cancelled
}

// Done ends the request: its answer is written, and the drain no longer
// waits for it. Call it once, after Finish.
func (r *Incoming) Done() { r.c.update(func(s *connState) { s.running-- }) }

// InFlight reports whether a request with id is in flight.
func (c *Conn) InFlight(id ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s.incoming[id.Key()] != nil
}

// AtBound reports whether MaxInFlight requests are in flight.
func (c *Conn) AtBound() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.s.incoming) >= c.opts.MaxInFlight
}

// Cancel cancels the request id in flight with cause: nothing will be
// written for it. It reports whether one was in flight.
func (c *Conn) Cancel(id ID, cause error) bool {
	key := id.Key()
	var r *Incoming
	c.update(func(s *connState) {
		if r = s.incoming[key]; r != nil {
			r.cancelled = true
		}
	})
	if r != nil {
		r.cancel(cause)
	}
	return r != nil
}

// Call sends a request for method with params (a JSON object, or nil)
// under an id of the connection's own ("srv-<n>") and waits for its
// response. It returns the id and the result; a nil result with a nil
// error is an error response. When ctx ends first it returns ctx's cause,
// and ErrInputEnded when the connection closes first; the response, should
// it come later, is then ignored, as is a response to an id never sent.
func (c *Conn) Call(ctx context.Context, method string, params []byte) (id string, result []byte, err error) {
	ch := make(chan []byte, 1)
	var key string
	c.update(func(s *connState) {
		s.nextID++
		id = "srv-" + strconv.Itoa(s.nextID)
		key = "s:" + id
		s.outgoing[key] = ch
	})
	b := AppendString([]byte(`{"jsonrpc":"2.0","id":`), id)
	b = AppendString(append(b, `,"method":`...), method)
	if params != nil {
		b = append(append(b, `,"params":`...), params...)
	}
	c.Write(append(b, '}'))
	select {
	case raw := <-ch:
		return id, raw, nil
	case <-ctx.Done():
		err = context.Cause(ctx)
	case <-c.inputEnd:
		err = ErrInputEnded
	}
	c.update(func(s *connState) { delete(s.outgoing, key) })
	return id, nil, err
}

// response routes a peer's response to our request; a response for an
// unknown id is ignored.
func (c *Conn) response(m *Message) {
	key := m.ID.Key()
	var ch chan []byte
	c.update(func(s *connState) {
		ch = s.outgoing[key]
		delete(s.outgoing, key)
	})
	if ch == nil {
		return
	}
	if m.Result != nil {
		ch <- append([]byte(nil), m.Result...)
	} else {
		ch <- nil // an error response
	}
}

// stopCause is what requests are cancelled with when serving stops.
func (c *Conn) stopCause() error {
	if c.opts.StopCause != nil {
		return c.opts.StopCause
	}
	return context.Canceled
}

// finish handles the end of the input: a drain, then what a stop does to
// the rest.
func (c *Conn) finish(readErr error, readerDone <-chan struct{}) error {
	close(c.eof)
	c.shut(true)
	<-readerDone
	if errors.Is(readErr, io.EOF) {
		return nil
	}
	return fmt.Errorf("read: %w", readErr)
}

// shut ends serving, once: no new request is accepted and outgoing calls
// end (update, closing). With drain, accepted requests may finish and
// write for DrainTimeout, unless serving is stopped meanwhile; then (or at
// once without drain) the rest are cancelled with StopCause (a request the
// parent ended keeps the parent's cause) and waited for, at most
// DrainTimeout. Last, the handler's Closed.
func (c *Conn) shut(drain bool) {
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
		c.cancel(c.stopCause())
		t := time.NewTimer(c.opts.DrainTimeout)
		select {
		case <-c.drained:
		case <-t.C:
			c.opts.Logger.Warn("jsonrpc: requests still running after a stream stopped; the handler ignores cancellation")
		}
		t.Stop()
	}
	c.h.Closed()
}
