// Package metrics is agentmcp's Prometheus instrumentation (docs/SPEC.md
// §13): a [ports.Observer] and a [ports.AuditSink] that count what the
// engine, the agent and the HTTP hosts report, and the handler that exposes
// them in Prometheus' text format (github.com/prometheus/client_golang).
//
// Names follow the OpenTelemetry semantic conventions for MCP and GenAI
// (status Development) where they define one, converted as OpenTelemetry's
// Prometheus exporter does: dots become underscores and the unit a suffix
// (mcp.server.operation.duration in s is
// mcp_server_operation_duration_seconds; attribute mcp.method.name is label
// mcp_method_name). What the conventions do not define is agentmcp_*.
//
// Cardinality is bounded: labels take their values from the catalog (a
// tool name the catalog does not have counts as "_OTHER"), the operator's
// configuration (the model), or small fixed vocabularies (methods, error
// types, refusal reasons). No principal, id, path, address or argument is
// ever a label.
package metrics

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentmcp/agentmcp/ports"
)

// Buckets of the conventions' histograms.
var (
	// MCPDurationBuckets are mcp.server.operation.duration's, in seconds.
	MCPDurationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
	// GenAIDurationBuckets are gen_ai.client.operation.duration's, in
	// seconds.
	GenAIDurationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	// TokenBuckets are gen_ai.client.token.usage's, in tokens.
	TokenBuckets = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
)

// Label names: OpenTelemetry attribute names with dots as underscores.
const (
	labelMethod    = "mcp_method_name"
	labelVersion   = "mcp_protocol_version"
	labelTool      = "gen_ai_tool_name"
	labelError     = "error_type"
	labelOperation = "gen_ai_operation_name"
	labelProvider  = "gen_ai_provider_name"
	labelModel     = "gen_ai_request_model"
	labelTokenType = "gen_ai_token_type"
	labelAgent     = "gen_ai_agent_name"
	labelReason    = "reason"
	labelTransport = "network_transport"
)

// other stands for a value outside the bounded vocabulary (the
// conventions' "_OTHER").
const other = "_OTHER"

// Metrics holds agentmcp's metrics in a registry of their own. It
// implements [ports.Observer] (give it to engine.Options.Observer and
// agent.Options.Observer) and [ports.AuditSink] (the remote host's
// refusals). Safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	operation   *prometheus.HistogramVec
	ops         sync.Map // opKey → prometheus.Observer: operation's children, found without re-hashing their labels
	inFlight    prometheus.Gauge
	conns       *prometheus.GaugeVec
	refusals    *prometheus.CounterVec
	turns       *prometheus.CounterVec
	turnsActive prometheus.Gauge
	model       *prometheus.HistogramVec
	tokens      *prometheus.HistogramVec
	toolCalls   *prometheus.CounterVec
}

// opKey is one child of the operation histogram: its label values.
type opKey struct{ method, tool, errorType, version string }

// op returns the operation histogram's child for k. The cache is bounded
// as the labels are.
func (m *Metrics) op(k opKey) prometheus.Observer {
	if o, ok := m.ops.Load(k); ok {
		return o.(prometheus.Observer)
	}
	o := m.operation.WithLabelValues(k.method, k.tool, k.errorType, k.version)
	m.ops.Store(k, o)
	return o
}

// Options configures [New].
type Options struct {
	// ParkedRounds, when set, is read at each scrape for
	// agentmcp_rounds_parked (engine.Engine.Stats).
	ParkedRounds func() int
	// Version, when set, is the version label of agentmcp_build_info.
	Version string
	// Runtime adds the Go runtime's and the process's collectors
	// (go_*, process_*).
	Runtime bool
}

