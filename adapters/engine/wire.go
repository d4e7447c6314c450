package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/agentmcp/agentmcp/domain"
)

// JSON-RPC 2.0 and MCP error codes (JSON-RPC 2.0 §5.1; MCP 2026-07-28
// reserves -32020..-32099). Never renumber: they travel on the wire.
const (
	CodeParseError            = -32700
	CodeInvalidRequest        = -32600
	CodeMethodNotFound        = -32601
	CodeInvalidParams         = -32602
	CodeInternalError         = -32603
	CodeHeaderMismatch        = -32020
	CodeUnsupportedProtocolVe = -32022
)

// Error is a JSON-RPC error object. Message is client-visible.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return e.Message }

func newError(code int, msg string) *Error { return &Error{Code: code, Message: msg} }

// ID is a JSON-RPC request id as it arrived: its raw bytes are echoed back
// byte for byte, and Key identifies it by type and value ("14" ≠ 14).
type ID struct {
	raw json.RawMessage
	key string
}

// Raw returns the id's bytes as received.
func (id ID) Raw() json.RawMessage { return id.raw }

// Valid reports whether the id is set.
func (id ID) Valid() bool { return len(id.raw) > 0 }

// Key is the id's identity: "s:" + the decoded string or "n:" + the integer.
func (id ID) Key() string { return id.key }

// parseID accepts a string or an integer (MCP: RequestId is string |
// integer; null is refused). A string that is not valid UTF-8 is refused
// too: echoing it byte for byte would put a line on the wire that is not
// JSON text (RFC 8259 §8.1), and replacing the bytes would not echo it.
func parseID(raw json.RawMessage) (ID, bool) {
	if len(raw) == 0 || !utf8.Valid(raw) {
		return ID{}, false
	}
	switch c := raw[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return ID{}, false
		}
		return ID{raw: raw, key: "s:" + s}, true
	case c == '-' || (c >= '0' && c <= '9'):
		digits := raw
		if c == '-' {
			digits = raw[1:]
		}
		if len(digits) == 0 || bytes.ContainsAny(digits, ".eE+-") {
			return ID{}, false
		}
		key := string(raw)
		if key == "-0" {
			key = "0"
		}
		return ID{raw: raw, key: "n:" + key}, true
	}
	return ID{}, false
}

// message is one decoded JSON-RPC message.
type message struct {
	id     ID
	hasID  bool // an "id" member was present (even if invalid)
	method string
	hasMth bool
	params json.RawMessage // nil when absent
	result json.RawMessage
	err    json.RawMessage
}

func (m *message) isRequest() bool      { return m.hasMth && m.hasID }
func (m *message) isNotification() bool { return m.hasMth && !m.hasID }
func (m *message) isResponse() bool     { return !m.hasMth && m.hasID && (m.result != nil || m.err != nil) }

// errDuplicate reports a member that appears twice.
var errDuplicate = errors.New("duplicate member")

// objectMembers walks a JSON object and calls fn for each member with its
// exact (case-sensitive) name and raw value. A duplicate name is reported as
// errDuplicate once the whole object has been walked (fn saw every member,
// the later duplicate last). obj must be valid JSON.
func objectMembers(obj []byte, fn func(name string, value json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("not an object")
	}
	seen := make(map[string]struct{}, 8)
	duplicate := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		if _, dup := seen[name]; dup {
			duplicate = true // walk on: the id and method may still be recovered
		}
		seen[name] = struct{}{}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if err := fn(name, v); err != nil {
			return err
		}
	}
	if duplicate {
		return errDuplicate
	}
	return nil
}

