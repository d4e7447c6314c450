// Package streamable is the Streamable HTTP framing shared by agentmcp's two
// HTTP hosts (docs/SPEC.md §4 "Streamable HTTP"; MCP 2025-03-26 … 2026-07-28
// "Transports: Streamable HTTP"). It turns one POST into one
// [engine.Engine.Exchange] and writes back what the engine answers, as
// application/json or as a text/event-stream.
//
// It holds no admission logic: path, Host, Origin and credentials are the
// host's (adapters/httploopback, adapters/httpremote), which runs its checks
// first and hands admitted requests to a [Handler]. What the Handler does, in
// docs/SPEC.md §4's order, all before the body is read unless noted:
//
//	method not POST                          405, Allow: POST, empty
//	Content-Type not application/json        415, JSON-RPC -32600 without id
//	Accept lacks application/json or
//	  text/event-stream                      406, JSON-RPC -32600 without id
//	in-flight limit (or principal's share)   503, empty
//	body over the limit (declared)           413, empty
//	body over the limit (streamed, chunked)  413, empty          (while reading)
//	body stalls past BodyReadTimeout         408, empty          (while reading)
//	body breaks off (connection closed)      400, -32700 no id   (while reading)
//	a valid batch when its slots are not free 503, empty         (after reading)
//	everything else                          the engine's answer: Answered 200,
//	                                         Accepted 202, Invalid 400,
//	                                         UnknownMethod 404
//
// The hosts are stateless: an Mcp-Session-Id is never minted, echoed or
// required, and Last-Event-ID is ignored (no resumability).
//
// The Handler is an http.Handler a Go host can mount in its own mux, behind
// its own authentication (see the package example); [Handler.ServeMCP]
// serves a request on behalf of an admitted principal. admission.go holds
// the front-door helpers both hosts share (the refusal, the bearer
// credential, the Origin rule, the exact request target). Around them the
// package holds what both hosts run the same way: a [Server] (the HTTP/1.1
// server, its timeouts, and the Start / Stop / Wait lifecycle of
// docs/SPEC.md §5.2 and §3 "Ending"), which caps and tunes its
// connections with internal/netcap (§5.2, §5.3).
package streamable

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/jsonrpc"
	"github.com/agentmcp/agentmcp/ports"
)

// Defaults of [Options] (docs/SPEC.md §4, §5.2).
const (
	DefaultMaxBodyBytes    = 1 << 20 // 1 MiB
	DefaultMaxInFlight     = 16
	DefaultMaxBatch        = 16
	DefaultSSEAfter        = 10 * time.Second
	DefaultKeepAlive       = 15 * time.Second
	DefaultBodyReadTimeout = 15 * time.Second
	DefaultWriteStall      = 30 * time.Second
)

// DefaultUnreadBodyGrace is the default of [Options.UnreadBodyGrace].
const DefaultUnreadBodyGrace = time.Second

// Options configures a [Handler]. The zero value of every field means its
// default; hosts leave them zero, tests shorten the durations.
type Options struct {
	// MaxBodyBytes bounds a request body, declared (Content-Length) or
	// streamed (chunked); default 1 MiB. Larger bodies get 413.
	MaxBodyBytes int64
	// MaxInFlight bounds the requests being read or served at once; default
	// 16. One more gets 503 without its body being read. Each element of a
	// 2025-03-26 batch counts as one request, and one named principal holds
	// at most half of them (see [Handler.ServeMCP]).
	MaxInFlight int
	// MaxBatch bounds the elements of a 2025-03-26 batch; default 16.
	MaxBatch int
	// SSEAfter is how long an answer may take before the response switches
	// to text/event-stream (so the client sees headers, then keep-alives);
	// default 10 s. One timer per Handler serves every response, ticking
	// every eighth of the shorter of SSEAfter and KeepAlive (at least 1 ms),
	// so the switch comes up to one tick late (docs/SPEC.md §4).
	SSEAfter time.Duration
	// KeepAlive is the interval between ": keep-alive" comments on an SSE
	// response, give or take one tick (above); default 15 s.
	KeepAlive time.Duration
	// BodyReadTimeout bounds reading the body, from the end of the headers;
	// default 15 s. A body that has not fully arrived by then gets 408 and
	// the connection is closed.
	BodyReadTimeout time.Duration
	// WriteStallTimeout ends a response whose write makes no progress for
	// this long (a client that stopped reading): its connection is closed
	// and its in-flight slots freed. Each 64 KiB of a response renews it,
	// so a slow but steady reader is never cut off, and there is no bound
	// on how long a call may take before its answer starts. Default 30 s
	// (docs/SPEC.md §5.2). Progress is what the kernel reports: a blocked
	// write resumes once about a third of the connection's send buffer has
	// drained, so a server that leaves the buffer to the kernel's
	// autotuning (up to 4 MiB on Linux) asks more of a slow reader; the
	// hosts' [Server] bounds it ([ServerOptions].SendBuffer). The [Server]'s
	// connections re-arm the deadline lazily, so there a stall is detected
	// up to a sixteenth of the timeout late.
	WriteStallTimeout time.Duration
	// UnreadBodyGrace bounds how long a connection whose request body was
	// not read (a refusal) goes on reading it after the response has gone
	// out, so that a client that sent its body anyway gets the answer rather
	// than a TCP reset; the connection is closed afterwards. Default 1 s.
	UnreadBodyGrace time.Duration
	// Logger receives debug records of refusals (status and reason only,
	// never headers or bodies); nil discards.
	Logger *slog.Logger
}

