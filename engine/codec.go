package engine

import "github.com/agentmcp/agentmcp/internal/jsonrpc"

// JSON-RPC 2.0 and MCP error codes (JSON-RPC 2.0 §5.1; MCP 2026-07-28
// reserves -32020..-32099). Never renumber: they travel on the wire. The
// JSON-RPC ones are internal/jsonrpc's, named here for the engine's users.
const (
	CodeParseError                 = jsonrpc.CodeParseError
	CodeInvalidRequest             = jsonrpc.CodeInvalidRequest
	CodeMethodNotFound             = jsonrpc.CodeMethodNotFound
	CodeInvalidParams              = jsonrpc.CodeInvalidParams
	CodeInternalError              = jsonrpc.CodeInternalError
	CodeHeaderMismatch             = -32020
	CodeUnsupportedProtocolVersion = -32022
)

// Error is a JSON-RPC error object as the engine sends it (the one type the
// pipeline's steps report wire errors with; the encoder maps it to the
// wire). Message is client-visible. errors.Is matches two Errors with the
// same Code: errors.Is(err, &engine.Error{Code: engine.CodeInvalidParams}).
type Error = jsonrpc.Error

// ErrorBody encodes a JSON-RPC error response without an id, for a framing
// that refuses a body before the engine sees it (Streamable HTTP's 415, 406
// and bodies that break off). MCP 2025-11-25+: an id that cannot be read is
// omitted, never null.
func ErrorBody(code int, message string) []byte {
	return jsonrpc.EncodeError(jsonrpc.ID{}, jsonrpc.NewError(code, message))
}
