package engine

import (
	"context"
	"github.com/agentmcp/agentmcp/internal/jsonrpc"

	"github.com/agentmcp/agentmcp/ports"
)

// Headers are what a carrier read beside a modern request that must mirror
// its body (docs/SPEC.md §4; MCP 2026-07-28 "Standard headers"): the
// protocol version, the method and a tools/call's tool name, each with
// whether it was sent at all. Values are normalised by the carrier, which
// knows its own encoding (Streamable HTTP: trimmed, =?base64?…?= decoded,
// repeats joined with commas); the engine compares them with the body byte
// for byte.
type Headers struct {
	ProtocolVersion, Method, Name          string
	HasProtocolVersion, HasMethod, HasName bool
}

// Reply is the engine's answer to one exchange: its kind and, unless the
// kind is Accepted or Cancelled, the JSON body.
type Reply struct {
	Kind Outcome
	Body []byte
}

// ExchangeOptions configures [Engine.Exchange].
type ExchangeOptions struct {
	// Headers are the request's MCP headers (the zero value: none were
	// sent). Exchange applies Streamable HTTP's rules: a modern request
	// whose headers do not mirror its body is -32020 (docs/SPEC.md §4).
	Headers Headers
	// Notify sends a notification related to this request (progress)
	// before the reply; nil drops them. The framing decides how (Streamable
	// HTTP switches to SSE). Notify may block (back-pressure from a slow
	// client) but must return once ctx ends. Batches never notify.
	Notify func(msg []byte)
	// MaxBatch bounds a 2025-03-26 batch; default 16.
	MaxBatch int
	// BatchConcurrency bounds how many elements of a batch run at once;
	// 0 (or at least the batch's size) runs them all at once. A carrier
	// that lends each element a resource (Streamable HTTP: an in-flight
	// slot) sizes it with [BatchSize] before the exchange.
	BatchConcurrency int
	// EndsWithEngine says ctx already ends when the engine shuts down: it
	// derives from [Engine.BaseContext]. Exchange then arranges nothing
	// for it; otherwise it binds the call to the engine's end itself (a
	// derived context and an AfterFunc per request). A carrier sets it
	// from what it knows when it is built (streamable's Server-made
	// Handler), never by looking at ctx: when unsure, leave it false.
	EndsWithEngine bool
	// Principal is who sent the request: the zero Principal on the loopback
	// host, the admitted token's issuer, subject and client on the remote
	// one. It binds input-required rounds (docs/SPEC.md §6: never shared
	// across principals) and is what the session's Caller reports.
	Principal ports.Principal
}

// BaseContext returns a context that ends when parent ends or the engine
// shuts down (with cause [ErrShuttingDown]). A carrier that parents its
// requests' contexts on it — streamable.Server gives it to net/http as
// every connection's base — and says so ([ExchangeOptions].EndsWithEngine)
// spares [Engine.Exchange] arranging the same per request. The returned
// context stays registered with the engine until parent or the engine ends.
func (e *Engine) BaseContext(parent context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(parent)
	context.AfterFunc(e.base, func() { cancel(ErrShuttingDown) })
	return ctx
}

// exchange is the carrier of one stateless exchange (a Streamable HTTP
// POST): its peer and the inbound of its single message, allocated
// together, and what the request's headers said. It keeps nothing between
// requests: no negotiation, no responses to route; its legacy tools/call
// is in the engine's registry while it runs (flights.go). It is
// one allocation per request; at 752 bytes it stays in the 768-byte size
// class with the runtime's 8-byte header (BenchmarkToolsCallExchange's
// B/op shows a field more).
type exchange struct {
	e    *Engine
	peer peer
	in   inbound
	// ctx is the request's context: its calls are cancelled with it.
	ctx context.Context
	// hdr holds the request's MCP headers.
	hdr Headers
	// taken: the single message took in (see newInbound).
	taken bool
	// out is the single message's answer.
	out reply
}

func (x *exchange) headers() *Headers                { return &x.hdr }
func (x *exchange) inFlight(jsonrpc.ID) bool         { return false }
func (x *exchange) atBound() bool                    { return false }
func (x *exchange) negotiated() bool                 { return false }
func (x *exchange) negotiate(string, []byte) bool    { return true } // answered without keeping state
func (x *exchange) parkedOn(jsonrpc.ID, *parkedCall) {}

// legacyVersion is the revision in force for a legacy request: its
// MCP-Protocol-Version, else 2025-03-26. It is read from the header when
// needed (once per request), not kept: a bigger exchange would cost a
// bigger allocation on every request.
func (x *exchange) legacyVersion() string { return legacyVersionOf(&x.hdr) }

// legacyVersionOf is the revision a legacy request with headers h is in.
func legacyVersionOf(h *Headers) string {
	if h.HasProtocolVersion {
		return h.ProtocolVersion
	}
	return defaultLegacyVersion
}

