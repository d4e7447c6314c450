package engine

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/jsonrpc"
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
var ErrInputClosed = jsonrpc.ErrInputClosed

// ErrStartTimeout is ServeConn's error when start-up outlasts StartTimeout.
var ErrStartTimeout = jsonrpc.ErrStartTimeout

var streamIDs atomic.Uint64

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
// Input-required rounds and tasks started on this stream are bound to it
// and end with it. ServeConn never closes r or w, and writes nothing to w
// once it has returned.
func (e *Engine) ServeConn(ctx context.Context, r io.Reader, w io.Writer, opts ConnOptions) error {
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 64
	}
	s := &stream{e: e, id: streamIDs.Add(1), maxBatch: opts.MaxBatch, work: make(chan func())}
	s.conn = jsonrpc.NewConn(e.base, w, s, jsonrpc.ConnOptions{
		MaxLineBytes: opts.MaxLineBytes, MaxInFlight: opts.MaxInFlight,
		StartTimeout: opts.StartTimeout, DrainTimeout: opts.DrainTimeout,
		Start: e.Validate, Ready: opts.Ready, Close: opts.Close,
		StopCause: ErrShuttingDown, Logger: e.logger,
	})
	s.peer = peer{origin: s, principal: opts.Principal, notify: s.conn.Write}
	s.ask = s.elicit
	s.subscriptions.init(s.conn.InputEnded(), s.conn.Done())
	return s.conn.Serve(ctx, r)
}

// stream is one served stream's MCP side, the origin of its requests and
// the handler of its jsonrpc.Conn (which owns the JSON-RPC side: frames,
// in-flight ids, our own requests, the drain): the legacy negotiation,
// the elicitation of legacy clients, and the calls bound to it.
type stream struct {
	e        *Engine
	conn     *jsonrpc.Conn
	peer     peer
	id       uint64 // binds this stream's rounds and tasks to it
	maxBatch int

	ask elicitFunc // elicit, made once

	// subscriptions are the stream's resource subscriptions
	// (subscriptions.go), ended by Closed.
	subscriptions streamSubs

	// work hands a request to an idle worker: a goroutine that served
	// one before and waits for the next (spawn), at most maxIdleWorkers
	// at once (idle counts them).
	work chan func()
	idle atomic.Int32

	mu        sync.Mutex // guards version, canElicit and apps
	version   string     // negotiated legacy revision; "" before initialize
	canElicit bool       // negotiated ≥ 2025-06-18 and declared form elicitation
	apps      bool       // declared the UI extension (docs/SPEC.md §2 "The turn view")
}

// legacyVersion is the revision in force for legacy requests: the
// negotiated one, or 2025-03-26 before initialize (docs/SPEC.md §4).
func (s *stream) legacyVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.version == "" {
		return defaultLegacyVersion
	}
	return s.version
}

func (s *stream) headers() *Headers { return nil }
func (s *stream) owner() owner      { return owner{conn: s.id, principal: s.peer.principal} }
func (s *stream) lasting() bool     { return true }
func (s *stream) subs() *streamSubs { return &s.subscriptions }

func (s *stream) initialized() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version != ""
}

func (s *stream) initialize(version string, caps []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.version != "" {
		return false
	}
	s.version = version
	// elicitation/create exists from 2025-06-18 (docs/SPEC.md §6's table).
	s.canElicit = version >= "2025-06-18" && declaresFormElicitation(caps)
	s.apps = declaresView(caps)
	return true
}

func (s *stream) rendersApps() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.apps
}

// elicitor asks through elicitation/create when asking is on and the
// client negotiated a revision that has it and declared form elicitation.
func (s *stream) elicitor() elicitFunc {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.canElicit || !s.e.askClient {
		return nil
	}
	return s.ask
}