// decodeMessage decodes one JSON object (already known to be valid JSON)
// into a message. On failure it returns a -32600 *Error and whatever id could
// be recovered.
func decodeMessage(obj []byte) (*message, *Error) {
	m := &message{}
	var version json.RawMessage
	var rawID json.RawMessage
	err := objectMembers(obj, func(name string, v json.RawMessage) error {
		switch name {
		case "jsonrpc":
			version = v
		case "id":
			m.hasID = true
			rawID = v
		case "method":
			m.hasMth = true
			if json.Unmarshal(v, &m.method) != nil || v[0] != '"' {
				return errors.New("method is not a string")
			}
		case "params":
			m.params = v
		case "result":
			m.result = v
		case "error":
			m.err = v
		}
		return nil
	})
	if m.hasID {
		if id, ok := parseID(rawID); ok {
			m.id = id
		}
	}
	if err != nil {
		if errors.Is(err, errDuplicate) {
			return m, newError(CodeInvalidRequest, "Invalid Request: duplicate member")
		}
		return m, newError(CodeInvalidRequest, "Invalid Request: "+err.Error())
	}
	if string(version) != `"2.0"` {
		return m, newError(CodeInvalidRequest, `Invalid Request: jsonrpc must be "2.0"`)
	}
	if m.hasID && !m.id.Valid() {
		return m, newError(CodeInvalidRequest, "Invalid Request: id must be a string or an integer")
	}
	switch {
	case m.hasMth:
		if m.result != nil || m.err != nil {
			return m, newError(CodeInvalidRequest, "Invalid Request: a request has no result or error")
		}
		if m.params != nil && m.params[0] != '{' && m.params[0] != '[' {
			return m, newError(CodeInvalidRequest, "Invalid Request: params must be an object")
		}
	case m.hasID:
		if (m.result == nil) == (m.err == nil) {
			return m, newError(CodeInvalidRequest, "Invalid Request: a response has exactly one of result and error")
		}
	default:
		return m, newError(CodeInvalidRequest, "Invalid Request: no method")
	}
	return m, nil
}

// firstByte is a frame's first byte after JSON whitespace (0 for none).
func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// splitArray returns the raw elements of a JSON array (already valid JSON).
func splitArray(arr []byte) ([]json.RawMessage, error) {
	var elems []json.RawMessage
	if err := json.Unmarshal(arr, &elems); err != nil {
		return nil, err
	}
	return elems, nil
}

// response is an outgoing JSON-RPC response. ID is omitted when the request's
// id could not be recovered (MCP 2025-11-25+: never null).
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Result  any             `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

func encodeResponse(id ID, result any, rerr *Error) []byte {
	r := response{JSONRPC: "2.0", ID: id.raw}
	if rerr != nil {
		r.Error = rerr
	} else {
		r.Result = result
	}
	b, err := domain.MarshalJSON(r)
	if err != nil {
		// Only a session-supplied value can fail to marshal; answer internally.
		b, _ = domain.MarshalJSON(response{JSONRPC: "2.0", ID: id.raw, Error: newError(CodeInternalError, "Internal error: result could not be encoded")})
	}
	return b
}

// errorFrame encodes an error answer with the given id (zero ID: no id).
func errorFrame(id ID, e *Error) []byte { return encodeResponse(id, nil, e) }

// ErrorResponse encodes a JSON-RPC error response without an id, for
// carriers that refuse a body before the engine sees it (Streamable HTTP's
// 415, 406 and broken bodies). MCP 2025-11-25+: an id that cannot be read is
// omitted, never null.
func ErrorResponse(code int, message string) []byte {
	return errorFrame(ID{}, newError(code, message))
}

// BatchLen reports the number of elements of body when it is a JSON array
// (a 2025-03-26 batch), so a carrier can count each as in flight before
// calling Exchange. ok is false when body is not a JSON array.
func BatchLen(body []byte) (n int, ok bool) {
	if firstByte(body) != '[' {
		return 0, false
	}
	elems, err := splitArray(body)
	if err != nil {
		return 0, false
	}
	return len(elems), true
}

// methodNotFound is the one -32601 of every path.
func methodNotFound(method string) *Error {
	if method == "" {
		return newError(CodeMethodNotFound, "Method not found: empty method")
	}
	return newError(CodeMethodNotFound, "Method not found: "+method)
}

// trimLine strips a trailing CR so CRLF-framed clients work.
func trimLine(line []byte) []byte {
	return bytes.TrimRight(line, "\r")
}

func isBlank(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }
