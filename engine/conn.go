package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
//     flight may finish and write for DrainTimeout, then the rest are
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
		c.end()
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
		case <-c.failed:
			c.stop()
			stopReader()
			return fmt.Errorf("write: %w", c.failErr)
		case <-ctx.Done():
			c.stop()
			stopReader()
			return nil
		case <-e.base.Done():
			c.stop()
			stopReader()
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

// conn is one served stream.
type conn struct {
	e      *Engine
	w      io.Writer
	opts   ConnOptions
	peer   *peer
	ctx    context.Context // the parent of every request's context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup // this stream's request goroutines

	writeMu  sync.Mutex // serialises writes; guards the fields below
	writeErr error
	failOnce sync.Once
	failed   chan struct{} // closed on the first failed write
	failErr  error

	inputEnd chan struct{} // closed when the input has ended: the client can answer nothing more
	endOnce  sync.Once

	mu        sync.Mutex // guards the fields below
	version   string     // negotiated legacy revision; "" before initialize
	canElicit bool       // negotiated ≥ 2025-06-18 and declared form elicitation
	inflight  map[string]*flight
	closing   bool
	// pending are our elicitation/create requests awaiting the client's
	// response, by id key; their ids ("srv-<n>") are our own id space.
	pending map[string]chan json.RawMessage
	nextSrv int
	// chains maps the id of a request that answered input_required to the
	// parked call, so notifications/cancelled naming it ends the call.
	chains map[string]*parkedCall
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
		failed:   make(chan struct{}),
		inputEnd: make(chan struct{}),
		inflight: make(map[string]*flight),
		pending:  make(map[string]chan json.RawMessage),
		chains:   make(map[string]*parkedCall),
	}
	c.ctx, c.cancel = context.WithCancelCause(e.base)
	c.peer = &peer{
		conn: c, principal: opts.Principal, notify: c.write,
		bind: "conn:" + strconv.FormatUint(connIDs.Add(1), 10),
	}
	return c
}

// read is the only reader of r. It stops at the end of the input, on a read
// failure, or once serving has stopped (after its current Read returns).
func (c *conn) read(r io.Reader, frames chan<- frame) {
	lr := newLineReader(r, c.opts.MaxLineBytes)
	for {
		line, oversize, err := lr.next()
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

// frame serves one line: blank lines are ignored; an oversize line is
// -32600 and invalid JSON -32700, both with no id (docs/SPEC.md §4).
func (c *conn) frame(f frame) {
	line := f.line
	switch {
	case f.oversize:
		c.write(errorFrame(id{}, invalidRequest("message exceeds the line limit")))
		return
	case firstByte(line) == 0:
		return
	case firstByte(line) == '{': // validated as it is read
		if r, ok := c.e.handle(c.peer, line, false, c.deliver); ok {
			c.deliver(r)
		}
	case !domain.ValidJSON(line):
		c.write(errorFrame(id{}, errParse))
	case firstByte(line) == '[':
		c.e.handleBatch(c.peer, line, c.opts.MaxBatch, nil, c.deliver)
	default:
		c.write(errorFrame(id{}, invalidRequest("not a JSON-RPC message")))
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
	if c.writeErr != nil {
		return
	}
	if _, err := c.w.Write(append(b, '\n')); err != nil {
		c.writeErr = err
		c.failOnce.Do(func() { c.failErr = err; close(c.failed) })
	}
}

// errServingEnded marks the stream's output closed once ServeConn returned.
var errServingEnded = errors.New("serving ended")

// closeWrites ends writing: a call that outlived its stream (a session
// ignoring cancellation) writes nothing after ServeConn has returned.
func (c *conn) closeWrites() {
	c.writeMu.Lock()
	if c.writeErr == nil {
		c.writeErr = errServingEnded
	}
	c.writeMu.Unlock()
}

// legacyVersion is the revision in force for legacy requests: the
// negotiated one, or 2025-03-26 before initialize (docs/SPEC.md §4).
func (c *conn) legacyVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version == "" {
		return defaultLegacyVersion
	}
	return c.version
}

// negotiated reports whether the stream was initialized.
func (c *conn) negotiated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version != ""
}

// negotiate records an initialize; false when the stream was initialized
// already.
func (c *conn) negotiate(version string, caps []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.version != "" {
		return false
	}
	c.version = version
	// elicitation/create exists from 2025-06-18 (docs/SPEC.md §6's table).
	c.canElicit = version >= "2025-06-18" && declaresFormElicitation(caps)
	return true
}

func (c *conn) isInFlight(i id) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inflight[i.key()] != nil
}