// Handler serves MCP over Streamable HTTP for one engine. It is safe for
// concurrent use. Admission is the caller's: put the host's checks in front.
type Handler struct {
	eng             *engine.Engine
	maxBody         int64
	maxBatch        int
	share           int // the most slots one request (a batch), or one principal, may hold
	sse             *sseClock
	bodyReadTimeout time.Duration
	writeStall      time.Duration
	unreadBodyGrace time.Duration
	logger          *slog.Logger
	// endsWithEngine: every request comes through a Server, whose
	// contexts end when the engine shuts down (see [Server.NewHandler]).
	endsWithEngine bool

	// slots is the in-flight semaphore: a request holds one token from
	// before its body is read until its answer is written and its calls
	// have returned.
	slots chan struct{}
	// byPrincipal counts the slots each named principal holds (the zero
	// principal, the loopback host's one client, is not counted).
	mu          sync.Mutex
	byPrincipal map[ports.Principal]int
}

// PrincipalHandler is what an admission that knows who is calling hands
// admitted requests to: [Handler] is one.
type PrincipalHandler interface {
	http.Handler
	// ServeMCP serves r on behalf of p (docs/SPEC.md §1: the Caller's
	// Principal; §6: rounds are bound to it).
	ServeMCP(w http.ResponseWriter, r *http.Request, p ports.Principal)
}

var _ PrincipalHandler = (*Handler)(nil)

// NewHandler returns a Handler that serves eng. The engine's catalog is not
// validated here: hosts call [engine.Engine.Validate] before they listen. It
// fails when eng is nil or an option is negative.
func NewHandler(eng *engine.Engine, opts Options) (*Handler, error) {
	if eng == nil {
		return nil, errors.New("streamable: nil engine")
	}
	if opts.MaxBodyBytes < 0 || opts.MaxInFlight < 0 || opts.MaxBatch < 0 || opts.SSEAfter < 0 || opts.KeepAlive < 0 ||
		opts.BodyReadTimeout < 0 || opts.WriteStallTimeout < 0 || opts.UnreadBodyGrace < 0 {
		return nil, errors.New("streamable: Options must not be negative")
	}
	orDefault(&opts.MaxBodyBytes, DefaultMaxBodyBytes)
	orDefault(&opts.MaxInFlight, DefaultMaxInFlight)
	orDefault(&opts.MaxBatch, DefaultMaxBatch)
	orDefault(&opts.SSEAfter, DefaultSSEAfter)
	orDefault(&opts.KeepAlive, DefaultKeepAlive)
	orDefault(&opts.BodyReadTimeout, DefaultBodyReadTimeout)
	orDefault(&opts.WriteStallTimeout, DefaultWriteStall)
	orDefault(&opts.UnreadBodyGrace, DefaultUnreadBodyGrace)
	logger := opts.Logger
	if logger == nil {
		logger = eng.Logger()
	}
	return &Handler{
		eng:             eng,
		maxBody:         opts.MaxBodyBytes,
		maxBatch:        opts.MaxBatch,
		share:           max(1, opts.MaxInFlight/2),
		sse:             newSSEClock(opts.SSEAfter, opts.KeepAlive),
		bodyReadTimeout: opts.BodyReadTimeout,
		writeStall:      opts.WriteStallTimeout,
		unreadBodyGrace: opts.UnreadBodyGrace,
		logger:          logger,
		slots:           make(chan struct{}, opts.MaxInFlight),
		byPrincipal:     make(map[ports.Principal]int),
	}, nil
}

