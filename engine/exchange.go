package engine

import (
	"context"
	"errors"

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
	// one. It binds input-required rounds and tasks (docs/SPEC.md §6, §14:
	// never shared across principals) and is what the session's Caller
	// reports.
	Principal ports.Principal
	// ClientGone, when set, reports whether the client has gone away though
	// ctx has not ended yet: a carrier that sees its connection's end
	// sooner than the request's context does (Streamable HTTP: the peer
	// closed the connection, seen by a peek). Exchange asks it once, and
	// only before it returns an answer that names a parked round or a task:
	// when the client is gone nobody holds that name, so the round's call
	// ends and the task is cancelled and forgotten (docs/SPEC.md §6, §14),
	// as when ctx has ended. nil: ctx alone tells.
	ClientGone func() bool
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

// exchange is the origin of one stateless exchange (a Streamable HTTP
// POST): its peer and the inbound of its single message, allocated
// together, and what the request's headers said. It keeps nothing between
// requests: no negotiation, no responses to route; its legacy tools/call
// is named in the engine's index while it runs. It is one allocation per
// request (BenchmarkToolsCallExchange's B/op shows its size).
type exchange struct {
	e    *Engine
	peer peer
	in   inbound
	// ctx is the request's context: its calls are cancelled with it.
	ctx context.Context
	// cancel, when Exchange derived ctx itself (binding it to the engine's
	// end), cancels it: the single legacy tools/call reuses it for
	// notifications/cancelled rather than deriving another.
	cancel context.CancelCauseFunc
	// hdr holds the request's MCP headers.
	hdr Headers
}

func (x *exchange) headers() *Headers              { return &x.hdr }
func (x *exchange) owner() owner                   { return owner{principal: x.peer.principal} }
func (x *exchange) initialized() bool              { return false }
func (x *exchange) initialize(string, []byte) bool { return true } // answered without keeping state
func (x *exchange) lasting() bool                  { return false }
func (x *exchange) subs() *streamSubs              { return nil }   // nothing outlives the exchange
func (x *exchange) elicitor() elicitFunc           { return nil }   // an HTTP legacy client cannot be asked
func (x *exchange) rendersApps() bool              { return false } // a legacy HTTP request carries no capabilities

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

// Exchange serves one stateless exchange: body is one JSON-RPC message or,
// for a 2025-03-26 client, a batch. Legacy requests take their revision
// from MCP-Protocol-Version, 2025-03-26 when it is absent; initialize is
// answered without keeping state.
//
// ctx is the request's: when it ends (the client went away) the call is
// cancelled and the kind is Cancelled, as it is when a later body of the
// same principal's, notifications/cancelled naming a legacy tools/call's
// id, cancels it (docs/SPEC.md §3 "Cancellation"); when the carrier
// cancels it with cause [ErrShuttingDown], or the engine shuts down, a
// tools/call answers "server is shutting down". Kinds map to Streamable
// HTTP statuses as docs/SPEC.md §4 says: Answered 200, Accepted 202,
// Invalid 400, UnknownMethod 404; Cancelled writes nothing.
func (e *Engine) Exchange(ctx context.Context, body []byte, opts ExchangeOptions) Reply {
	if jsonrpc.FirstByte(body) != '{' && !jsonrpc.Valid(body) { // an object is validated as it is read
		return Reply{Invalid, jsonrpc.EncodeError(jsonrpc.ID{}, jsonrpc.ErrParse)}
	}
	x := &exchange{e: e, hdr: opts.Headers}
	// The call ends with the request or with the engine, whichever first:
	// a carrier that built its requests' contexts on BaseContext has that
	// already; otherwise it is arranged here, for this request.
	if !opts.EndsWithEngine {
		ctx, x.cancel = context.WithCancelCause(ctx)
		defer x.cancel(nil)
		stop := context.AfterFunc(e.base, func() { x.cancel(ErrShuttingDown) })
		defer stop()
	}
	x.ctx = ctx
	x.peer = peer{origin: x, principal: opts.Principal}
	var out reply
	switch jsonrpc.FirstByte(body) {
	case '{':
		x.peer.notify = opts.Notify
		md, r := x.prepare(body, &x.in, false)
		if md != nil {
			r = e.serveExchange(ctx, &x.peer, &x.in, md, x.cancel)
		}
		out = r
	case '[':
		out = x.batch(body, opts.MaxBatch, opts.BatchConcurrency)
	default:
		out = invalid(jsonrpc.ID{}, jsonrpc.InvalidRequest("not a JSON-RPC message"))
	}
	if out.kind == Answered && !e.shuttingDown(ctx) &&
		(ctx.Err() != nil || x.in.named != nil && opts.ClientGone != nil && opts.ClientGone()) {
		// The client left: nobody can receive the answer, nor the round's
		// token or the task's id it names, so that call ends too.
		cause := context.Cause(ctx)
		if cause == nil {
			cause = errClientGone
		}
		e.abandon(&x.in, cause)
		out = reply{kind: Cancelled}
	}
	return Reply{out.kind, out.body}
}

// errClientGone is the cause of a call whose client left before its
// answer could be written (ExchangeOptions.ClientGone).
var errClientGone = errors.New("the client went away")

// prepare decodes one message and runs the pipeline's steps on it: the
// request's method row to serve it by, or the answer to give at once
// (initialize and ping included). A notifications/cancelled reaches the
// sender's own legacy tools/call with that id (Engine.cancelled); any
// other notification and any response is dropped (a response has no
// request of ours to answer over a stateless exchange).
func (x *exchange) prepare(frame []byte, in *inbound, inBatch bool) (*method, reply) {
	m, r, ok := decode(frame)
	if !ok {
		return nil, r
	}
	if !m.HasMethod || !m.HasID {
		if i, ok := cancelledID(&m); ok {
			x.e.cancelled(x.owner(), i)
		}
		return nil, accepted
	}
	md, r := x.e.accept(&x.peer, &m, in, inBatch)
	if md != nil && md.inline != nil {
		return nil, md.inline(x.e, &x.peer, in, inBatch)
	}
	return md, r
}

// batch serves a JSON array (valid JSON): a 2025-03-26 batch, each element
// on a goroutine of its own (at most concurrency at once; 0: all),
// answered with one array once every element is done, or nothing when no
// element had an answer (docs/SPEC.md §4).
func (x *exchange) batch(arr []byte, max, concurrency int) reply {
	version := x.legacyVersion()
	if !batchesAllowed(version) { // refused before the array is split
		return invalid(jsonrpc.ID{}, batchRefused(version, 0, max))
	}
	elems := jsonrpc.Elements(arr)
	if err := batchRefused(version, len(elems), max); err != nil {
		return invalid(jsonrpc.ID{}, err)
	}
	p := &x.peer
	if concurrency > 0 && concurrency < len(elems) {
		p.batchSlots = make(chan struct{}, concurrency)
	}
	done := make(chan []byte, 1)
	b := jsonrpc.NewBatch(len(elems), func(answer []byte) { done <- answer })
	for i, el := range elems {
		to := b.Element(i)
		if jsonrpc.FirstByte(el) != '{' {
			to.Reply(jsonrpc.EncodeError(jsonrpc.ID{}, jsonrpc.InvalidRequest("not a JSON-RPC message")))
			continue
		}
		in := new(inbound)
		md, r := x.prepare(el, in, true)
		if md == nil {
			to.Reply(r.answer())
			continue
		}
		serve := func() { to.Reply(x.e.serveExchange(x.ctx, p, in, md, nil).answer()) }
		if !x.e.goCall(func() {
			if p.batchSlots != nil {
				p.batchSlots <- struct{}{}
				defer func() { <-p.batchSlots }()
			}
			serve()
		}) {
			serve()
		}
	}
	if answer := <-done; answer != nil {
		return answered(answer)
	}
	return accepted // notifications only: no output
}

// serveExchange serves an exchange's request. A 2025-era legacy
// tools/call is named in the index by (principal, id) while it runs, on a
// context cancel ends (nil: one derived here), so that a
// notifications/cancelled of the same principal, POSTed in another
// exchange, can end it (docs/SPEC.md §3 "Cancellation": the TypeScript SDK
// v1, LangChain's adapters and mcp-use cancel so); a call so cancelled
// answers nothing (Cancelled), as on a stream. Only legacy tools/calls are
// named: the others answer at once, and a modern request is cancelled by
// closing it, so the modern path is untouched. A 2025-11-25
// task-augmented call is not named either: it answers at once with the
// task it created, whose call runs on a context of its own
// (docs/SPEC.md §14), so a notifications/cancelled racing that answer must
// not swallow it and leave the client a running task it cannot name;
// tasks/cancel cancels a task.
func (e *Engine) serveExchange(ctx context.Context, p *peer, in *inbound, md *method, cancel context.CancelCauseFunc) reply {
	if in.modern || in.method != "tools/call" || taskAugmented(in) {
		return e.serve(ctx, p, in, md)
	}
	if cancel == nil {
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
	}
	c := &in.call
	c.owner, c.cancel = p.origin.owner(), cancel
	if !e.index.requests.add(in.id, c) {
		return e.serve(ctx, p, in, md) // beyond the bound: closing its request still cancels it
	}
	r := e.serve(ctx, p, in, md)
	e.index.requests.remove(c)
	if c.snapshot().cancelled && !e.shuttingDown(ctx) {
		return reply{kind: Cancelled}
	}
	return r
}
