package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"
)

// The encoders write JSON text straight into a caller's buffer, byte for
// byte as encoding/json writes the same Go value with HTML escaping off
// (json.Encoder.SetEscapeHTML(false)); the fuzz suite holds each to it.

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

// AppendFloat appends a finite f as encoding/json writes a float64: the
// shortest decimal that reads back as f, in exponent form below 1e-6 and
// from 1e21 on (ES6 number-to-string). A NaN or an infinity, which JSON
// cannot hold, is the caller's to refuse.
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

// ErrInvalid is AppendRaw's error for a value that is not JSON.
var ErrInvalid = errors.New("json: invalid JSON value")

// AppendRaw appends the JSON value raw compacted (insignificant whitespace
// removed), as encoding/json writes a json.RawMessage; it fails with
// ErrInvalid, appending nothing, when raw is not one valid JSON value.
func AppendRaw(b []byte, raw []byte) ([]byte, error) {
	if !Valid(raw) {
		return b, ErrInvalid
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
