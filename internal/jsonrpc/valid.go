package jsonrpc

// maxDepth is the deepest nesting Valid accepts, as for encoding/json.
const maxDepth = 10000

// Valid reports whether b is exactly one JSON value (RFC 8259), with
// optional whitespace around it: json.Valid's answer (strings are not
// checked for valid UTF-8, as json.Valid does not), without its scanner's
// per-byte indirection. Nesting deeper than 10000 is invalid, as for
// encoding/json.
func Valid(b []byte) bool {
	i, ok := scanValue(b, SkipSpace(b, 0), 0)
	return ok && SkipSpace(b, i) == len(b)
}

// ArrayLen reports whether b is exactly one JSON value that is an array,
// by Valid's rules, and if so how many elements it has: one pass, no
// allocation — how a framing sizes a 2025-03-26 batch before it runs.
func ArrayLen(b []byte) (n int, ok bool) {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return 0, false
	}
	if i = SkipSpace(b, i+1); i < len(b) && b[i] == ']' {
		return 0, SkipSpace(b, i+1) == len(b)
	}
	for {
		if i, ok = scanValue(b, i, 1); !ok {
			return 0, false
		}
		n++
		if i = SkipSpace(b, i); i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
		case ']':
			if SkipSpace(b, i+1) != len(b) {
				return 0, false
			}
			return n, true
		default:
			return 0, false
		}
	}
}

// SkipSpace returns the index of the first byte of b at or after i that is
// not JSON whitespace (RFC 8259 §2: space, tab, CR, LF), or len(b).
func SkipSpace(b []byte, i int) int {
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

// FirstByte is b's first byte after JSON whitespace, 0 when there is none:
// how a framing tells an object ('{') from a batch ('[').
func FirstByte(b []byte) byte {
	if i := SkipSpace(b, 0); i < len(b) {
		return b[i]
	}
	return 0
}

// scanValue checks the value starting at b[i] (no leading whitespace),
// nested depth levels deep (0 at the top), and returns the index just past
// it; ok is false when it is not valid JSON.
func scanValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{':
		if depth >= maxDepth {
			return i, false
		}
		i = SkipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			var ok bool
			if i, ok = scanString(b, i); !ok {
				return i, false
			}
			i = SkipSpace(b, i)
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			if i, ok = scanValue(b, SkipSpace(b, i+1), depth+1); !ok {
				return i, false
			}
			i = SkipSpace(b, i)
			if i >= len(b) {
				return i, false
			}
			if b[i] == '}' {
				return i + 1, true
			}
			if b[i] != ',' {
				return i, false
			}
			i = SkipSpace(b, i+1)
		}
	case c == '[':
		if depth >= maxDepth {
			return i, false
		}
		i = SkipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, true
		}
		for {
			var ok bool
			if i, ok = scanValue(b, i, depth+1); !ok {
				return i, false
			}
			i = SkipSpace(b, i)
			if i >= len(b) {
				return i, false
			}
			if b[i] == ']' {
				return i + 1, true
			}
			if b[i] != ',' {
				return i, false
			}
			i = SkipSpace(b, i+1)
		}
	case c == '"':
		return scanString(b, i)
	case c == '-' || (c >= '0' && c <= '9'):
		return scanNumber(b, i)
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

// scanString checks the string starting at b[i] ('"').
func scanString(b []byte, i int) (int, bool) {
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

// scanNumber checks the number starting at b[i] (RFC 8259 §6).
func scanNumber(b []byte, i int) (int, bool) {
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