// ServeHTTP serves one admitted request for the local principal (the zero
// [ports.Principal]): the loopback host's, or a mux's that authenticated
// nobody in particular. See [Handler.ServeMCP].
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.ServeMCP(w, r, ports.Principal{})
}

// ServeMCP serves one admitted request on behalf of p (the table in the
// package doc).
//
// The request's context is the call's: when the client closes the
// connection, the call is cancelled (docs/SPEC.md §3, both eras); when the
// host cancels it with cause [engine.ErrShuttingDown], or the engine shuts
// down, a tools/call answers "server is shutting down" and that answer is
// still written.
//
// A 2025-03-26 batch holds one in-flight slot per element it runs at once,
// at most half of MaxInFlight, so no one connection holds every slot
// (docs/SPEC.md §5.2); its elements run that many at a time. The first slot
// is taken before the body is read, the others once it is read and
// [engine.BatchSize] has counted the elements of a batch the engine will
// run; when they are not free the batch gets 503 then. A batch the engine
// refuses whole (not JSON, a revision without batches, empty, too large)
// takes no more slots: the engine answers it 400, slots free or not.
//
// A named principal (any but the zero Principal) holds at most half of
// MaxInFlight slots too, its batches' included: beyond that its requests
// get 503 before their bodies are read, so one client — sending slow
// bodies, say — cannot hold every slot (docs/SPEC.md §5.3). The zero
// Principal (the loopback host's, whose token holders are one user) is
// bounded by MaxInFlight alone.
func (h *Handler) ServeMCP(w http.ResponseWriter, r *http.Request, p ports.Principal) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.refuse(w, r, http.StatusMethodNotAllowed, "method not POST")
		return
	}
	if !isJSONContentType(r.Header["Content-Type"]) {
		h.refuseRPC(w, r, http.StatusUnsupportedMediaType, "Invalid Request: Content-Type must be application/json")
		return
	}
	if !acceptsJSONAndSSE(r.Header["Accept"]) {
		h.refuseRPC(w, r, http.StatusNotAcceptable, "Invalid Request: Accept must list application/json and text/event-stream")
		return
	}
	if !h.acquire(1, p) {
		h.refuse(w, r, http.StatusServiceUnavailable, "in-flight limit reached")
		return
	}
	held := 1 // a batch's elements may take more
	defer func() { h.release(held, p) }()
	if r.ContentLength > h.maxBody {
		h.refuse(w, r, http.StatusRequestEntityTooLarge, "declared body over the limit")
		return
	}
	// The responder carries the request's ResponseController by value:
	// one allocation for both.
	out := &responder{w: w, out: stallWriter{w: w, rc: *http.NewResponseController(w), stall: h.writeStall}}
	body, ok := h.readBody(w, r, &out.out.rc)
	if !ok {
		return
	}
	opts := engine.ExchangeOptions{Headers: mcpHeaders(r.Header), MaxBatch: h.maxBatch, Principal: p, EndsWithEngine: h.endsWithEngine}
	opts.ClientGone, _ = r.Context().Value(clientGoneKey{}).(func() bool)
	if jsonrpc.FirstByte(body) == '[' {
		// A batch's elements run in slots of their own, at most the share
		// at once (docs/SPEC.md §5.2), taken at once or not at all.
		if n := engine.BatchSize(body, opts.Headers, h.maxBatch); n > 0 {
			run := min(n, h.share)
			if run > 1 && !h.acquire(run-1, p) {
				h.refuse(w, r, http.StatusServiceUnavailable, "in-flight limit reached by a batch")
				return
			}
			held, opts.BatchConcurrency = run, run
		}
	}
	h.exchange(w, r, out, body, opts)
}

