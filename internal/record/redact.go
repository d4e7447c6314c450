package record

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
)

// What a transcript never holds (docs/SPEC.md §12): every spelling of a
// secret value (as it is, JSON-escaped once or twice — a result's text
// is JSON inside a JSON string — or with any escapes a JSON string may
// use, \u0041 and \/ included), a bearer token, HTTP Basic credentials and
// the password of a URL's user information.
var (
	bearer = regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+`)
	basic  = regexp.MustCompile(`(?i)(basic\s+)([A-Za-z0-9+/]{4,}={0,2})`)
	// scheme://user:password@ — the password up to the last "@" of the
	// authority (a password may hold "@" percent-encoded only).
	userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^/\s:@"'\\]*:)([^/\s@"'\\]+)@`)
)

const redacted = "REDACTED"

// redactor replaces secrets in a transcript's lines.
type redactor struct {
	spellings []string // every secret in every spelling, longest first
}

func newRedactor(secrets []string) *redactor {
	r := &redactor{}
	seen := map[string]bool{}
	for _, s := range secrets {
		if s == "" {
			continue
		}
		once := jsonEscaped(s)
		for _, v := range []string{s, once, jsonEscaped(once)} {
			if !seen[v] {
				seen[v] = true
				r.spellings = append(r.spellings, v)
			}
		}
	}
	// Longest first: a secret that holds another is replaced whole.
	for i := 1; i < len(r.spellings); i++ {
		for j := i; j > 0 && len(r.spellings[j]) > len(r.spellings[j-1]); j-- {
			r.spellings[j], r.spellings[j-1] = r.spellings[j-1], r.spellings[j]
		}
	}
	return r
}

// jsonEscaped is s as it appears inside a JSON string (without the quotes)
// when encoding/json writes it, HTML escaping off.
func jsonEscaped(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}

// text redacts one piece of text.
func (r *redactor) text(s string) string {
	for _, v := range r.spellings {
		s = strings.ReplaceAll(s, v, redacted)
	}
	s = bearer.ReplaceAllString(s, "${1}"+redacted)
	s = basic.ReplaceAllStringFunc(s, func(m string) string {
		sub := basic.FindStringSubmatch(m)
		if isCredentials(sub[2]) {
			return sub[1] + redacted
		}
		return m
	})
	return userinfo.ReplaceAllString(s, "${1}"+redacted+"@")
}

// isCredentials reports whether b64 is base64 of "user:password".
func isCredentials(b64 string) bool {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding} {
		if d, err := enc.DecodeString(b64); err == nil {
			return bytes.IndexByte(d, ':') > 0
		}
	}
	return false
}

// line redacts one line: its text as it is, then each JSON string in it
// decoded, so that a secret spelled with escapes is found too; a string
// that changed is written back encoded (encoding/json's spelling), the
// rest of the line is left byte for byte.
func (r *redactor) line(b []byte) []byte {
	b = []byte(r.text(string(b)))
	var out []byte
	last := 0
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		end := stringEnd(b, i)
		if end < 0 {
			break
		}
		var s string
		if json.Unmarshal(b[i:end], &s) == nil {
			if red := r.text(s); red != s {
				out = append(append(out, b[last:i]...), '"')
				out = append(out, jsonEscaped(red)...)
				out = append(out, '"')
				last = end
			}
		}
		i = end - 1
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// stringEnd returns the index just past the JSON string that starts at
// b[i] ('"'), or -1 when it does not end.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}
