package engine

import (
	"context"
	"sync"

	"github.com/agentmcp/agentmcp/internal/jsonrpc"
	"github.com/agentmcp/agentmcp/ports"
)

// HTTP cancellation (docs/SPEC.md §3 "Cancellation"). A stateless exchange
// keeps nothing between requests, yet the 2025-era clients (the TypeScript
// SDK, LangChain's adapters, mcp-use) cancel a request over HTTP by POSTing
// notifications/cancelled in another exchange while they keep the original
// request open — also when their own request timeout fires. So the engine
// keeps the legacy tools/calls its exchanges are serving in one registry,
// keyed by (principal, JSON-RPC id), which a later notifications/cancelled
// body of the same principal reaches:
//
//   - exactly one such call in flight: it is cancelled (its tool's ctx ends
//     with errCancelledByClient) and its request answers nothing;
//   - none: the notification is ignored, as an unknown or finished id is on
//     a stream; another principal's call with that id is never touched, and
//     the sender cannot tell whether one exists (202 either way);
//   - several (ids repeat across clients of one principal: every loopback
//     client is the same principal, and SDKs count ids from 0): none is
//     cancelled and that is logged with the count — cancelling one at a
//     guess, or all, could end another client's turn, while the client
//     that meant it can still close its request.
//
// Only legacy tools/calls are kept: the others answer at once, and a modern
// request is cancelled by closing it (MCP 2026-07-28 has no cancellation
// notification over HTTP). So the modern hot path is untouched. The
// registry is bounded by maxHTTPFlights; a call beyond it is served without
// an entry (closing its request still cancels it).

// maxHTTPFlights bounds the registry: well above what the HTTP hosts admit
// in flight at once.
const maxHTTPFlights = 4096

// httpFlights is the registry of cancellable exchange calls.
type httpFlights struct {
	mu sync.Mutex
	n  int
	m  map[flightKey]*httpFlight // the first of each key's calls; the rest follow on next
}

// flightKey is who sent a call and its id (jsonrpc.ID.Key).
type flightKey struct {
	who ports.Principal
	id  string
}

// httpFlight is one registered call.
type httpFlight struct {
	key       flightKey
	cancel    context.CancelCauseFunc
	cancelled bool        // by a notifications/cancelled: answer nothing
	next      *httpFlight // another call of the same principal with the same id
}

// add registers a call of p with id i, on a context of its own under ctx.
// At the bound it returns ctx and nil: the call runs unregistered.
func (r *httpFlights) add(ctx context.Context, p ports.Principal, i jsonrpc.ID) (context.Context, *httpFlight) {
	f := &httpFlight{key: flightKey{p, i.Key()}}
	// The call's context is made outside the registry's lock: deriving it
	// registers it with its parent, under the parent's own lock, and every
	// legacy call over HTTP passes here.
	cctx, cancel := context.WithCancelCause(ctx)
	f.cancel = cancel
	r.mu.Lock()
	if r.n >= maxHTTPFlights {
		r.mu.Unlock()
		cancel(nil)
		return ctx, nil
	}
	if r.m == nil {
		r.m = make(map[flightKey]*httpFlight)
	}
	f.next = r.m[f.key]
	r.m[f.key] = f
	r.n++
	r.mu.Unlock()
	return cctx, f
}

// remove unregisters f and releases its context; it reports whether a
// notifications/cancelled cancelled the call.
func (r *httpFlights) remove(f *httpFlight) bool {
	r.mu.Lock()
	for p := r.m[f.key]; ; p = p.next {
		if p == f {
			r.m[f.key] = f.next
			break
		}
		if p.next == f {
			p.next = f.next
			break
		}
	}
	if r.m[f.key] == nil {
		delete(r.m, f.key)
	}
	r.n--
	cancelled := f.cancelled
	r.mu.Unlock()
	f.cancel(nil)
	return cancelled
}

// cancelOne cancels the one call of p with id i; it reports how many calls
// of p have that id (0, 1, or more: then none is cancelled).
func (r *httpFlights) cancelOne(p ports.Principal, i jsonrpc.ID) int {
	r.mu.Lock()
	first := r.m[flightKey{p, i.Key()}]
	n := 0
	for f := first; f != nil; f = f.next {
		n++
	}
	if n == 1 {
		first.cancelled = true
	}
	r.mu.Unlock()
	if n == 1 {
		first.cancel(errCancelledByClient)
	}
	return n
}

// serveExchange serves an exchange's request; a legacy tools/call is
// registered while it runs, so a notifications/cancelled of the same
// principal can end it (see httpFlights). A call so cancelled answers
// nothing (Cancelled), as on a stream. A 2025-11-25 task-augmented call
// (params.task) is not registered: it answers at once with the task it
// created, whose turn runs on a context of its own (docs/SPEC.md §14), so a
// notifications/cancelled racing that answer must not swallow it and leave
// the client a running task it cannot name; tasks/cancel cancels a task.
func (e *Engine) serveExchange(ctx context.Context, p *peer, in *inbound) reply {
	if in.modern || in.method != "tools/call" || taskAugmented(in) {
		return e.serve(ctx, p, in, nil)
	}
	ctx, f := e.flights.add(ctx, p.principal, in.id)
	if f == nil {
		return e.serve(ctx, p, in, nil)
	}
	r := e.serve(ctx, p, in, nil)
	if e.flights.remove(f) && !e.shuttingDown(ctx) {
		return reply{kind: Cancelled}
	}
	return r
}

// cancelExchange handles a notifications/cancelled that arrived in an
// exchange from p (see httpFlights).
func (e *Engine) cancelExchange(p ports.Principal, m *jsonrpc.Message) {
	i, ok := cancelledID(m)
	if !ok {
		return
	}
	if n := e.flights.cancelOne(p, i); n > 1 {
		e.logger.Warn("engine: notifications/cancelled ignored: several requests of the same principal are in flight with that id",
			"requests", n)
	}
}

// cancelledID is the requestId a notifications/cancelled names; false for
// any other message, or params without a valid id (ignored, as MCP says a
// notification never gets an error).
func cancelledID(m *jsonrpc.Message) (jsonrpc.ID, bool) {
	if m.Method != "notifications/cancelled" || !jsonrpc.IsObject(m.Params) {
		return jsonrpc.ID{}, false
	}
	raw, _ := jsonrpc.Lookup(mustMembers(m.Params), "requestId")
	return jsonrpc.ParseID(raw)
}