// New returns the metrics, registered in a new registry.
func New(o Options) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.operation = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcp_server_operation_duration_seconds",
		Help:    "MCP request duration as observed on the receiver from the time it was received until the result or ack is sent (OpenTelemetry mcp.server.operation.duration).",
		Buckets: MCPDurationBuckets,
	}, []string{labelMethod, labelTool, labelError, labelVersion})
	m.inFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "agentmcp_requests_in_flight",
		Help: "MCP requests being served (tools/list, tools/call, server/discover).",
	})
	m.conns = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "agentmcp_connections_open",
		Help: "Connections open on the HTTP hosts.",
	}, []string{labelTransport})
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentmcp_refusals_total",
		Help: "Requests the remote host refused, by the audit record's refusal reason.",
	}, []string{labelReason})
	m.turns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentmcp_turns_total",
		Help: "Agent turns ended, by error type (empty: it answered).",
	}, []string{labelAgent, labelError})
	m.turnsActive = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "agentmcp_turns_running",
		Help: "Agent turns running.",
	})
	m.model = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gen_ai_client_operation_duration_seconds",
		Help:    "GenAI operation duration: the agent's model requests (OpenTelemetry gen_ai.client.operation.duration).",
		Buckets: GenAIDurationBuckets,
	}, []string{labelOperation, labelProvider, labelModel, labelError})
	m.tokens = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gen_ai_client_token_usage",
		Help:    "Number of input and output tokens used, as the model endpoint reported them (OpenTelemetry gen_ai.client.token.usage).",
		Buckets: TokenBuckets,
	}, []string{labelOperation, labelProvider, labelModel, labelTokenType})
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "agentmcp_agent_tool_calls_total",
		Help: "Tool calls the agent ran for its model, by tool and error type.",
	}, []string{labelTool, labelError})
	m.reg.MustRegister(m.operation, m.inFlight, m.conns, m.refusals, m.turns, m.turnsActive, m.model, m.tokens, m.toolCalls)
	if o.ParkedRounds != nil {
		parked := o.ParkedRounds
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "agentmcp_rounds_parked",
			Help: "Input-required rounds parked, waiting for their client's answer.",
		}, func() float64 { return float64(parked()) }))
	}
	if o.Version != "" {
		info := prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "agentmcp_build_info",
			Help: "agentmcp's version; always 1.",
		}, []string{"version"})
		info.WithLabelValues(o.Version).Set(1)
		m.reg.MustRegister(info)
	}
	if o.Runtime {
		m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return m
}

// Handler serves the metrics in Prometheus' text exposition format (or
// OpenMetrics when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Registry is the registry the metrics are in, for a program that adds its
// own or gathers them.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// StartRequest implements [ports.Observer]: the operation duration and the
// requests in flight.
func (m *Metrics) StartRequest(ctx context.Context, r ports.ObservedRequest) (context.Context, func(ports.RequestEnd)) {
	start := time.Now()
	m.inFlight.Inc()
	method, tool, version := r.Method, r.Tool, r.ProtocolVersion // the closure keeps these only
	if tool != "" && !r.ToolKnown {
		tool = other
	}
	return ctx, func(e ports.RequestEnd) {
		m.inFlight.Dec()
		m.op(opKey{method, tool, e.ErrorType, version}).Observe(time.Since(start).Seconds())
	}
}

// StartTurn implements [ports.Observer]: turns running and ended.
func (m *Metrics) StartTurn(ctx context.Context, t ports.ObservedTurn) (context.Context, func(ports.TurnEnd)) {
	m.turnsActive.Inc()
	return ctx, func(e ports.TurnEnd) {
		m.turnsActive.Dec()
		m.turns.WithLabelValues(t.Agent, e.ErrorType).Inc()
	}
}

// StartModelStep implements [ports.Observer]: the model requests' duration
// by outcome and their token usage.
func (m *Metrics) StartModelStep(ctx context.Context, s ports.ObservedModelStep) (context.Context, func(ports.ModelStepEnd)) {
	start := time.Now()
	return ctx, func(e ports.ModelStepEnd) {
		m.model.WithLabelValues("chat", s.Provider, s.Model, e.ErrorType).Observe(time.Since(start).Seconds())
		if e.Usage != nil {
			m.tokens.WithLabelValues("chat", s.Provider, s.Model, "input").Observe(float64(e.Usage.InputTokens))
			m.tokens.WithLabelValues("chat", s.Provider, s.Model, "output").Observe(float64(e.Usage.OutputTokens))
		}
	}
}

// StartToolCall implements [ports.Observer]: the agent's tool calls. The
// name is the model's text: one the agent refused as unknown counts as
// "_OTHER".
func (m *Metrics) StartToolCall(ctx context.Context, tool string) (context.Context, func(ports.ToolCallEnd)) {
	return ctx, func(e ports.ToolCallEnd) {
		name := tool
		if e.ErrorType == "unknown_tool" {
			name = other
		}
		m.toolCalls.WithLabelValues(name, e.ErrorType).Inc()
	}
}

// StartConnection implements [ports.Observer]: connections open.
func (m *Metrics) StartConnection(transport string) func() {
	g := m.conns.WithLabelValues(transport)
	g.Inc()
	return g.Dec
}

// Audit implements [ports.AuditSink]: one refusal counted by its reason.
func (m *Metrics) Audit(r ports.AuditRecord) {
	m.refusals.WithLabelValues(string(r.Refusal)).Inc()
}

var (
	_ ports.Observer  = (*Metrics)(nil)
	_ ports.AuditSink = (*Metrics)(nil)
)
