package ports

import "context"

// Observer is told about the work the server does, for metrics and traces
// (docs/SPEC.md §13): the engine reports requests, the agent its turns,
// model steps and tool calls. Each Start method runs before the work and
// returns the context the work runs in (a tracer puts its span there, so
// the agent's spans nest under the request's) and a function called exactly
// once when the work ends.
//
// What an Observer is given never holds a prompt, an argument, a result, a
// principal or a token: only names from a bounded vocabulary (methods, tool
// names, model names, outcomes) and, for a request, its JSON-RPC id and
// trace context. Start and end functions run on the request path: they
// must not block. Implementations must be safe for concurrent use; embed
// [NopObserver] to implement only part of it.
type Observer interface {
	// StartRequest is called when the engine starts serving a request that
	// reaches the session's catalog (tools/list, tools/call,
	// server/discover), after its validation.
	StartRequest(ctx context.Context, r ObservedRequest) (context.Context, func(RequestEnd))
	// StartTurn is called when the agent starts a submission's turn.
	StartTurn(ctx context.Context, t ObservedTurn) (context.Context, func(TurnEnd))
	// StartModelStep is called when the agent sends one model request.
	StartModelStep(ctx context.Context, s ObservedModelStep) (context.Context, func(ModelStepEnd))
	// StartToolCall is called when the agent runs one of the model's tool
	// calls through its session.
	StartToolCall(ctx context.Context, tool string) (context.Context, func(ToolCallEnd))
	// StartConnection is called when an HTTP host accepts a connection;
	// the function it returns when the connection closes. transport is
	// network.transport ("tcp").
	StartConnection(transport string) func()
}

// ObservedRequest describes one MCP request, in the OpenTelemetry MCP
// semantic conventions' terms (docs/SPEC.md §13).
type ObservedRequest struct {
	// Method is mcp.method.name: "tools/call", "tools/list",
	// "server/discover".
	Method string
	// Tool is gen_ai.tool.name: the tools/call's params.name, "" for other
	// methods. ToolKnown says whether the catalog last validated has it: a
	// name not in it is the client's text, reported as given (a tracer may
	// keep it; a metric must not, to bound its cardinality).
	Tool      string
	ToolKnown bool
	// ProtocolVersion is mcp.protocol.version: the revision in force.
	ProtocolVersion string
	// RequestID is jsonrpc.request.id: the id's JSON text (a string keeps
	// its quotes).
	RequestID string
	// TraceParent and TraceState are params._meta's traceparent and
	// tracestate strings (SEP-414), "" when absent or not strings.
	TraceParent, TraceState string
}

// RequestEnd is how a request ended.
type RequestEnd struct {
	// ErrorType is error.type: "" on success, the JSON-RPC error code as a
	// decimal string ("-32602"), or "tool_error" for a CallToolResult with
	// isError true.
	ErrorType string
}

// ObservedTurn describes one agent turn (gen_ai invoke_agent).
type ObservedTurn struct {
	// Agent is gen_ai.agent.name; Model the model the turn drives
	// (gen_ai.request.model); Provider gen_ai.provider.name ("openai" for
	// any OpenAI-compatible endpoint).
	Agent, Model, Provider string
}

// TurnEnd is how a turn ended: Steps model requests, ToolCalls tool calls,
// and ErrorType "" on success, else a short class ("cancelled", "timeout",
// "model", "refused", "_OTHER").
type TurnEnd struct {
	Steps, ToolCalls int
	ErrorType        string
}

// ObservedModelStep describes one model request (gen_ai chat).
type ObservedModelStep struct {
	// Model is gen_ai.request.model, Provider gen_ai.provider.name, and
	// ServerAddress and ServerPort the endpoint's host and port (never its
	// path or query, which may carry credentials).
	Model, Provider string
	ServerAddress   string
	ServerPort      int
}

