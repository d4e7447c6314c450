package engine

import (
	"context"
	"github.com/agentmcp/agentmcp/domain"

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
	// AdmitBatch, when set, is called once a batch's element count n is
	// known, before any element runs: it returns how many elements may run
	// at once (the in-flight slots the framing could take for it), or 0 to
	// refuse the batch (the kind is then Busy). nil runs them all at once.
	AdmitBatch func(n int) int
	// Principal is who sent the request: the zero Principal on the loopback
	// host, the admitted token's issuer, subject and client on the remote
	// one. It binds input-required rounds (docs/SPEC.md §6: never shared
	// across principals) and is what the session's Caller reports.
	Principal ports.Principal
}

// baseKey marks a context made by BaseContext.
type baseKey struct{}

// BaseContext returns a context that ends when parent ends or the engine
// shuts down (with cause [ErrShuttingDown]). A carrier that parents its
// requests' contexts on it — streamable.Server gives it to net/http as
// every connection's base — spares [Engine.Exchange] arranging the same per
// request. The returned context stays registered with the engine until
// parent or the engine ends.
func (e *Engine) BaseContext(parent context.Context) context.Context {
	ctx, cancel := context.WithCancelCause(parent)
	context.AfterFunc(e.base, func() { cancel(ErrShuttingDown) })
	return context.WithValue(ctx, baseKey{}, e)
}

// exchangeState is an exchange's peer and the inbound of its single
// message, allocated together.
type exchangeState struct {
	peer peer
	in   inbound
}

// Exchange serves one stateless exchange: body is one JSON-RPC message or,
// for a 2025-03-26 client, a batch. Legacy requests take their revision
// from MCP-Protocol-Version, 2025-03-26 when it is absent; initialize is
// answered without keeping state.
//
// ctx is the request's: when it ends (the client went away) the call is
// cancelled and the kind is Cancelled; when the carrier cancels it with
// cause [ErrShuttingDown], or the engine shuts down, a tools/call answers
// "server is shutting down". Kinds map to Streamable HTTP statuses as
// docs/SPEC.md §4 says: Answered 200, Accepted 202, Invalid 400,
// UnknownMethod 404, Busy 503; Cancelled writes nothing.
func (e *Engine) Exchange(ctx context.Context, body []byte, opts ExchangeOptions) Reply {
	if firstByte(body) != '{' && !domain.ValidJSON(body) { // an object is validated as it is read
		return Reply{Invalid, errorFrame(id{}, errParse)}
	}
	// The call ends with the request or with the engine, whichever first:
	// a carrier that built its requests' contexts on BaseContext has that
	// already; otherwise it is arranged here, for this request.
	if ctx.Value(baseKey{}) != e {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := context.AfterFunc(e.base, func() { cancel(ErrShuttingDown) })
		defer stop()
	}

	x := &exchangeState{peer: peer{ctx: ctx, httpHeaders: opts.Headers, principal: opts.Principal, version: defaultLegacyVersion}}
	p := &x.peer
	p.headers = &p.httpHeaders
	if opts.Headers.HasProtocolVersion {
		p.version = opts.Headers.ProtocolVersion
	}
	var out reply
	switch firstByte(body) {
	case '{':
		p.notify = opts.Notify
		p.room = &x.in
		out, _ = e.handle(p, body, false, nil) // a single message is answered on this goroutine
	case '[':
		max := opts.MaxBatch
		if max <= 0 {
			max = 16
		}
		done := make(chan reply, 1)
		e.handleBatch(p, body, max, opts.AdmitBatch, func(r reply) { done <- r })
		out = <-done
	default:
		out = reply{Invalid, errorFrame(id{}, invalidRequest("not a JSON-RPC message"))}
	}
	if out.kind == Answered && ctx.Err() != nil && !e.shuttingDown(ctx) {
		out = reply{kind: Cancelled} // the client left: nobody can receive it
	}
	return Reply{out.kind, out.body}
}
