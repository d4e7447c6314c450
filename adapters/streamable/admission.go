package streamable

import (
	"net/http"
	"strings"
	"time"
)

// The front-door helpers both hosts' admissions use (docs/SPEC.md §5.2,
// §5.3). Each decides from the request line and headers alone: nothing here
// reads the body, so a refused client cannot make the host wait for one.

// Refuse answers r with status and an empty body, without reading the
// request body, and closes the connection afterwards: a refused client
// keeps no connection slot. When a body may still be on its way (declared
// or chunked), whatever of it arrives within a second after the response is
// drained first, so a client that sent its body anyway gets the answer
// rather than a TCP reset. Set headers (Allow, WWW-Authenticate) before
// calling it.
func Refuse(w http.ResponseWriter, r *http.Request, status int) {
	refuse(w, r, status, DefaultUnreadBodyGrace)
}

func refuse(w http.ResponseWriter, r *http.Request, status int, grace time.Duration) {
	w.Header().Set("Connection", "close")
	closeIfBodyPending(w, r, grace)
	w.WriteHeader(status)
}

func closeIfBodyPending(w http.ResponseWriter, r *http.Request, grace time.Duration) {
	if r.ContentLength == 0 {
		return
	}
	w.Header().Set("Connection", "close")
	// net/http reads the rest of an unread body when the handler returns;
	// bound that read, since the body may never come.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(grace))
}

// ExactTarget reports whether r's request target is exactly path: the
// origin-form path with no query, no fragment and nothing encoded
// differently ("/mcp?x=1" and "/mcp/" are other targets; docs/SPEC.md
// §5.2).
func ExactTarget(r *http.Request, path string) bool { return r.RequestURI == path }

// OriginAllowed reports whether the Origin header values allow a request:
// none (a non-browser client), or exactly one, equal to origin. A page
// elsewhere, a DNS-rebinding page included (docs/SPEC.md K8), sends its own
// origin and is refused.
func OriginAllowed(values []string, origin string) bool {
	switch len(values) {
	case 0:
		return true
	case 1:
		return values[0] == origin
	}
	return false
}

// BearerCredential returns the credential of the one Authorization header
// when it is "Bearer" (any case), one or more spaces or tabs, then a
// non-empty credential (RFC 6750 §2.1). No header, several (RFC 6750 §3.1:
// malformed), another scheme or an empty credential: ok is false.
func BearerCredential(values []string) (credential string, ok bool) {
	if len(values) != 1 {
		return "", false
	}
	const scheme = "bearer"
	v := values[0]
	if len(v) <= len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return "", false
	}
	rest := v[len(scheme):]
	credential = strings.TrimLeft(rest, " \t")
	if len(credential) == len(rest) || credential == "" {
		return "", false
	}
	return credential, true
}