// acquire takes n in-flight slots at once for p, or none: none when they
// are not free, or when a named principal would hold more than its share.
func (h *Handler) acquire(n int, p ports.Principal) bool {
	if p != (ports.Principal{}) {
		h.mu.Lock()
		if h.byPrincipal[p]+n > h.share {
			h.mu.Unlock()
			return false
		}
		h.byPrincipal[p] += n
		h.mu.Unlock()
	}
	for i := range n {
		select {
		case h.slots <- struct{}{}:
		default:
			h.release(i, ports.Principal{})
			h.unshare(n, p)
			return false
		}
	}
	return true
}

func (h *Handler) release(n int, p ports.Principal) {
	for range n {
		<-h.slots
	}
	h.unshare(n, p)
}

// unshare gives back n of p's share.
func (h *Handler) unshare(n int, p ports.Principal) {
	if p == (ports.Principal{}) || n == 0 {
		return
	}
	h.mu.Lock()
	if left := h.byPrincipal[p] - n; left > 0 {
		h.byPrincipal[p] = left
	} else {
		delete(h.byPrincipal, p)
	}
	h.mu.Unlock()
}

// readBody reads the whole body within MaxBodyBytes and BodyReadTimeout. On
// failure it has answered the request (413, 408 or 400) and returns false.
//
// The deadline must not outlive the body: net/http's background read,
// which notices a client going away (and so cancels the call), runs on the
// connection once the body has ended, and a timeout there would cancel the
// call too. net/http clears the deadline as that read starts, but when
// middleware mounted in front has read the body already (and handed on a
// copy), it started before this deadline was set: so it is cleared here.
// A request without a body (ContentLength 0) sets none: there is nothing
// to read.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request, rc *http.ResponseController) ([]byte, bool) {
	if r.ContentLength == 0 {
		return nil, true
	}
	_ = rc.SetReadDeadline(time.Now().Add(h.bodyReadTimeout))
	body, err := h.read(w, r)
	if err == nil {
		_ = rc.SetReadDeadline(time.Time{})
		return body, true
	}
	// The connection is closed after the answer; bound the draining of
	// whatever is left of the body meanwhile.
	_ = rc.SetReadDeadline(time.Now().Add(h.unreadBodyGrace))
	w.Header().Set("Connection", "close")
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		h.refuse(w, r, http.StatusRequestEntityTooLarge, "streamed body over the limit")
	case errors.Is(err, os.ErrDeadlineExceeded):
		h.refuse(w, r, http.StatusRequestTimeout, "body read timed out")
	default:
		// The body broke off (docs/SPEC.md K9): what arrived cannot be a whole message.
		h.logger.Debug("streamable: refused", "status", http.StatusBadRequest, "reason", "body broke off")
		h.writeJSON(w, http.StatusBadRequest, engine.ErrorBody(engine.CodeParseError, "Parse error: the request body ended early"))
	}
	return nil, false
}

// read reads the whole body: a declared length in one buffer of that size
// (net/http ends the body there), a streamed one up to MaxBodyBytes.
func (h *Handler) read(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if n := r.ContentLength; n > 0 {
		body := make([]byte, n)
		if _, err := io.ReadFull(r.Body, body); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = io.EOF // the body broke off
			}
			return nil, err
		}
		return body, nil
	}
	var buf bytes.Buffer
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, h.maxBody))
	return buf.Bytes(), err
}

// exchange hands the body to the engine and writes its answer: JSON, or an
// SSE stream once a notification precedes the answer or SSEAfter passes
// (never for a batch: batch responses are one JSON array, docs/SPEC.md §4).
//
// The engine runs on this goroutine: the call is cancelled with the
// request's context, so a client that goes away ends it, and the request's
// slots stay held until its calls have returned. Notifications (from the
// call, on this goroutine or a parked call's) and the Handler's sseClock write
// through one responder, under its lock; once the answer is written the
// responder writes nothing more.
func (h *Handler) exchange(w http.ResponseWriter, r *http.Request, out *responder, body []byte, opts engine.ExchangeOptions) {
	if jsonrpc.FirstByte(body) != '[' {
		opts.Notify = out.notify
		h.sse.add(out)
		defer h.sse.remove(out)
	}
	answered := false
	defer func() {
		if !answered {
			// Exchange panicked (a session's tool; net/http recovers
			// it): nothing may write to this response afterwards.
			out.finish()
		}
	}()
	reply := h.eng.Exchange(r.Context(), body, opts)
	answered = true
	out.mu.Lock()
	defer out.mu.Unlock()
	out.done = true
	switch {
	case reply.Kind == engine.Cancelled && out.sse:
		// The client left, or cancelled the request: the stream ends
		// without an answer.
	case reply.Kind == engine.Cancelled:
		// The client left (nothing reaches it), or cancelled the request
		// with notifications/cancelled and still waits: an empty 202,
		// which clients take without an error, rather than an answer
		// (docs/SPEC.md §3 "Cancellation").
		w.WriteHeader(http.StatusAccepted)
	case out.sse:
		if len(reply.Body) > 0 {
			out.event(reply.Body)
		}
	case len(reply.Body) == 0:
		w.WriteHeader(statusOf(reply.Kind))
	default:
		writeBody(&out.out, statusOf(reply.Kind), reply.Body)
	}
}