// BatchSize is how many elements Exchange would run for body, a request
// with headers h, given maxBatch (the option's default when 0 or less):
// the element count of a 2025-03-26 batch Exchange accepts, or 0 for any
// body it answers without running a batch — a single message, anything
// that is not valid JSON, a batch in a revision without batches, an empty
// batch, one over maxBatch (docs/SPEC.md §4). It reads body once and keeps
// nothing; Exchange checks the same again. A carrier calls it to take
// per-element resources before the exchange (Streamable HTTP: its
// in-flight slots, docs/SPEC.md §5.2) without changing what an invalid
// batch is answered.
func BatchSize(body []byte, h Headers, maxBatch int) int {
	if jsonrpc.FirstByte(body) != '[' {
		return 0
	}
	n, ok := jsonrpc.ArrayLen(body)
	if !ok || batchRefused(legacyVersionOf(&h), n, maxBatch) != nil {
		return 0
	}
	return n
}

// binding binds an exchange's rounds to its principal, encoded only when a
// round needs it (most requests never park one).
func (x *exchange) binding() string { return "http:" + principalKey(x.peer.principal) }

// newInbound returns the exchange's single message's inbound, allocated
// with it (a request costs one allocation for both); a batch's elements,
// which run side by side, get one each.
func (x *exchange) newInbound(inBatch bool) *inbound {
	if !x.taken && !inBatch {
		x.taken = true
		return &x.in
	}
	return new(inbound)
}

// run serves a single message on the caller's goroutine, a batch element on
// a goroutine of its own (within the batch's slots).
func (x *exchange) run(p *peer, in *inbound, inBatch bool, to sink) {
	if inBatch && x.e.goCall(func() {
		if p.batchSlots != nil {
			p.batchSlots <- struct{}{}
			defer func() { <-p.batchSlots }()
		}
		to.deliver(x.e.serveExchange(x.ctx, p, in))
	}) {
		return
	}
	to.deliver(x.e.serveExchange(x.ctx, p, in))
}

// route takes a message that is not a request: a notifications/cancelled
// reaches the sender's own legacy tools/call with that id (see
// httpFlights); anything else is dropped (a response has no request of
// ours to answer over a stateless exchange).
func (x *exchange) route(m jsonrpc.Message) {
	if m.HasMethod {
		x.e.cancelExchange(x.peer.principal, &m)
	}
}

// deliver takes the single message's answer: handle gives it on Exchange's
// goroutine, before it returns.
func (x *exchange) deliver(r reply) { x.out = r }

// replies is the sink of an exchange's batch, answered on another
// goroutine.
type replies chan reply

func (c replies) deliver(r reply) { c <- r }

// Exchange serves one stateless exchange: body is one JSON-RPC message or,
// for a 2025-03-26 client, a batch. Legacy requests take their revision
// from MCP-Protocol-Version, 2025-03-26 when it is absent; initialize is
// answered without keeping state.
//
// ctx is the request's: when it ends (the client went away) the call is
// cancelled and the kind is Cancelled, as it is when a later body of the
// same principal's, notifications/cancelled naming a legacy tools/call's
// id, cancels it (docs/SPEC.md §3 "Cancellation"); when the carrier cancels it with
// cause [ErrShuttingDown], or the engine shuts down, a tools/call answers
// "server is shutting down". Kinds map to Streamable HTTP statuses as
// docs/SPEC.md §4 says: Answered 200, Accepted 202, Invalid 400,
// UnknownMethod 404; Cancelled writes nothing.
func (e *Engine) Exchange(ctx context.Context, body []byte, opts ExchangeOptions) Reply {
	if jsonrpc.FirstByte(body) != '{' && !jsonrpc.Valid(body) { // an object is validated as it is read
		return Reply{Invalid, jsonrpc.EncodeError(jsonrpc.ID{}, jsonrpc.ErrParse)}
	}
	// The call ends with the request or with the engine, whichever first:
	// a carrier that built its requests' contexts on BaseContext has that
	// already; otherwise it is arranged here, for this request.
	if !opts.EndsWithEngine {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(e.base, func() { cancel(ErrShuttingDown) })
		defer stop()
	}

	x := &exchange{e: e, ctx: ctx, hdr: opts.Headers}
	x.peer = peer{carrier: x, principal: opts.Principal}
	p := &x.peer
	var out reply
	switch jsonrpc.FirstByte(body) {
	case '{':
		p.notify = opts.Notify
		e.handle(p, body, false, x) // a single message is answered on this goroutine
		out = x.out
	case '[':
		done := make(replies, 1)
		e.handleBatch(p, body, opts.MaxBatch, opts.BatchConcurrency, done)
		out = <-done
	default:
		out = reply{Invalid, jsonrpc.EncodeError(jsonrpc.ID{}, jsonrpc.InvalidRequest("not a JSON-RPC message"))}
	}
	if out.kind == Answered && ctx.Err() != nil && !e.shuttingDown(ctx) {
		// The client left: nobody can receive the answer, nor the token of
		// a round it parked, so that call ends too.
		e.abandon(&x.in, context.Cause(ctx))
		out = reply{kind: Cancelled}
	}
	return Reply{out.kind, out.body}
}
