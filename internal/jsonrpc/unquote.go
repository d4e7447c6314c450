package jsonrpc

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// Unquote decodes the JSON string literal lit (with its quotes; valid
// JSON). The names and values an MCP server reads on every message (the
// envelope's and the params' member names, the methods it serves most, the
// _meta keys of the 2026-07-28 era) come back as constants, without an
// allocation; other strings without escapes are one conversion.
func Unquote(lit []byte) string {
	if len(lit) < 2 {
		return ""
	}
	body := lit[1 : len(lit)-1]
	switch string(body) { // no allocation: the compiler compares in place
	case "jsonrpc":
		return "jsonrpc"
	case "id":
		return "id"
	case "method":
		return "method"
	case "params":
		return "params"
	case "result":
		return "result"
	case "error":
		return "error"
	case "name":
		return "name"
	case "arguments":
		return "arguments"
	case "_meta":
		return "_meta"
	case "tools/call":
		return "tools/call"
	case "tools/list":
		return "tools/list"
	case "ping":
		return "ping"
	case "initialize":
		return "initialize"
	case "server/discover":
		return "server/discover"
	case "io.modelcontextprotocol/protocolVersion":
		return "io.modelcontextprotocol/protocolVersion"
	case "io.modelcontextprotocol/clientCapabilities":
		return "io.modelcontextprotocol/clientCapabilities"
	case "io.modelcontextprotocol/clientInfo":
		return "io.modelcontextprotocol/clientInfo"
	case "progressToken":
		return "progressToken"
	case "2026-07-28":
		return "2026-07-28"
	case "cursor":
		return "cursor"
	case "requestState":
		return "requestState"
	case "inputResponses":
		return "inputResponses"
	}
	if plain(body) {
		return string(body)
	}
	// Escapes, or bytes that are not UTF-8: decoded as encoding/json
	// decodes them (each invalid byte becomes U+FFFD), so a name means here
	// what it means to whoever decodes the same text with encoding/json.
	var s string
	_ = json.Unmarshal(lit, &s)
	return s
}

// EqualString reports whether the JSON string literal lit (valid JSON)
// decodes to s, without decoding it when it holds no escapes.
func EqualString(lit []byte, s string) bool {
	if body := lit[1 : len(lit)-1]; plain(body) {
		return string(body) == s
	}
	return Unquote(lit) == s
}

// plain reports whether a string literal's body means its own bytes: no
// escapes, and valid UTF-8.
func plain(body []byte) bool { return bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) }

// IsString reports whether the raw JSON value v is a string.
func IsString(v []byte) bool { return len(v) > 0 && v[0] == '"' }

// IsObject reports whether the raw JSON value v is an object.
func IsObject(v []byte) bool { return len(v) > 0 && v[0] == '{' }