// responder writes one request's response: its notifications and the SSE
// keep-alives as they come (switching to text/event-stream first), then the
// answer. Its methods run under mu.
type responder struct {
	mu   sync.Mutex
	w    http.ResponseWriter
	out  stallWriter
	sse  bool // the response is an event stream
	done bool // the answer was written: nothing more is

	// The Handler's sseClock's, under its lock: the tick of the next start
	// or keep-alive, whether one is being written, and the links of its
	// list of responses in flight.
	due        uint64
	ticking    bool
	prev, next *responder
}

// finish marks the response answered: nothing more is written to it.
func (r *responder) finish() {
	r.mu.Lock()
	r.done = true
	r.mu.Unlock()
}

// notify writes a notification (progress) as an event.
func (r *responder) notify(msg []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.done {
		r.event(msg)
	}
}

// tick is called by the Handler's sseClock: the first time (SSEAfter
// without an answer) it starts the event stream, then it writes a
// keep-alive comment (every KeepAlive).
func (r *responder) tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return
	}
	if r.sse {
		r.out.write([]byte(": keep-alive\n\n"))
		r.out.flush()
	} else {
		r.start()
	}
}

func (r *responder) start() {
	if r.sse {
		return
	}
	r.sse = true
	h := r.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	r.w.WriteHeader(http.StatusOK)
	r.out.flush()
}

// event writes msg as one "message" event; a message holding line breaks
// (never the engine's compact JSON) is split over several data lines.
func (r *responder) event(msg []byte) {
	r.start()
	b := make([]byte, 0, len(msg)+24)
	b = append(b, "event: message\n"...)
	for line := range bytes.Lines(msg) {
		b = append(b, "data: "...)
		b = append(b, bytes.TrimRight(line, "\r\n")...)
		b = append(b, '\n')
	}
	r.out.write(append(b, '\n'))
	r.out.flush()
}

// statusOf maps the engine's outcome kinds to Streamable HTTP statuses
// (docs/SPEC.md §4): the one place the framing chooses them.
func statusOf(k engine.Outcome) int {
	switch k {
	case engine.Accepted:
		return http.StatusAccepted
	case engine.Invalid:
		return http.StatusBadRequest
	case engine.UnknownMethod:
		return http.StatusNotFound
	}
	return http.StatusOK
}

// stallWriter writes a response in chunks, renewing the connection's write
// deadline before each, so a response that makes no progress for stall
// fails and its connection closes, while a slow but steady reader is never
// cut off (docs/SPEC.md §5.2). After a failure nothing more is written.
type stallWriter struct {
	w      http.ResponseWriter
	rc     http.ResponseController // http.NewResponseController(w)'s
	stall  time.Duration
	broken bool
}

// stallChunk is what one write deadline covers.
const stallChunk = 64 << 10

func (s *stallWriter) write(b []byte) {
	for len(b) > 0 && !s.broken {
		n := min(len(b), stallChunk)
		_ = s.rc.SetWriteDeadline(time.Now().Add(s.stall))
		if _, err := s.w.Write(b[:n]); err != nil {
			s.broken = true
			return
		}
		b = b[n:]
	}
}

// flush sends what is buffered, under the same deadline rule.
func (s *stallWriter) flush() {
	if s.broken {
		return
	}
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.stall))
	if err := s.rc.Flush(); err != nil {
		s.broken = true
	}
}

func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, status int, reason string) {
	h.logger.Debug("streamable: refused", "status", status, "reason", reason)
	refuse(w, r, status, h.unreadBodyGrace)
}

