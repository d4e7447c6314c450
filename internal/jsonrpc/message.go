package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// JSON-RPC 2.0 error codes (JSON-RPC 2.0 §5.1). Never renumber: they travel
// on the wire.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Error is a JSON-RPC error object (JSON-RPC 2.0 §5.1). Message is
// client-visible. errors.Is matches two Errors with the same Code.
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

// NewError returns an Error with code and message and no data.
func NewError(code int, msg string) *Error { return &Error{Code: code, Message: msg} }

// ErrParse answers text that is not JSON (-32700, never with an id).
var ErrParse = NewError(CodeParseError, "Parse error")

// InvalidRequest is -32600 "Invalid Request: " + why.
func InvalidRequest(why string) *Error {
	return NewError(CodeInvalidRequest, "Invalid Request: "+why)
}

// InvalidParams is -32602 "Invalid params: " + why.
func InvalidParams(why string) *Error { return NewError(CodeInvalidParams, "Invalid params: "+why) }

// MethodNotFound is -32601 naming the method.
func MethodNotFound(method string) *Error {
	if method == "" {
		return NewError(CodeMethodNotFound, "Method not found: empty method")
	}
	return NewError(CodeMethodNotFound, "Method not found: "+method)
}

// ID is a request id as it arrived: its raw bytes are echoed back byte for
// byte, and Key identifies it by type and value ("14" ≠ 14). The zero ID is
// no id.
type ID struct{ raw []byte }

// Valid reports whether the ID holds an id (the zero ID does not).
func (i ID) Valid() bool { return len(i.raw) > 0 }

// Raw is the id's JSON text, as it arrived.
func (i ID) Raw() []byte { return i.raw }

// Key is the id's identity: "s:" + the decoded string or "n:" + the
// integer (-0 is 0). The ID must be valid.
func (i ID) Key() string {
	if i.raw[0] == '"' {
		return "s:" + Unquote(i.raw)
	}
	if string(i.raw) == "-0" {
		return "n:0"
	}
	return "n:" + string(i.raw)
}

// ParseID reads raw, one value of valid JSON text (a member's value), as
// an id: a string or an integer (MCP: RequestId is string | integer; null
// is refused). A string that is not valid UTF-8 is refused
// too: echoing it byte for byte would put a line on the wire that is not
// JSON text (RFC 8259 §8.1), and replacing the bytes would not echo it.
func ParseID(raw []byte) (ID, bool) {
	if len(raw) == 0 {
		return ID{}, false
	}
	switch c := raw[0]; {
	case c == '"':
		return ID{raw}, utf8.Valid(raw)
	case c == '-' || (c >= '0' && c <= '9'):
		digits := raw
		if c == '-' {
			digits = raw[1:]
		}
		if len(digits) == 0 || bytes.ContainsAny(digits, ".eE+-") {
			return ID{}, false
		}
		return ID{raw}, true
	}
	return ID{}, false
}

// Message is one decoded JSON-RPC message: the envelope's members, each
// read once, whatever their order; values are raw slices of the frame.
type Message struct {
	ID        ID
	HasID     bool // an "id" member was present (even if invalid)
	Method    string
	HasMethod bool // a "method" member was present (even if not a string)
	Params    []byte
	Result    []byte
	Error     []byte
}

// IsNotification reports a method without an id member.
func (m *Message) IsNotification() bool { return m.HasMethod && !m.HasID }

// DecodeMessage decodes one frame that should be a JSON object: text that
// is not JSON is ErrParse (-32700, no id), checked in the same pass.
// Every member is read before anything is judged, so an id is recovered
// whatever the member order and whatever else is wrong (docs/SPEC.md §4;
// K2, K3). On failure it returns a -32600 and the message as far as it
// could be read; a message with a method and no id member is a notification
// even when invalid, and gets no answer.
func DecodeMessage(obj []byte) (Message, *Error) {
	var stack [8]Member
	ms, dup, valid := CheckedMembers(obj, stack[:0])
	var m Message
	if !valid {
		return m, ErrParse
	}
	var version []byte
	methodOK := true
	for _, mb := range ms {
		switch mb.Name {
		case "jsonrpc":
			version = mb.Value
		case "id":
			m.HasID = true
			if i, ok := ParseID(mb.Value); ok {
				m.ID = i
			}
		case "method":
			m.HasMethod = true
			if IsString(mb.Value) {
				m.Method = Unquote(mb.Value)
			} else {
				methodOK = false
			}
		case "params":
			m.Params = mb.Value
		case "result":
			m.Result = mb.Value
		case "error":
			m.Error = mb.Value
		}
	}
	switch {
	case dup:
		return m, InvalidRequest("duplicate member")
	case string(version) != `"2.0"`:
		return m, InvalidRequest(`jsonrpc must be "2.0"`)
	case m.HasID && !m.ID.Valid():
		return m, InvalidRequest("id must be a string or an integer")
	case !methodOK:
		return m, InvalidRequest("method is not a string")
	case m.HasMethod:
		if m.Result != nil || m.Error != nil {
			return m, InvalidRequest("a request has no result or error")
		}
		if m.Params != nil && !IsObject(m.Params) && m.Params[0] != '[' {
			return m, InvalidRequest("params must be an object")
		}
	case m.HasID:
		if (m.Result == nil) == (m.Error == nil) {
			return m, InvalidRequest("a response has exactly one of result and error")
		}
	default:
		return m, InvalidRequest("no method")
	}
	return m, nil
}

// EncodeResponse encodes one response: result (already JSON) or the error,
// with the id when one was recovered (MCP 2025-11-25+: never null).
func EncodeResponse(i ID, result []byte, rerr *Error) []byte {
	b := AppendResponseHead(make([]byte, 0, 48+len(i.raw)+len(result)), i)
	if rerr != nil {
		b = append(b, `,"error":{"code":`...)
		b = strconv.AppendInt(b, int64(rerr.Code), 10)
		b = append(b, `,"message":`...)
		b = AppendString(b, rerr.Message)
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

// EncodeError encodes an error response with the given id (the zero ID: no
// id member).
func EncodeError(i ID, e *Error) []byte { return EncodeResponse(i, nil, e) }

// AppendResponseHead appends a response's opening: {"jsonrpc":"2.0" and
// the id when one was recovered.
func AppendResponseHead(b []byte, i ID) []byte {
	b = append(b, `{"jsonrpc":"2.0"`...)
	if i.Valid() {
		b = append(b, `,"id":`...)
		b = append(b, i.raw...)
	}
	return b
}
