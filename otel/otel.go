// Package otel traces agentmcp with OpenTelemetry (docs/SPEC.md §13): a
// [ports.Observer] that turns what the engine and the agent report into
// spans in the OpenTelemetry semantic conventions for MCP and GenAI.
//
// It is a module of its own, so agentmcp's main module depends on no
// OpenTelemetry: a program that wants traces builds the engine and the
// agent with [New]'s tracer as their Observer (or runs cmd/agentmcp-otel,
// the agentmcp command with it).
//
// The spans of one agent_submit:
//
//	tools/call agent_submit   SERVER    parent: params._meta.traceparent
//	└─ invoke_agent agentmcp  INTERNAL
//	   ├─ chat {model}        CLIENT    one per model request
//	   └─ execute_tool {tool} INTERNAL  one per tool call the model makes
//
// Attributes are names, counts and outcomes only: a prompt, an argument, a
// result or a response is never one.
package otel

import (
	"context"
	"strconv"

	global "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmcp/agentmcp/ports"
)

// ScopeName is the instrumentation scope of the spans.
const ScopeName = "github.com/agentmcp/agentmcp/otel"

// Tracer is the tracing [ports.Observer]. Safe for concurrent use.
type Tracer struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
}

var _ ports.Observer = (*Tracer)(nil)

// New returns a Tracer whose spans go to tp (nil: the global provider).
// The request's trace context is read from params._meta with the W3C
// Trace Context propagator (SEP-414: the keys traceparent and tracestate).
func New(tp trace.TracerProvider) *Tracer {
	if tp == nil {
		tp = global.GetTracerProvider()
	}
	return &Tracer{tracer: tp.Tracer(ScopeName), prop: propagation.TraceContext{}}
}

// StartRequest starts the SERVER span "{mcp.method.name} {target}". Its
// parent is the context in params._meta when that is valid, else the
// span in ctx; a span in ctx that is not the parent (an HTTP server span)
// is linked.
func (t *Tracer) StartRequest(ctx context.Context, r ports.ObservedRequest) (context.Context, func(ports.RequestEnd)) {
	var opts []trace.SpanStartOption
	if r.TraceParent != "" {
		ambient := trace.SpanContextFromContext(ctx)
		carrier := propagation.MapCarrier{"traceparent": r.TraceParent}
		if r.TraceState != "" {
			carrier["tracestate"] = r.TraceState
		}
		// Extracted on its own, so a malformed value cannot pass for the
		// ambient span.
		if sc := trace.SpanContextFromContext(t.prop.Extract(context.Background(), carrier)); sc.IsValid() {
			ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
			if ambient.IsValid() {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: ambient}))
			}
		}
	}
	name := r.Method
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = append(attrs, keyMCPMethodName.String(r.Method))
	if r.Tool != "" {
		name += " " + r.Tool
		attrs = append(attrs, keyToolName.String(r.Tool))
	}
	if r.Method == "tools/call" {
		attrs = append(attrs, keyOperationName.String(opExecuteTool))
	}
	if r.ProtocolVersion != "" {
		attrs = append(attrs, keyMCPProtocolVersion.String(r.ProtocolVersion))
	}
	if r.RequestID != "" {
		attrs = append(attrs, keyJSONRPCRequestID.String(r.RequestID))
	}
	opts = append(opts, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	ctx, span := t.tracer.Start(ctx, name, opts...)
	return ctx, func(e ports.RequestEnd) {
		if e.ErrorType != "" {
			span.SetAttributes(keyErrorType.String(e.ErrorType))
			if _, err := strconv.Atoi(e.ErrorType); err == nil {
				span.SetAttributes(keyRPCResponseStatus.String(e.ErrorType))
			}
			span.SetStatus(codes.Error, e.ErrorType)
		}
		span.End()
	}
}

// StartTurn starts the INTERNAL span "invoke_agent {gen_ai.agent.name}".
func (t *Tracer) StartTurn(ctx context.Context, turn ports.ObservedTurn) (context.Context, func(ports.TurnEnd)) {
	ctx, span := t.tracer.Start(ctx, opInvokeAgent+" "+turn.Agent, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(keyOperationName.String(opInvokeAgent), keyAgentName.String(turn.Agent),
			keyRequestModel.String(turn.Model), keyProviderName.String(turn.Provider)))
	return ctx, func(e ports.TurnEnd) { end(span, e.ErrorType) }
}

// StartModelStep starts the CLIENT span "chat {gen_ai.request.model}".
func (t *Tracer) StartModelStep(ctx context.Context, s ports.ObservedModelStep) (context.Context, func(ports.ModelStepEnd)) {
	attrs := []attribute.KeyValue{keyOperationName.String(opChat), keyProviderName.String(s.Provider), keyRequestModel.String(s.Model)}
	if s.ServerAddress != "" {
		attrs = append(attrs, keyServerAddress.String(s.ServerAddress), keyServerPort.Int(s.ServerPort))
	}
	ctx, span := t.tracer.Start(ctx, opChat+" "+s.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, func(e ports.ModelStepEnd) {
		if e.Usage != nil {
			span.SetAttributes(keyInputTokens.Int(e.Usage.InputTokens), keyOutputTokens.Int(e.Usage.OutputTokens))
		}
		if e.FinishReason != "" {
			span.SetAttributes(keyFinishReasons.StringSlice([]string{e.FinishReason}))
		}
		end(span, e.ErrorType)
	}
}

// StartToolCall starts the INTERNAL span "execute_tool {gen_ai.tool.name}".
func (t *Tracer) StartToolCall(ctx context.Context, tool string) (context.Context, func(ports.ToolCallEnd)) {
	ctx, span := t.tracer.Start(ctx, opExecuteTool+" "+tool, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(keyOperationName.String(opExecuteTool), keyToolName.String(tool)))
	return ctx, func(e ports.ToolCallEnd) { end(span, e.ErrorType) }
}

// StartConnection traces nothing: connections are the metrics'.
func (t *Tracer) StartConnection(string) func() { return func() {} }

// end ends span, marking it failed with errorType when that is set.
func end(span trace.Span, errorType string) {
	if errorType != "" {
		span.SetAttributes(keyErrorType.String(errorType))
		span.SetStatus(codes.Error, errorType)
	}
	span.End()
}
