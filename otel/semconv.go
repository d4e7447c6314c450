package otel

import "go.opentelemetry.io/otel/attribute"

// Attribute keys of the OpenTelemetry semantic conventions for MCP and
// GenAI (open-telemetry/semantic-conventions-genai: docs/gen-ai/mcp.md,
// gen-ai-spans.md, gen-ai-agent-spans.md; status Development). otel-go's
// semconv v1.42.0 removed its Mcp*/GenAI* constants, so they are ours.
const (
	keyMCPMethodName      = attribute.Key("mcp.method.name")
	keyMCPProtocolVersion = attribute.Key("mcp.protocol.version")
	keyJSONRPCRequestID   = attribute.Key("jsonrpc.request.id")
	keyRPCResponseStatus  = attribute.Key("rpc.response.status_code")
	keyErrorType          = attribute.Key("error.type")
	keyOperationName      = attribute.Key("gen_ai.operation.name")
	keyToolName           = attribute.Key("gen_ai.tool.name")
	keyAgentName          = attribute.Key("gen_ai.agent.name")
	keyProviderName       = attribute.Key("gen_ai.provider.name")
	keyRequestModel       = attribute.Key("gen_ai.request.model")
	keyInputTokens        = attribute.Key("gen_ai.usage.input_tokens")
	keyOutputTokens       = attribute.Key("gen_ai.usage.output_tokens")
	keyFinishReasons      = attribute.Key("gen_ai.response.finish_reasons")
	keyServerAddress      = attribute.Key("server.address")
	keyServerPort         = attribute.Key("server.port")
)

// gen_ai.operation.name values.
const (
	opExecuteTool = "execute_tool"
	opInvokeAgent = "invoke_agent"
	opChat        = "chat"
)
