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
//	in-flight limit reached                  503, empty
//	body over the limit (declared)           413, empty
//	body over the limit (streamed, chunked)  413, empty          (while reading)
//	body stalls past BodyReadTimeout         408, empty          (while reading)
//	body breaks off (connection closed)      400, -32700 no id   (while reading)
//	everything else                          the engine's status and body
//
// The hosts are stateless: an Mcp-Session-Id is never minted, echoed or
// required, and Last-Event-ID is ignored (no resumability).
//
// Around the Handler the package holds what both hosts run the same way: a
// [Server] (the HTTP/1.1 server, its timeouts, and the Start / Stop / Wait
// lifecycle of docs/SPEC.md §5.2 and §3 "Ending") and [LimitListener] (the
// connection caps of §5.2 and §5.3). A host supplies its listener, its
// admission in front of the Handler, and its limits.
package streamable

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentmcp/agentmcp/adapters/engine"
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
	// 2025-03-26 batch counts as one request (see [Handler.ServeHTTP]).
	MaxInFlight int
	// MaxBatch bounds the elements of a 2025-03-26 batch; default 16.
	MaxBatch int
	// SSEAfter is how long an answer may take before the response switches
	// to text/event-stream (so the client sees headers, then keep-alives);
	// default 10 s.
	SSEAfter time.Duration
	// KeepAlive is the interval between ": keep-alive" comments on an SSE
	// response; default 15 s.
	KeepAlive time.Duration
	// BodyReadTimeout bounds reading the body, from the end of the headers;
	// default 15 s. A body that has not fully arrived by then gets 408 and
	// the connection is closed.
	BodyReadTimeout time.Duration
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
	sseAfter        time.Duration
	keepAlive       time.Duration
	bodyReadTimeout time.Duration
	unreadBodyGrace time.Duration
	logger          *slog.Logger

	// slots is the in-flight semaphore: a request holds one token from
	// before its body is read until its answer is written.
	slots chan struct{}
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns a Handler that serves eng. The engine's catalog is not
// validated here: hosts call [engine.Engine.Validate] before they listen.
func NewHandler(eng *engine.Engine, opts Options) *Handler {
	orDefault(&opts.MaxBodyBytes, DefaultMaxBodyBytes)
	orDefault(&opts.MaxInFlight, DefaultMaxInFlight)
	orDefault(&opts.MaxBatch, DefaultMaxBatch)
	orDefault(&opts.SSEAfter, DefaultSSEAfter)
	orDefault(&opts.KeepAlive, DefaultKeepAlive)
	orDefault(&opts.BodyReadTimeout, DefaultBodyReadTimeout)
	orDefault(&opts.UnreadBodyGrace, DefaultUnreadBodyGrace)
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{
		eng:             eng,
		maxBody:         opts.MaxBodyBytes,
		maxBatch:        opts.MaxBatch,
		sseAfter:        opts.SSEAfter,
		keepAlive:       opts.KeepAlive,
		bodyReadTimeout: opts.BodyReadTimeout,
		unreadBodyGrace: opts.UnreadBodyGrace,
		logger:          logger,
		slots:           make(chan struct{}, opts.MaxInFlight),
	}
}

// ServeHTTP serves one admitted request (the table in the package doc).
//
// The request's context is the call's: when the client closes the
// connection, the call is cancelled (docs/SPEC.md §3, both eras); when the host
// cancels it with cause [engine.ErrShuttingDown], a tools/call answers
// "server is shutting down" and that answer is still written.
//
// A 2025-03-26 batch of n elements holds n in-flight slots while it runs:
// the first is taken before the body is read, the other n-1 (at most
// MaxBatch-1) once the body shows it is a batch; when they are not free the
// batch gets 503 then, after its body was read.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.refuse(w, r, http.StatusMethodNotAllowed, "method not POST")
		return
	}
	if !isJSONContentType(r.Header.Values("Content-Type")) {
		h.refuseRPC(w, r, http.StatusUnsupportedMediaType, "Invalid Request: Content-Type must be application/json")
		return
	}
	if !acceptsJSONAndSSE(r.Header.Values("Accept")) {
		h.refuseRPC(w, r, http.StatusNotAcceptable, "Invalid Request: Accept must list application/json and text/event-stream")
		return
	}
	if !h.acquire(1) {
		h.refuse(w, r, http.StatusServiceUnavailable, "in-flight limit reached")
		return
	}
	held := 1
	defer func() { h.release(held) }()
	if r.ContentLength > h.maxBody {
		h.refuse(w, r, http.StatusRequestEntityTooLarge, "declared body over the limit")
		return
	}
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	batch := firstByte(body) == '['
	if batch {
		if extra := min(batchLen(body), h.maxBatch) - 1; extra > 0 {
			if !h.acquire(extra) {
				h.refuse(w, r, http.StatusServiceUnavailable, "in-flight limit reached by a batch")
				return
			}
			held += extra
		}
	}
	h.exchange(w, r, body, batch)
}