// refuseRPC answers with a JSON-RPC -32600 error without id (415, 406),
// without reading the body.
func (h *Handler) refuseRPC(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.logger.Debug("streamable: refused", "status", status, "reason", msg)
	closeIfBodyPending(w, r, h.unreadBodyGrace)
	h.writeJSON(w, status, engine.ErrorBody(engine.CodeInvalidRequest, msg))
}

// writeJSON answers status with an application/json body.
func (h *Handler) writeJSON(w http.ResponseWriter, status int, body []byte) {
	writeBody(&stallWriter{w: w, rc: *http.NewResponseController(w), stall: h.writeStall}, status, body)
}

// jsonType is the Content-Type of JSON answers, shared: net/http only
// reads header values.
var jsonType = []string{"application/json"}

// writeBody answers status with an application/json body. A small body's
// Content-Length is net/http's to set (it does when the body fits its
// buffer and the handler returns); a larger one's is set here.
func writeBody(out *stallWriter, status int, body []byte) {
	hd := out.w.Header()
	hd["Content-Type"] = jsonType
	if len(body) > 2048 {
		hd.Set("Content-Length", strconv.Itoa(len(body)))
	}
	out.w.WriteHeader(status)
	out.write(body)
}

// mcpHeaders collects the headers the modern revision compares with the
// body (MCP 2026-07-28 "Standard headers"), normalised as the engine wants
// them: see headerValue.
func mcpHeaders(h http.Header) engine.Headers {
	var out engine.Headers
	out.ProtocolVersion, out.HasProtocolVersion = headerValue(h, "Mcp-Protocol-Version")
	out.Method, out.HasMethod = headerValue(h, "Mcp-Method")
	out.Name, out.HasName = headerValue(h, "Mcp-Name")
	return out
}

// headerValue reads a header by its canonical key (net/http canonicalizes
// what it receives, so the map is indexed directly) and normalises it: a
// header sent more than once is joined with commas (so it can only
// mismatch), surrounding whitespace is trimmed, and a value of the form
// =?base64?<standard base64 of UTF-8>?= is decoded (how a client sends a
// tool name that is not a valid header value). A sentinel that does not
// decode is kept as is, so it can only mismatch.
func headerValue(h http.Header, key string) (string, bool) {
	vs := h[key]
	var v string
	switch len(vs) {
	case 0:
		return "", false
	case 1:
		v = vs[0]
	default:
		v = strings.Join(vs, ",")
	}
	v = strings.TrimSpace(v)
	const prefix, suffix = "=?base64?", "?="
	if len(v) >= len(prefix)+len(suffix) && strings.HasPrefix(v, prefix) && strings.HasSuffix(v, suffix) {
		if b, err := base64.StdEncoding.DecodeString(v[len(prefix) : len(v)-len(suffix)]); err == nil {
			return string(b), true
		}
	}
	return v, true
}

// isJSONContentType: exactly one Content-Type, of media type
// application/json; parameters (charset=utf-8) are allowed.
func isJSONContentType(values []string) bool {
	if len(values) != 1 {
		return false
	}
	if values[0] == "application/json" { // what clients send: no parsing
		return true
	}
	mt, _, err := mime.ParseMediaType(values[0])
	return err == nil && mt == "application/json"
}

// acceptsJSONAndSSE reports whether the Accept header lists both
// application/json and text/event-stream, as MCP's Streamable HTTP requires
// of clients (docs/SPEC.md K6: application/json alone is refused). Media ranges count as
// HTTP defines them (RFC 9110 §12.5.1): */* covers both, application/* and
// text/* one each; a range with q=0 is "not acceptable" and counts for
// nothing. Types compare case-insensitively.
func acceptsJSONAndSSE(values []string) bool {
	if len(values) == 1 && (values[0] == "application/json, text/event-stream" || values[0] == "text/event-stream, application/json") {
		return true // what the SDKs send: no parsing
	}
	var json, sse bool
	for _, v := range values {
		for part := range strings.SplitSeq(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			if q, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(q, 64); err != nil || f <= 0 {
					continue
				}
			}
			switch mt {
			case "*/*":
				json, sse = true, true
			case "application/json", "application/*":
				json = true
			case "text/event-stream", "text/*":
				sse = true
			}
		}
	}
	return json && sse
}
