package metrics_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/metrics"
	"github.com/agentmcp/agentmcp/ports"
)

// scrape returns the text exposition the handler serves.
func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return string(b)
}

// has fails t unless text holds every line of want.
func has(t *testing.T, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w+"\n") {
			t.Errorf("exposition lacks %q:\n%s", w, text)
		}
	}
}

// TestRequestsAndTurns: each observation lands under its OpenTelemetry name
// with bounded labels (docs/SPEC.md §13): a tool the catalog lacks is
// _OTHER, tokens are counted only when reported, gauges go back down.
func TestRequestsAndTurns(t *testing.T) {
	parked := 3
	m := metrics.New(metrics.Options{ParkedRounds: func() int { return parked }, Version: "1.2.3"})
	ctx := context.Background()

	_, end := m.StartRequest(ctx, ports.ObservedRequest{Method: "tools/call", Tool: "read_file", ToolKnown: true, ProtocolVersion: "2025-11-25", RequestID: `"req-xyzzy"`})
	_, end2 := m.StartRequest(ctx, ports.ObservedRequest{Method: "tools/call", Tool: "free text from a client", ProtocolVersion: "2026-07-28"})
	has(t, scrape(t, m), "agentmcp_requests_in_flight 2", "agentmcp_rounds_parked 3", `agentmcp_build_info{version="1.2.3"} 1`)
	end(ports.RequestEnd{})
	end2(ports.RequestEnd{ErrorType: "tool_error"})

	_, endTurn := m.StartTurn(ctx, ports.ObservedTurn{Agent: "agentmcp", Model: "m1", Provider: "openai"})
	has(t, scrape(t, m), "agentmcp_turns_running 1")
	_, endStep := m.StartModelStep(ctx, ports.ObservedModelStep{Model: "m1", Provider: "openai"})
	endStep(ports.ModelStepEnd{Usage: &ports.TokenUsage{InputTokens: 100, OutputTokens: 7}})
	_, endStep = m.StartModelStep(ctx, ports.ObservedModelStep{Model: "m1", Provider: "openai"})
	endStep(ports.ModelStepEnd{ErrorType: "_OTHER"})
	_, endCall := m.StartToolCall(ctx, "write_file")
	endCall(ports.ToolCallEnd{ErrorType: "tool_error"})
	_, endCall = m.StartToolCall(ctx, "made-up by the model")
	endCall(ports.ToolCallEnd{ErrorType: "unknown_tool"})
	endTurn(ports.TurnEnd{Steps: 2, ToolCalls: 2, ErrorType: "timeout"})
	closeConn := m.StartConnection("tcp")
	m.Audit(ports.AuditRecord{Refusal: ports.RefusalExpired, Remote: ports.AddressPublic})
	m.Audit(ports.AuditRecord{Refusal: ports.RefusalExpired, Remote: ports.AddressPrivate, Throttled: true})

	text := scrape(t, m)
	has(t, text,
		"agentmcp_requests_in_flight 0",
		`mcp_server_operation_duration_seconds_count{error_type="",gen_ai_tool_name="read_file",mcp_method_name="tools/call",mcp_protocol_version="2025-11-25"} 1`,
		`mcp_server_operation_duration_seconds_count{error_type="tool_error",gen_ai_tool_name="_OTHER",mcp_method_name="tools/call",mcp_protocol_version="2026-07-28"} 1`,
		`mcp_server_operation_duration_seconds_bucket{error_type="",gen_ai_tool_name="read_file",mcp_method_name="tools/call",mcp_protocol_version="2025-11-25",le="300"} 1`,
		"agentmcp_turns_running 0",
		`agentmcp_turns_total{error_type="timeout",gen_ai_agent_name="agentmcp"} 1`,
		`gen_ai_client_operation_duration_seconds_count{error_type="",gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="m1"} 1`,
		`gen_ai_client_operation_duration_seconds_count{error_type="_OTHER",gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="m1"} 1`,
		`gen_ai_client_operation_duration_seconds_bucket{error_type="",gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="m1",le="81.92"} 1`,
		`gen_ai_client_token_usage_sum{gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="m1",gen_ai_token_type="input"} 100`,
		`gen_ai_client_token_usage_count{gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="m1",gen_ai_token_type="output"} 1`,
		`agentmcp_agent_tool_calls_total{error_type="tool_error",gen_ai_tool_name="write_file"} 1`,
		`agentmcp_agent_tool_calls_total{error_type="unknown_tool",gen_ai_tool_name="_OTHER"} 1`,
		`agentmcp_connections_open{network_transport="tcp"} 1`,
		`agentmcp_refusals_total{reason="expired"} 2`,
	)
	for _, leak := range []string{"free text", "made-up", "xyzzy"} {
		if strings.Contains(text, leak) {
			t.Errorf("exposition holds %q", leak)
		}
	}
	closeConn()
	has(t, scrape(t, m), `agentmcp_connections_open{network_transport="tcp"} 0`)
}

// BenchmarkRequest is what the metrics add to one request: its start and
// end observed (the bench's loopback rows measure it end to end).
func BenchmarkRequest(b *testing.B) {
	m := metrics.New(metrics.Options{})
	ctx := context.Background()
	r := ports.ObservedRequest{Method: "tools/call", Tool: "echo", ToolKnown: true, ProtocolVersion: "2025-11-25", RequestID: "1"}
	b.ReportAllocs()
	for b.Loop() {
		_, end := m.StartRequest(ctx, r)
		end(ports.RequestEnd{})
	}
}