// principalKey is the context key of WithPrincipal.
type principalKey struct{}

// WithPrincipal returns a copy of ctx that makes the Handler bind the request
// to principal: it becomes [engine.ExchangeOptions.Principal], so an
// input-required round (docs/SPEC.md §6) minted for one principal can be resumed by
// no other. Hosts call it on admitted requests before ServeHTTP (the remote
// host passes an encoding of issuer, subject and client); without it the
// principal is "" — right for the loopback host, whose one principal is the
// host itself (its engine, and so its rounds, serve no other host). The
// principal is kept in memory only and never logged.
func WithPrincipal(ctx context.Context, principal ports.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

func principalFrom(ctx context.Context) ports.Principal {
	p, _ := ctx.Value(principalKey{}).(ports.Principal)
	return p
}

// acquire takes n in-flight slots at once, or none.
func (h *Handler) acquire(n int) bool {
	for i := range n {
		select {
		case h.slots <- struct{}{}:
		default:
			h.release(i)
			return false
		}
	}
	return true
}

func (h *Handler) release(n int) {
	for range n {
		<-h.slots
	}
}

// readBody reads the whole body within MaxBodyBytes and BodyReadTimeout. On
// failure it has answered the request (413, 408 or 400) and returns false.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(h.bodyReadTimeout))
	var buf bytes.Buffer
	if r.ContentLength > 0 {
		buf.Grow(int(r.ContentLength))
	}
	_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err == nil {
		// The deadline must not outlive the body: net/http's background
		// read, which notices a client going away (and so cancels the
		// call), runs on this connection from now on, and a timeout there
		// would cancel the call too. net/http clears it as the body ends;
		// this says so explicitly.
		_ = rc.SetReadDeadline(time.Time{})
		return buf.Bytes(), true
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
		writeJSON(w, http.StatusBadRequest, engine.ErrorResponse(engine.CodeParseError, "Parse error: the request body ended early"))
	}
	return nil, false
}

// exchange hands the body to the engine and writes its answer: JSON, or an
// SSE stream once a notification precedes the answer or SSEAfter passes
// (never for a batch: batch responses are one JSON array, docs/SPEC.md §4).
//
// All writes happen on this goroutine. The engine runs on its own goroutine,
// which ends when the engine returns: the call is cancelled with the request's
// context, so a client that goes away ends it.
func (h *Handler) exchange(w http.ResponseWriter, r *http.Request, body []byte, batch bool) {
	ctx := r.Context()
	// Notify is called by the session's goroutine before the engine answers;
	// the buffer decouples it from a slow client, and a full buffer waits
	// for the client (or the request's end) rather than grow.
	notes := make(chan []byte, 64)
	opts := engine.ExchangeOptions{
		Headers:   mcpHeaders(r.Header),
		MaxBatch:  h.maxBatch,
		Principal: principalFrom(ctx),
		Notify: func(msg []byte) {
			select {
			case notes <- msg:
			case <-ctx.Done():
			}
		},
	}
	if batch {
		opts.Notify = nil
	}
	replies := make(chan engine.Reply, 1)
	go func() { replies <- h.eng.Exchange(ctx, body, opts) }()

	var sseAfter <-chan time.Time
	if !batch {
		t := time.NewTimer(h.sseAfter)
		defer t.Stop()
		sseAfter = t.C
	}
	var s *sseStream
	var ticker *time.Ticker
	var keepAlive <-chan time.Time
	start := func() {
		if s != nil {
			return
		}
		s = startSSE(w)
		ticker = time.NewTicker(h.keepAlive)
		keepAlive = ticker.C
	}
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	for {
		select {
		case msg := <-notes:
			start()
			s.event(msg)
		case <-sseAfter:
			sseAfter = nil
			start()
		case <-keepAlive:
			s.comment()
		case reply := <-replies:
			// Every Notify returned before Exchange did, so whatever is
			// buffered precedes the answer.
			for pending := true; pending; {
				select {
				case msg := <-notes:
					start()
					s.event(msg)
				default:
					pending = false
				}
			}
			switch {
			case s != nil:
				if len(reply.Body) > 0 {
					s.event(reply.Body)
				}
			case len(reply.Body) == 0:
				w.WriteHeader(reply.Status)
			default:
				writeJSON(w, reply.Status, reply.Body)
			}
			return
		}
	}
}