func (c *conn) atBound() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.inflight) >= c.opts.MaxInFlight
}

// start admits a request to be served on its own goroutine (ok false: it
// delivers its answer), or answers at once: a duplicate in-flight id
// (-32600), the in-flight bound (busy), or a stream that is closing
// (shutting down).
func (c *conn) start(p *peer, in *inbound, deliver func(reply)) (reply, bool) {
	key := in.id.key()
	c.mu.Lock()
	switch {
	case c.inflight[key] != nil:
		c.mu.Unlock()
		return answerErr(in.id, invalidRequest("id is already in flight")), true
	case c.closing:
		c.mu.Unlock()
		return c.e.refusal(in, ErrShuttingDown.Error()), true
	case len(c.inflight) >= c.opts.MaxInFlight:
		c.mu.Unlock()
		return c.e.refusal(in, "server is busy"), true
	}
	ctx, cancel := context.WithCancelCause(c.ctx)
	f := &flight{cancel: cancel}
	c.inflight[key] = f
	var elicit elicitFunc
	if !in.modern && c.canElicit && c.e.rounds != nil {
		elicit = c.elicit
	}
	c.wg.Add(1)
	c.mu.Unlock()
	run := func() {
		defer c.wg.Done()
		r := c.e.serve(ctx, p, in, elicit)
		c.mu.Lock()
		delete(c.inflight, key)
		cancelled := f.cancelled
		c.mu.Unlock()
		cancel(nil)
		if cancelled {
			c.e.abandon(in, errCancelledByClient)
			r = reply{kind: Cancelled} // docs/SPEC.md §3: no response for a cancelled request
		}
		deliver(r)
	}
	if !c.e.goCall(run) {
		c.mu.Lock()
		delete(c.inflight, key)
		c.mu.Unlock()
		c.wg.Done()
		cancel(nil)
		return c.e.refusal(in, ErrShuttingDown.Error()), true
	}
	return reply{}, false
}

// notification handles a client notification. notifications/initialized
// changes nothing (requests are served from the initialize answer on), so it
// is ignored like every unknown notification.
func (c *conn) notification(m *message) {
	if m.method != "notifications/cancelled" || !isObject(m.params) {
		return
	}
	raw, _ := lookup(mustMembers(m.params), "requestId")
	i, ok := parseID(raw)
	if !ok {
		return
	}
	key := i.key()
	c.mu.Lock()
	f := c.inflight[key]
	if f != nil {
		f.cancelled = true
	}
	pc := c.chains[key]
	delete(c.chains, key)
	c.mu.Unlock()
	if f != nil {
		f.cancel(errCancelledByClient)
	}
	if pc != nil {
		c.e.endParked(pc, errCancelledByClient)
	}
}

func mustMembers(obj []byte) []member {
	ms, _ := members(obj, nil)
	return ms
}

// addChain remembers that the request key parked pc: key is now the
// chain's latest id, the only one whose notifications/cancelled ends the
// call (an earlier id of the chain is a finished request, ignored like any
// other). Chains whose calls have ended are dropped, so the map stays
// bounded by the parked rounds.
func (c *conn) addChain(key string, pc *parkedCall) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, x := range c.chains {
		if x == pc || x.ended() {
			delete(c.chains, k)
		}
	}
	c.chains[key] = pc
}