// ModelStepEnd is how a model request ended.
type ModelStepEnd struct {
	// FinishReason is the endpoint's finish_reason, "" when none.
	FinishReason string
	// Usage is the step's token counts as the endpoint reported them
	// (AssistantMessage.Usage), nil when it reported none.
	Usage *TokenUsage
	// ErrorType is "" on success, else a short class ("cancelled",
	// "no_choices", "_OTHER").
	ErrorType string
}

// ToolCallEnd is how one of the agent's tool calls ended: ErrorType "" on
// success, "tool_error" when the tool failed or refused, "unknown_tool",
// "invalid_arguments".
type ToolCallEnd struct {
	ErrorType string
}

// NopObserver observes nothing; embed it to implement part of [Observer].
type NopObserver struct{}

func (NopObserver) StartRequest(ctx context.Context, _ ObservedRequest) (context.Context, func(RequestEnd)) {
	return ctx, func(RequestEnd) {}
}

func (NopObserver) StartTurn(ctx context.Context, _ ObservedTurn) (context.Context, func(TurnEnd)) {
	return ctx, func(TurnEnd) {}
}

func (NopObserver) StartModelStep(ctx context.Context, _ ObservedModelStep) (context.Context, func(ModelStepEnd)) {
	return ctx, func(ModelStepEnd) {}
}

func (NopObserver) StartToolCall(ctx context.Context, _ string) (context.Context, func(ToolCallEnd)) {
	return ctx, func(ToolCallEnd) {}
}

func (NopObserver) StartConnection(string) func() { return func() {} }

var _ Observer = NopObserver{}

// Observers returns an Observer that reports to each of obs in order (nil
// ones skipped); the context each returns is passed to the next. It
// returns nil when none is left and the one left when only one is.
func Observers(obs ...Observer) Observer {
	var list tee
	for _, o := range obs {
		if o != nil {
			list = append(list, o)
		}
	}
	switch len(list) {
	case 0:
		return nil
	case 1:
		return list[0]
	}
	return list
}

type tee []Observer

// teeStart starts the work on every observer of t in order, threading the
// context, and returns one end function that ends them in reverse.
func teeStart[E any](ctx context.Context, t tee, start func(Observer, context.Context) (context.Context, func(E))) (context.Context, func(E)) {
	ends := make([]func(E), len(t))
	for i, o := range t {
		ctx, ends[i] = start(o, ctx)
	}
	return ctx, func(e E) {
		for i := len(ends) - 1; i >= 0; i-- {
			ends[i](e)
		}
	}
}

func (t tee) StartRequest(ctx context.Context, r ObservedRequest) (context.Context, func(RequestEnd)) {
	return teeStart(ctx, t, func(o Observer, ctx context.Context) (context.Context, func(RequestEnd)) {
		return o.StartRequest(ctx, r)
	})
}

func (t tee) StartTurn(ctx context.Context, r ObservedTurn) (context.Context, func(TurnEnd)) {
	return teeStart(ctx, t, func(o Observer, ctx context.Context) (context.Context, func(TurnEnd)) { return o.StartTurn(ctx, r) })
}

func (t tee) StartModelStep(ctx context.Context, s ObservedModelStep) (context.Context, func(ModelStepEnd)) {
	return teeStart(ctx, t, func(o Observer, ctx context.Context) (context.Context, func(ModelStepEnd)) {
		return o.StartModelStep(ctx, s)
	})
}

func (t tee) StartConnection(transport string) func() {
	ends := make([]func(), len(t))
	for i, o := range t {
		ends[i] = o.StartConnection(transport)
	}
	return func() {
		for _, end := range ends {
			end()
		}
	}
}

func (t tee) StartToolCall(ctx context.Context, tool string) (context.Context, func(ToolCallEnd)) {
	return teeStart(ctx, t, func(o Observer, ctx context.Context) (context.Context, func(ToolCallEnd)) {
		return o.StartToolCall(ctx, tool)
	})
}