// sseStream writes one text/event-stream response.
type sseStream struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	broken bool // a write failed; the client is gone
}

func startSSE(w http.ResponseWriter) *sseStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseStream{w: w, rc: http.NewResponseController(w)}
	s.flush()
	return s
}

// event writes msg as one "message" event; a message holding line breaks
// (never the engine's compact JSON) is split over several data lines.
func (s *sseStream) event(msg []byte) {
	var b bytes.Buffer
	b.WriteString("event: message\n")
	for line := range bytes.Lines(msg) {
		b.WriteString("data: ")
		b.Write(bytes.TrimRight(line, "\r\n"))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	s.write(b.Bytes())
}

func (s *sseStream) comment() { s.write([]byte(": keep-alive\n\n")) }

func (s *sseStream) write(b []byte) {
	if s.broken {
		return
	}
	if _, err := s.w.Write(b); err != nil {
		s.broken = true
		return
	}
	s.flush()
}

func (s *sseStream) flush() {
	if err := s.rc.Flush(); err != nil {
		s.broken = true
	}
}

// Refuse answers r with status and an empty body, without reading the
// request body. When a body may still be on its way (declared or chunked),
// the response says Connection: close, and the connection is closed once the
// response is out and the unread body has been drained for at most
// UnreadBodyGrace. Hosts use it for their admission refusals (403, 401,
// 431), so these never wait for a body either.
func (h *Handler) Refuse(w http.ResponseWriter, r *http.Request, status int) {
	h.closeIfBodyPending(w, r)
	w.WriteHeader(status)
}

func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, status int, reason string) {
	h.logger.Debug("streamable: refused", "status", status, "reason", reason)
	h.Refuse(w, r, status)
}

// refuseRPC answers with a JSON-RPC -32600 error without id (415, 406),
// without reading the body.
func (h *Handler) refuseRPC(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.logger.Debug("streamable: refused", "status", status, "reason", msg)
	h.closeIfBodyPending(w, r)
	writeJSON(w, status, engine.ErrorResponse(engine.CodeInvalidRequest, msg))
}

func (h *Handler) closeIfBodyPending(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 {
		return
	}
	w.Header().Set("Connection", "close")
	// net/http reads the rest of an unread body when the handler returns;
	// bound that read, since the body may never come.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.unreadBodyGrace))
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// mcpHeaders collects the headers the modern revision compares with the body.
// A header sent more than once is joined with commas, so it can only
// mismatch.
func mcpHeaders(h http.Header) *engine.Headers {
	var out engine.Headers
	out.ProtocolVersion, out.HasProtocolVersion = headerValue(h, "Mcp-Protocol-Version")
	out.Method, out.HasMethod = headerValue(h, "Mcp-Method")
	out.Name, out.HasName = headerValue(h, "Mcp-Name")
	return &out
}

func headerValue(h http.Header, key string) (string, bool) {
	v := h.Values(key)
	if len(v) == 0 {
		return "", false
	}
	return strings.Join(v, ","), true
}

// isJSONContentType: exactly one Content-Type, of media type
// application/json; parameters (charset=utf-8) are allowed.
func isJSONContentType(values []string) bool {
	if len(values) != 1 {
		return false
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

func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// batchLen counts the elements of a JSON array; 1 when body is not one (the
// engine answers it as invalid).
func batchLen(body []byte) int {
	if n, ok := engine.BatchLen(body); ok && n > 0 {
		return n
	}
	return 1
}