// finish handles the end of the input: a drain, then a stop.
func (c *conn) finish(readErr error, readerDone <-chan struct{}) error {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	c.end()
	drain, cancel := context.WithTimeout(context.Background(), c.opts.DrainTimeout)
	defer cancel()
	if waitGroup(drain, &c.wg) != nil {
		c.stop()
	}
	c.e.endRounds(c.peer.bind)
	<-readerDone
	if errors.Is(readErr, io.EOF) {
		return nil
	}
	return fmt.Errorf("read: %w", readErr)
}

// end marks the input as ended: prompts waiting for this client settle
// closed.
func (c *conn) end() { c.endOnce.Do(func() { close(c.inputEnd) }) }

// stop cancels every request in flight as shutting down (a tools/call
// still answers "server is shutting down" while the stream can write),
// ends this stream's parked rounds and waits for the requests, at most
// DrainTimeout.
func (c *conn) stop() {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	c.end()
	c.cancel(ErrShuttingDown)
	c.e.endRounds(c.peer.bind)
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.DrainTimeout)
	defer cancel()
	if waitGroup(ctx, &c.wg) != nil {
		c.e.logger.Warn("engine: calls still running after a stream stopped; the session ignores cancellation")
	}
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
	c.mu.Lock()
	c.nextSrv++
	srvID := "srv-" + strconv.Itoa(c.nextSrv)
	key := "s:" + srvID
	ch := make(chan json.RawMessage, 1)
	c.pending[key] = ch
	version := c.version
	c.mu.Unlock()

	params := elicitParms{Mode: "form", Message: f.Message, RequestedSchema: f.RequestedSchema}
	if version == "2025-06-18" {
		params.Mode = "" // that revision has form mode only, unnamed
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
	c.mu.Lock()
	delete(c.pending, key)
	c.mu.Unlock()
	note, _ := domain.MarshalJSON(notification{JSONRPC: "2.0", Method: "notifications/cancelled",
		Params: cancelledParams{RequestID: srvID, Reason: reason}})
	c.write(note)
	return nil
}

// response routes a client's response to our pending request; a response
// for an unknown id is ignored.
func (c *conn) response(m *message) {
	key := m.id.key()
	c.mu.Lock()
	ch := c.pending[key]
	delete(c.pending, key)
	c.mu.Unlock()
	if ch == nil {
		return
	}
	if m.result != nil {
		ch <- append(json.RawMessage(nil), m.result...)
	} else {
		ch <- nil // an error response: the prompt settles closed
	}
}

// lineReader splits a byte stream into newline-delimited frames without ever
// holding more than max bytes of one line (plus a CR): an oversize line is
// read past in chunks and reported, not buffered whole (docs/SPEC.md §4
// "stdio framing"). The bound counts the message, not its line ending: a
// CR before the LF is not part of it.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its line ending. oversize reports a
// line longer than max, whose bytes were discarded. At the end of input it
// returns io.EOF (a last line without a newline is returned first).
func (l *lineReader) next() (line []byte, oversize bool, err error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		if !oversize {
			n := len(chunk)
			if n > 0 && chunk[n-1] == '\n' {
				n--
			}
			// One byte of slack for a CR that turns out to end the line.
			if len(l.buf)+n > l.max+1 {
				oversize = true
				l.buf = l.buf[:0]
			} else {
				l.buf = append(l.buf, chunk[:n]...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil || errors.Is(err, io.EOF):
			if err != nil && !oversize && len(l.buf) == 0 {
				return nil, false, io.EOF
			}
			if oversize {
				return nil, true, nil
			}
			if n := len(l.buf); n > 0 && l.buf[n-1] == '\r' {
				l.buf = l.buf[:n-1]
			}
			if len(l.buf) > l.max {
				return nil, true, nil
			}
			return l.buf, false, nil
		default:
			return nil, false, err
		}
	}
}
