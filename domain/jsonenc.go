package domain

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"
)

// JSON text written by hand on the hot path, byte for byte as MarshalJSON
// (encoding/json with HTML escaping off) writes it, without its reflection
// and buffers. A test holds each function to MarshalJSON's output.

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string: '"', '\\' and control
// characters escaped (\b, \f, \n, \r, \t, else \u00XX), U+2028 and U+2029
// as \u2028 and \u2029, invalid UTF-8 as \ufffd; everything else verbatim.
func AppendString[S string | []byte](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		// A copy of at most 4 bytes, so the conversion stays on the stack
		// (as encoding/json does).
		r, size := utf8.DecodeRuneInString(string(s[i : i+min(len(s)-i, utf8.UTFMax)]))
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendFloat appends a finite f as encoding/json writes a float64.
func AppendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// errNotJSON is AppendRaw's error for a value that is not JSON.
var errNotJSON = errors.New("json: invalid JSON value")

// AppendRaw appends the JSON value raw compacted (insignificant whitespace
// removed), as encoding/json writes a json.RawMessage; it fails when raw is
// not one valid JSON value.
func AppendRaw(b []byte, raw []byte) ([]byte, error) {
	if !ValidJSON(raw) {
		return b, errNotJSON
	}
	if !hasSpace(raw) {
		return append(b, raw...), nil
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, raw); err != nil {
		return b, err
	}
	return buf.Bytes(), nil
}

// hasSpace reports whether JSON text has whitespace outside its strings.
func hasSpace(raw []byte) bool {
	in := false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return true
		}
	}
	return false
}

// AppendEnvelope appends e as MarshalJSON(e) writes it (docs/SPEC.md §1:
// these names, in this order, absent optionals left out). It fails, as
// MarshalJSON does, when Result or Metadata is not valid JSON or Duration is
// not finite.
func AppendEnvelope(b []byte, e Envelope) ([]byte, error) {
	b = strconv.AppendBool(append(b, `{"success":`...), e.Success)
	if e.ToolName != "" {
		b = AppendString(append(b, `,"toolName":`...), e.ToolName)
	}
	var err error
	if len(e.Result) > 0 {
		if b, err = AppendRaw(append(b, `,"result":`...), e.Result); err != nil {
			return b, err
		}
	}
	if e.Error != "" {
		b = AppendString(append(b, `,"error":`...), e.Error)
	}
	if e.Duration != nil {
		if math.IsNaN(*e.Duration) || math.IsInf(*e.Duration, 0) {
			return b, errors.New("json: unsupported value: duration is not finite")
		}
		b = AppendFloat(append(b, `,"duration":`...), *e.Duration)
	}
	if e.ExecutionID != "" {
		b = AppendString(append(b, `,"executionId":`...), e.ExecutionID)
	}
	if len(e.Metadata) > 0 {
		if b, err = AppendRaw(append(b, `,"metadata":`...), e.Metadata); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// ValidJSON reports whether b is exactly one JSON value (RFC 8259), with
// optional whitespace around it: json.Valid's answer (strings are not
// checked for valid UTF-8, as json.Valid does not), without its scanner's
// per-byte indirection. Nesting deeper than 10000 is invalid, as for
// encoding/json.
func ValidJSON(b []byte) bool {
	i, ok := validValue(b, skipWS(b, 0), 0)
	return ok && skipWS(b, i) == len(b)
}

const maxJSONDepth = 10000

// ScanJSONValue checks the JSON value starting at b[i] (no leading
// whitespace), nested depth levels deep (0 at the top), and returns the
// index just past it; ok is false when it is not valid JSON, with
// ValidJSON's rules.
func ScanJSONValue(b []byte, i, depth int) (end int, ok bool) { return validValue(b, i, depth) }

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// validValue checks the value starting at b[i] and returns the index just
// past it.
func validValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{':
		if depth >= maxJSONDepth {
			return i, false
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			var ok bool
			if i, ok = validString(b, i); !ok {
				return i, false
			}
			i = skipWS(b, i)
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			if i, ok = validValue(b, skipWS(b, i+1), depth+1); !ok {
				return i, false
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return i, false
			}
			if b[i] == '}' {
				return i + 1, true
			}
			if b[i] != ',' {
				return i, false
			}
			i = skipWS(b, i+1)
		}
	case c == '[':
		if depth >= maxJSONDepth {
			return i, false
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = validValue(b, i, depth+1); !ok {
				return i, false
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return i, false
			}
			if b[i] == ']' {
				return i + 1, true
			}
			if b[i] != ',' {
				return i, false
			}
			i = skipWS(b, i+1)
		}
	case c == '"':
		return validString(b, i)
	case c == '-' || (c >= '0' && c <= '9'):
		return validNumber(b, i)
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	}
	return i, false
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit), true
	}
	return i, false
}

// validString checks the string starting at b[i] ('"').
func validString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i < 5 {
					return i, false
				}
				for _, h := range b[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return i, false
					}
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

// validNumber checks the number starting at b[i] (RFC 8259 §6).
func validNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > start
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return i, false
		}
	}
	return i, true
}