// Request serves one request (jsonrpc.Handler): the pipeline's steps, then
// an inline answer, or the request on a goroutine of its own, admitted
// under the in-flight bound (a refusal answers at once: the reader never
// blocks).
func (s *stream) Request(m jsonrpc.Message, inBatch bool, to jsonrpc.Replier) {
	in := new(inbound)
	md, r := s.e.accept(&s.peer, &m, in, inBatch)
	switch {
	case md == nil:
	case md.inline != nil && s.conn.AtBound():
		// Answered on this goroutine, they never count as in flight, but
		// at the bound they are refused like any other request
		// (docs/SPEC.md §4).
		r = s.e.refusal(in, "server is busy")
	case md.inline != nil:
		r = md.inline(s.e, &s.peer, in, inBatch)
	default:
		s.run(md, in, to)
		return
	}
	to.Reply(r.answer())
}

// run admits in and serves it on its own goroutine, which answers to once
// it is done (nothing for a request cancelled meanwhile).
func (s *stream) run(md *method, in *inbound, to jsonrpc.Replier) {
	inc, err := s.conn.Accept(in.id)
	switch {
	case err == jsonrpc.ErrInFlight:
		to.Reply(jsonrpc.EncodeError(in.id, jsonrpc.ErrInFlight))
		return
	case err == jsonrpc.ErrClosing:
		to.Reply(s.e.refusal(in, ErrShuttingDown.Error()).answer())
		return
	case err != nil:
		to.Reply(s.e.refusal(in, "server is busy").answer())
		return
	}
	if !s.spawn(func() {
		r := s.e.serve(inc.Context(), &s.peer, in, md)
		if inc.Finish() {
			s.e.abandon(in, errCancelledByClient)
			r = reply{kind: Cancelled} // docs/SPEC.md §3: no response for a cancelled request
		}
		to.Reply(r.answer())
		if c := in.named; c != nil {
			c.wire.release() // a 2025-11-25 task's notifications follow the answer naming it
		}
		inc.Done()
	}) {
		inc.Finish()
		inc.Done()
		to.Reply(s.e.refusal(in, ErrShuttingDown.Error()).answer())
	}
}

// maxIdleWorkers bounds the goroutines a stream keeps waiting for its next
// request.
const maxIdleWorkers = 4

// spawn runs f on a goroutine of the engine's (goCall): an idle worker of
// this stream when one waits, else a new one, which then waits for the
// stream's next request while fewer than maxIdleWorkers wait, until the
// stream's serving ends. A request's goroutine grows its stack by copying
// as the call goes deeper; reusing one that has grown spares every
// request of a busy stream that cost. It reports false, and f does not
// run, once the engine has stopped.
func (s *stream) spawn(f func()) bool {
	if s.e.isStopping() {
		return false
	}
	select {
	case s.work <- f:
		return true
	default:
	}
	return s.e.goCall(func() {
		for {
			f()
			if s.idle.Add(1) > maxIdleWorkers {
				s.idle.Add(-1)
				return
			}
			select {
			case f = <-s.work:
				s.idle.Add(-1)
			case <-s.conn.Done():
				s.idle.Add(-1)
				return
			}
		}
	})
}

// errCancelledByClient is the cause of a call its client cancelled.
var errCancelledByClient = errors.New("cancelled by the client")

// Notification serves a notification (jsonrpc.Handler).
// notifications/initialized changes nothing (requests are served from the
// initialize answer on), so it is ignored like every unknown notification;
// notifications/cancelled ends the request it names, or the parked call
// whose chain's latest id it is.
func (s *stream) Notification(m jsonrpc.Message) {
	if i, ok := cancelledID(&m); ok {
		s.conn.Cancel(i, errCancelledByClient)
		s.e.cancelled(s.owner(), i)
	}
}

