package httploopback

import (
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"

	"github.com/agentmcp/agentmcp/adapters/streamable"
)

// frontDoor is the host's admission (docs/SPEC.md §5.2), in front of the framing. It
// decides from the request line and headers alone: nothing here reads the
// body, so a refused client cannot make the host wait for one. Oversized
// headers (431) are refused before it, by the shared streamable.Server.
type frontDoor struct {
	target string // exact request target: "/mcp"
	host   string // exact Host: "127.0.0.1:<port>"
	origin string // exact Origin, when one is sent: "http://127.0.0.1:<port>"
	token  []byte
	next   *streamable.Handler
	logger *slog.Logger
}

func (f *frontDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.RequestURI != f.target:
		f.refuse(w, r, http.StatusForbidden, "request target")
	case r.Host != f.host:
		f.refuse(w, r, http.StatusForbidden, "Host")
	case !f.originAllowed(r.Header.Values("Origin")):
		f.refuse(w, r, http.StatusForbidden, "Origin")
	case !f.authorized(r.Header.Values("Authorization")):
		f.refuse(w, r, http.StatusUnauthorized, "bearer token")
	default:
		f.next.ServeHTTP(w, r)
	}
}

// refuse answers with an empty body and closes the connection: a client
// that fails admission keeps no connection slot.
func (f *frontDoor) refuse(w http.ResponseWriter, r *http.Request, status int, reason string) {
	f.logger.Debug("httploopback: refused", "status", status, "reason", reason)
	w.Header().Set("Connection", "close")
	f.next.Refuse(w, r, status)
}

// originAllowed: no Origin (a non-browser client), or exactly one that is
// this host's own origin. Browsers send Origin on every cross-origin POST,
// so a page elsewhere (docs/SPEC.md K8: http://evil.example) is refused.
func (f *frontDoor) originAllowed(values []string) bool {
	switch len(values) {
	case 0:
		return true
	case 1:
		return values[0] == f.origin
	}
	return false
}

// authorized: exactly one Authorization header, "Bearer" in any case, one or
// more spaces or tabs, then the token. The comparison takes the same time
// for every token of the right length (the length itself is no secret: it is
// always 64).
func (f *frontDoor) authorized(values []string) bool {
	if len(values) != 1 {
		return false
	}
	const scheme = "bearer"
	v := values[0]
	if len(v) <= len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return false
	}
	rest := v[len(scheme):]
	tok := strings.TrimLeft(rest, " \t")
	if len(tok) == len(rest) || len(tok) != len(f.token) {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(tok), f.token) == 1
}
