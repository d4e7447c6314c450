package engine

import (
	"encoding/base64"
	"strings"
)

// headerValue normalises a Streamable HTTP header value before it is compared
// with the body (MCP 2026-07-28 "Standard headers"): surrounding whitespace is
// trimmed and a value of the form =?base64?<standard base64 of UTF-8>?= is
// decoded. A sentinel that does not decode is kept as is, so it can only
// mismatch.
func headerValue(v string) string {
	v = strings.TrimSpace(v)
	const prefix, suffix = "=?base64?", "?="
	if len(v) >= len(prefix)+len(suffix) && strings.HasPrefix(v, prefix) && strings.HasSuffix(v, suffix) {
		if b, err := base64.StdEncoding.DecodeString(v[len(prefix) : len(v)-len(suffix)]); err == nil {
			return string(b)
		}
	}
	return v
}
