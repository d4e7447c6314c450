package engine

import (
	"context"
	"strconv"

	"github.com/agentmcp/agentmcp/internal/jsonrpc"
	"github.com/agentmcp/agentmcp/ports"
)

// Trace context keys of params._meta (SEP-414): unprefixed, an explicit
// exception to MCP's rule for _meta keys.
const (
	metaTraceParent = "traceparent"
	metaTraceState  = "tracestate"
)

// serve runs a request that needs the session (serveRequest), telling the
// engine's Observer, when there is one, that it starts and how it ends: the
// one place requests are observed (docs/SPEC.md §13).
func (e *Engine) serve(ctx context.Context, p *peer, in *inbound, md *method) reply {
	if e.observe == nil {
		return e.serveRequest(ctx, p, in, md)
	}
	return e.serveObserved(ctx, p, in, md)
}

// serveObserved is serve with an Observer, apart so that the frame of
// every request's stack stays small without one (a goroutine's stack
// grows by copying).
func (e *Engine) serveObserved(ctx context.Context, p *peer, in *inbound, md *method) reply {
	ctx, end := e.observe.StartRequest(ctx, e.observed(in))
	r := e.serveRequest(ctx, p, in, md)
	end(ports.RequestEnd{ErrorType: errorType(r)})
	return r
}

// observed describes in for an Observer: never its arguments.
func (e *Engine) observed(in *inbound) ports.ObservedRequest {
	r := ports.ObservedRequest{Method: in.method, ProtocolVersion: in.version, RequestID: string(in.id.Raw())}
	if in.method == "tools/call" {
		if raw, ok := in.param("name"); ok && jsonrpc.IsString(raw) {
			r.Tool = jsonrpc.Unquote(raw)
			c := e.validated.Load()
			r.ToolKnown = c != nil && (c.Has(r.Tool) || c.IsSubmit(r.Tool))
		}
	}
	if raw, ok := in.metaValue(metaTraceParent); ok && jsonrpc.IsString(raw) {
		r.TraceParent = jsonrpc.Unquote(raw)
	}
	if raw, ok := in.metaValue(metaTraceState); ok && jsonrpc.IsString(raw) {
		r.TraceState = jsonrpc.Unquote(raw)
	}
	return r
}

// callContext returns the context of a call that outlives its request
// (under input-required rounds, a task of either era): ended only by its
// cancel or by
// the engine's Shutdown (with its cause). With an Observer it carries req's
// values, so that what the call reports nests under the request that
// started it (a tracer's span); req's end does not end it either way.
func (e *Engine) callContext(req context.Context) (context.Context, context.CancelCauseFunc) {
	if e.observe == nil {
		return context.WithCancelCause(e.base)
	}
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(req))
	stop := context.AfterFunc(e.base, func() { cancel(context.Cause(e.base)) })
	return ctx, func(cause error) {
		stop()
		cancel(cause)
	}
}

// Observer is the engine's Observer (nil when none), for carriers that
// report connections to it.
func (e *Engine) Observer() ports.Observer { return e.observe }

// errorType is r's error.type (the OpenTelemetry MCP conventions): the
// JSON-RPC code, "tool_error", "cancelled" (no response was sent), or ""
// for a success.
func errorType(r reply) string {
	switch {
	case r.kind == Cancelled:
		return "cancelled"
	case r.code != 0:
		return strconv.Itoa(int(r.code))
	case r.toolError:
		return "tool_error"
	}
	return ""
}
