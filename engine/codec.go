package engine

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/agentmcp/agentmcp/internal/jsonrpc"
)

// JSON-RPC 2.0 and MCP error codes (JSON-RPC 2.0 §5.1; MCP 2026-07-28
// reserves -32020..-32099). Never renumber: they travel on the wire.
const (
	CodeParseError                 = -32700
	CodeInvalidRequest             = -32600
	CodeMethodNotFound             = -32601
	CodeInvalidParams              = -32602
	CodeInternalError              = -32603
	CodeHeaderMismatch             = -32020
	CodeUnsupportedProtocolVersion = -32022
)

// Error is a JSON-RPC error object as the engine sends it (the one type the
// pipeline's steps report wire errors with; the encoder maps it to the
// wire). Message is client-visible. errors.Is matches two Errors with the
// same Code: errors.Is(err, &engine.Error{Code: engine.CodeInvalidParams}).
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

func newError(code int, msg string) *Error { return &Error{Code: code, Message: msg} }

// errParse answers text that is not JSON (-32700, never with an id).
var errParse = newError(CodeParseError, "Parse error")

func invalidRequest(why string) *Error { return newError(CodeInvalidRequest, "Invalid Request: "+why) }
func invalidParams(why string) *Error  { return newError(CodeInvalidParams, "Invalid params: "+why) }

// methodNotFound is the one -32601 of every path.
func methodNotFound(method string) *Error {
	if method == "" {
		return newError(CodeMethodNotFound, "Method not found: empty method")
	}
	return newError(CodeMethodNotFound, "Method not found: "+method)
}

// id is a JSON-RPC request id as it arrived: its raw bytes are echoed back
// byte for byte, and key identifies it by type and value ("14" ≠ 14).
type id struct{ raw []byte }

func (i id) valid() bool { return len(i.raw) > 0 }

// key is the id's identity: "s:" + the decoded string or "n:" + the integer
// (-0 is 0).
func (i id) key() string {
	if i.raw[0] == '"' {
		return "s:" + jsonrpc.Unquote(i.raw)
	}
	if string(i.raw) == "-0" {
		return "n:0"
	}
	return "n:" + string(i.raw)
}

// parseID accepts a string or an integer (MCP: RequestId is string |
// integer; null is refused). A string that is not valid UTF-8 is refused
// too: echoing it byte for byte would put a line on the wire that is not
// JSON text (RFC 8259 §8.1), and replacing the bytes would not echo it.
func parseID(raw []byte) (id, bool) {
	if len(raw) == 0 {
		return id{}, false
	}
	switch c := raw[0]; {
	case c == '"':
		return id{raw}, utf8.Valid(raw)
	case c == '-' || (c >= '0' && c <= '9'):
		digits := raw
		if c == '-' {
			digits = raw[1:]
		}
		if len(digits) == 0 || bytes.ContainsAny(digits, ".eE+-") {
			return id{}, false
		}
		return id{raw}, true
	}
	return id{}, false
}

// message is one decoded JSON-RPC message: the envelope members, each read
// once, whatever their order.
type message struct {
	id        id
	hasID     bool // an "id" member was present (even if invalid)
	method    string
	hasMethod bool // a "method" member was present (even if not a string)
	params    []byte
	result    []byte
	err       []byte
}

func (m *message) isRequest() bool      { return m.hasMethod && m.hasID }
func (m *message) isNotification() bool { return m.hasMethod && !m.hasID }

// decodeMessage decodes one frame that should be a JSON object: text that
// is not JSON is errParse (-32700, no id), checked in the same pass.
// Every member is read before anything is judged, so an id is recovered
// whatever the member order and whatever else is wrong (docs/SPEC.md §4;
// K2, K3). On failure it returns a -32600 and the message as far as it
// could be read; a message with a method and no id member is a notification
// even when invalid, and gets no answer.
func decodeMessage(obj []byte) (message, *Error) {
	var stack [8]jsonrpc.Member
	ms, dup, valid := jsonrpc.CheckedMembers(obj, stack[:0])
	var m message
	if !valid {
		return m, errParse
	}
	var version []byte
	methodOK := true
	for _, mb := range ms {
		switch mb.Name {
		case "jsonrpc":
			version = mb.Value
		case "id":
			m.hasID = true
			if i, ok := parseID(mb.Value); ok {
				m.id = i
			}
		case "method":
			m.hasMethod = true
			if jsonrpc.IsString(mb.Value) {
				m.method = jsonrpc.Unquote(mb.Value)
			} else {
				methodOK = false
			}
		case "params":
			m.params = mb.Value
		case "result":
			m.result = mb.Value
		case "error":
			m.err = mb.Value
		}
	}
	switch {
	case dup:
		return m, invalidRequest("duplicate member")
	case string(version) != `"2.0"`:
		return m, invalidRequest(`jsonrpc must be "2.0"`)
	case m.hasID && !m.id.valid():
		return m, invalidRequest("id must be a string or an integer")
	case !methodOK:
		return m, invalidRequest("method is not a string")
	case m.hasMethod:
		if m.result != nil || m.err != nil {
			return m, invalidRequest("a request has no result or error")
		}
		if m.params != nil && !jsonrpc.IsObject(m.params) && m.params[0] != '[' {
			return m, invalidRequest("params must be an object")
		}
	case m.hasID:
		if (m.result == nil) == (m.err == nil) {
			return m, invalidRequest("a response has exactly one of result and error")
		}
	default:
		return m, invalidRequest("no method")
	}
	return m, nil
}

// encodeResponse encodes one response: result (already JSON) or the error,
// with the id when one was recovered (MCP 2025-11-25+: never null).
func encodeResponse(i id, result []byte, rerr *Error) []byte {
	b := appendHead(make([]byte, 0, 48+len(i.raw)+len(result)), i)
	if rerr != nil {
		b = append(b, `,"error":{"code":`...)
		b = strconv.AppendInt(b, int64(rerr.Code), 10)
		b = append(b, `,"message":`...)
		b = jsonrpc.AppendString(b, rerr.Message)
		if len(rerr.Data) > 0 {
			b = append(b, `,"data":`...)
			b = append(b, rerr.Data...)
		}
		b = append(b, '}')
	} else {
		b = append(b, `,"result":`...)
		b = append(b, result...)
	}
	return append(b, '}')
}

// appendHead appends a response's opening: {"jsonrpc":"2.0" and the id when
// one was recovered.
func appendHead(b []byte, i id) []byte {
	b = append(b, `{"jsonrpc":"2.0"`...)
	if i.valid() {
		b = append(b, `,"id":`...)
		b = append(b, i.raw...)
	}
	return b
}

// errorFrame encodes an error answer with the given id (zero id: no id).
func errorFrame(i id, e *Error) []byte { return encodeResponse(i, nil, e) }

// ErrorBody encodes a JSON-RPC error response without an id, for a framing
// that refuses a body before the engine sees it (Streamable HTTP's 415, 406
// and bodies that break off). MCP 2025-11-25+: an id that cannot be read is
// omitted, never null.
func ErrorBody(code int, message string) []byte {
	return errorFrame(id{}, newError(code, message))
}