// Batch says whether a frame is served as a batch (jsonrpc.Handler):
// 2025-03-26 only, at most MaxBatch elements (docs/SPEC.md §4).
func (s *stream) Batch(arr []byte) *Error {
	version := s.legacyVersion()
	if !batchesAllowed(version) {
		return batchRefused(version, 0, s.maxBatch) // refused before the array is split
	}
	n, _ := jsonrpc.ArrayLen(arr)
	return batchRefused(version, n, s.maxBatch)
}

// Closed ends what lived on the stream (jsonrpc.Handler): its parked
// rounds and its tasks, which nobody can resume or name again, and its
// resource subscriptions.
func (s *stream) Closed() {
	s.subscriptions.legacy.close()
	s.e.closeOwner(s.owner())
}

// elicit sends elicitation/create to the legacy client and waits for its
// response until the round lifetime passes, the call's ctx ends or the
// stream's input ends; then it sends notifications/cancelled for our
// request so the client can close its dialog (docs/SPEC.md §6 "Legacy
// stdio"). It returns the result, or nil when there is none (an error
// response included). A 2025-11-25 task's prompt carries the related task
// (docs/SPEC.md §14).
func (s *stream) elicit(ctx context.Context, f domain.Form, task string) json.RawMessage {
	params := elicitParams{Mode: "form", Message: f.Message, RequestedSchema: f.RequestedSchema}
	if s.legacyVersion() == "2025-06-18" {
		params.Mode = "" // that revision has form mode only, unnamed
		if f.RequestedSchema20250618 != nil {
			params.RequestedSchema = f.RequestedSchema20250618 // nor titled enums
		}
	}
	if task != "" {
		params.Meta = relatedTaskMeta(task)
	}
	body, _ := domain.MarshalJSON(params)
	ctx, cancel := context.WithTimeoutCause(ctx, s.e.roundLifetime, errNoAnswer)
	defer cancel()
	id, result, err := s.conn.Call(ctx, "elicitation/create", body)
	if err == nil {
		return result
	}
	reason := "the request was cancelled"
	switch {
	case errors.Is(err, errNoAnswer):
		reason = "no answer in time"
	case errors.Is(err, jsonrpc.ErrInputEnded):
		reason = "the input ended"
	}
	b := jsonrpc.AppendString([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`), id)
	s.conn.Write(append(jsonrpc.AppendString(append(b, `,"reason":`...), reason), "}}"...))
	return nil
}

var errNoAnswer = errors.New("no answer in time")

// cancelledID is the requestId a notifications/cancelled names; false for
// any other message, or params without a valid id (ignored, as MCP says a
// notification never gets an error).
func cancelledID(m *jsonrpc.Message) (jsonrpc.ID, bool) {
	if m.Method != "notifications/cancelled" || !jsonrpc.IsObject(m.Params) {
		return jsonrpc.ID{}, false
	}
	raw, _ := jsonrpc.Lookup(members(m.Params), "requestId")
	return jsonrpc.ParseID(raw)
}

// cancelled serves a notifications/cancelled from o naming request i, in
// the index (docs/SPEC.md §3 "Cancellation"): exactly one legacy
// tools/call of o's in flight over HTTP with that id is cancelled (its
// request answers nothing); the parked call whose chain's latest id it is
// on a stream ends. None: ignored, as an unknown or finished id; several
// (ids repeat across clients of one principal: every loopback client is
// the same principal, and SDKs count ids from 0): none is cancelled and
// that is logged with the count — cancelling one at a guess, or all, could
// end another client's turn, while the client that meant it can still
// close its request.
func (e *Engine) cancelled(o owner, i jsonrpc.ID) {
	c, n := e.index.requests.lookup(o, i)
	switch {
	case n > 1:
		e.logger.Warn("engine: notifications/cancelled ignored: several requests of the same principal are in flight with that id",
			"requests", n)
	case c == nil:
	case c.mode == modePlain:
		c.update(func(s *callState) { s.cancelled = true })
		c.cancel(errCancelledByClient)
	default:
		c.leave(errCancelledByClient)
	}
}
