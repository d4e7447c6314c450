package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/agentmcp/agentmcp/domain"
)

// A one-pass walker over JSON text: checkedMembers validates a frame while
// it reads it; the others walk text already known to be valid. It finds an object's members and the raw bytes of
// each value without decoding them, so the envelope and the params are read
// once, allocating only what the caller keeps. Member names are compared as
// decoded strings ("\u006dethod" is "method", as encoding/json reads it).

// member is one member of a JSON object: its decoded name and raw value.
type member struct {
	name  string
	value []byte
}

// errDuplicate reports a member name that appears twice in one object.
var errDuplicate = errors.New("duplicate member")

// members returns the members of the JSON object obj (valid JSON whose first
// non-space byte is '{'), appending to buf. dup is true when a name appears
// more than once; every member is still returned, in order.
func members(obj []byte, buf []member) (out []member, dup bool) {
	out, _, dup, _ = membersAt(obj, skipSpace(obj, 0), buf, "", nil)
	return out, dup
}

// membersAt reads the object at obj[i] (valid JSON) as members does, and
// returns the index just past it. When nested is set and the first member
// named nestedName has an object for its value, that object's members are
// appended to *nested in the same walk (nestedDup: a duplicate among
// them), so that value is read once, not skipped and then read again.
func membersAt(obj []byte, i int, buf []member, nestedName string, nested *[]member) (out []member, end int, dup, nestedDup bool) {
	if i >= len(obj) || obj[i] != '{' {
		return buf, i, false, false
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return buf, i + 1, false, false
	}
	start := len(buf)
	for i < len(obj) {
		end := skipString(obj, i)
		name := unquote(obj[i:end])
		i = skipSpace(obj, end)
		i = skipSpace(obj, i+1) // the ':'
		var vend int
		if nested != nil && name == nestedName && i < len(obj) && obj[i] == '{' {
			*nested, vend, nestedDup, _ = membersAt(obj, i, *nested, "", nil)
		} else {
			vend = skipValue(obj, i)
		}
		if name == nestedName {
			nested = nil // only the first
		}
		if _, seen := lookup(buf[start:], name); seen {
			dup = true
		}
		buf = append(buf, member{name: name, value: obj[i:vend]})
		i = skipSpace(obj, vend)
		if i >= len(obj) || obj[i] == '}' {
			break
		}
		i = skipSpace(obj, i+1) // the ','
	}
	return buf, i + 1, dup, nestedDup
}

// checkedMembers is members for a whole frame that nobody has validated
// yet: it checks that obj is exactly one JSON object (RFC 8259, with
// domain.ValidJSON's rules) while it collects the members, so a frame is
// read once. ok is false when obj is not JSON (or not an object).
func checkedMembers(obj []byte, buf []member) (out []member, dup, ok bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return buf, false, false
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return buf, false, skipSpace(obj, i+1) == len(obj)
	}
	start := len(buf)
	for {
		if i >= len(obj) || obj[i] != '"' {
			return buf, dup, false
		}
		end, ok := domain.ScanJSONValue(obj, i, 1)
		if !ok {
			return buf, dup, false
		}
		name := unquote(obj[i:end])
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return buf, dup, false
		}
		i = skipSpace(obj, i+1)
		vend, ok := domain.ScanJSONValue(obj, i, 1)
		if !ok {
			return buf, dup, false
		}
		if _, seen := lookup(buf[start:], name); seen {
			dup = true
		}
		buf = append(buf, member{name: name, value: obj[i:vend]})
		i = skipSpace(obj, vend)
		switch {
		case i >= len(obj):
			return buf, dup, false
		case obj[i] == '}':
			return buf, dup, skipSpace(obj, i+1) == len(obj)
		case obj[i] != ',':
			return buf, dup, false
		}
		i = skipSpace(obj, i+1)
	}
}

// lookup returns the value of the first member named name.
func lookup(ms []member, name string) ([]byte, bool) {
	for _, m := range ms {
		if m.name == name {
			return m.value, true
		}
	}
	return nil, false
}

// elements returns the raw elements of the JSON array arr (valid JSON whose
// first non-space byte is '[').
func elements(arr []byte) [][]byte {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil
	}
	i = skipSpace(arr, i+1)
	var out [][]byte
	for i < len(arr) && arr[i] != ']' {
		end := skipValue(arr, i)
		out = append(out, arr[i:end])
		i = skipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
	}
	return out
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the string starting at b[i] ('"'):
// at the first quote not escaped, that is with an even run of backslashes
// before it. bytes.IndexByte finds the quotes a word at a time; a run
// never reaches back past i, which follows a quote.
func skipString(b []byte, i int) int {
	for i++; i < len(b); {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			break
		}
		j := i + q
		k := j
		for k > i && b[k-1] == '\\' {
			k--
		}
		if (j-k)%2 == 0 {
			return j + 1
		}
		i = j + 1
	}
	return len(b)
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
	}
	return i
}

// unquote decodes a JSON string literal (with its quotes). The names the
// engine reads are its own constants (no allocation); other strings
// without escapes are one conversion.
func unquote(lit []byte) string {
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
	case metaProtocolVersion:
		return metaProtocolVersion
	case metaClientCapabilities:
		return metaClientCapabilities
	case metaClientInfo:
		return metaClientInfo
	case metaProgressToken:
		return metaProgressToken
	case ModernVersion:
		return ModernVersion
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
	// what it means to the session that decodes the same text.
	var s string
	_ = json.Unmarshal(lit, &s)
	return s
}

// equalString reports whether the JSON string literal lit decodes to s,
// without decoding it when it holds no escapes (a tool name, every call).
func equalString(lit []byte, s string) bool {
	if body := lit[1 : len(lit)-1]; plain(body) {
		return string(body) == s
	}
	return unquote(lit) == s
}

// plain reports whether a string literal's body means its own bytes: no
// escapes, and valid UTF-8.
func plain(body []byte) bool { return bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) }

// isString reports whether raw is a JSON string.
func isString(raw []byte) bool { return len(raw) > 0 && raw[0] == '"' }

// isObject reports whether raw is a JSON object.
func isObject(raw []byte) bool { return len(raw) > 0 && raw[0] == '{' }

// validUTF8 reports whether b holds valid UTF-8 (an id echoed byte for byte
// must, or the line would not be JSON text: RFC 8259 §8.1).
func validUTF8(b []byte) bool { return utf8.Valid(b) }
