package httploopback

import (
	"crypto/subtle"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/agentmcp/agentmcp/adapters/streamable"

	"github.com/agentmcp/agentmcp/internal/logs"
)

// Admission returns the loopback host's admission (docs/SPEC.md §5.2) as
// http middleware for a host bound to bound, whose clients present token:
// in order, 403 when the request target is not exactly /mcp, when Host is
// not exactly bound ("127.0.0.1:<port>"), or when an Origin is present and
// not exactly "http://" + bound; 401, with no WWW-Authenticate, when
// Authorization is not "Bearer <token>" (compared in constant time). Every
// refusal closes its connection and reads no body; its body is one line of
// text/plain saying what to do (the endpoint to use, or where the token
// comes from) — nothing the client did not know, never the token.
//
// logger (nil: none) receives one warning per refusal: the status, the
// check that refused and a coarse class (refusalClass; never a header's
// value, never the token), with the same hint. At most 10 a minute (burst
// 10) are logged; the next logged line counts those left out
// ("suppressed"), so a client retrying in a loop cannot flood the log.
func Admission(bound netip.AddrPort, token string, logger *slog.Logger) func(http.Handler) http.Handler {
	logger = logs.OrDiscard(logger)
	hostport := bound.String()
	origin := "http://" + hostport
	endpoint := origin + "/mcp"
	want := []byte(token)
	log := &refusalLog{logger: logger, limit: rate.NewLimiter(rate.Every(6*time.Second), 10)}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var status int
			var reason, class, hint string
			switch {
			case !streamable.ExactTarget(r, "/mcp"):
				status, reason, class = http.StatusForbidden, "request-target", targetClass(r.RequestURI)
				hint = "the endpoint is " + endpoint + " exactly (no other path, no query)"
			case r.Host != hostport:
				status, reason, class = http.StatusForbidden, "host", hostClass(r.Host, bound)
				hint = "use " + endpoint + ": the Host header must be " + hostport + " (localhost and other names are refused, against DNS rebinding)"
			case !streamable.OriginAllowed(r.Header["Origin"], origin):
				status, reason, class = http.StatusForbidden, "origin", "foreign-origin"
				hint = "a request from a web page of another origin is refused; clients outside a browser send no Origin"
			case !authorized(r.Header["Authorization"], want):
				status, reason, class = http.StatusUnauthorized, "bearer-token", tokenClass(r.Header["Authorization"])
				hint = `send "Authorization: Bearer <token>" with the token in this host's token file; a token from an earlier start of the host is no longer valid unless the token is persistent`
			default:
				next.ServeHTTP(w, r)
				return
			}
			log.refused(status, reason, class, hint)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			streamable.Refuse(w, r, status)
			_, _ = io.WriteString(w, "agentmcp: refused ("+reason+", "+class+"): "+hint+"\n")
		})
	}
}

// refusalLog logs refusals at a bounded rate.
type refusalLog struct {
	logger *slog.Logger
	limit  *rate.Limiter

	mu         sync.Mutex
	suppressed int
}

func (l *refusalLog) refused(status int, reason, class, hint string) {
	if !l.limit.Allow() {
		l.mu.Lock()
		l.suppressed++
		l.mu.Unlock()
		return
	}
	l.mu.Lock()
	n := l.suppressed
	l.suppressed = 0
	l.mu.Unlock()
	attrs := []any{"status", status, "reason", reason, "class", class, "hint", hint}
	if n > 0 {
		attrs = append(attrs, "suppressed", n)
	}
	l.logger.Warn("httploopback: refused", attrs...)
}

// The coarse classes of a refusal: enough to act on, nothing a client
// chose verbatim (a header value in a log line could forge records or
// carry a secret).

// targetClass: "root" (/), "query" (/mcp?…), "trailing-slash" (/mcp/),
// "other-path".
func targetClass(target string) string {
	switch {
	case target == "/":
		return "root"
	case strings.HasPrefix(target, "/mcp?"):
		return "query"
	case target == "/mcp/":
		return "trailing-slash"
	}
	return "other-path"
}

// hostClass: "localhost" (localhost, with or without a port — what many
// client configurations use), "other-port" (127.0.0.1 with another port:
// a configuration from an earlier start), "missing", "foreign".
func hostClass(host string, bound netip.AddrPort) string {
	name := host
	if i := strings.LastIndexByte(host, ':'); i >= 0 && !strings.HasSuffix(host, "]") {
		name = host[:i]
	}
	switch {
	case host == "":
		return "missing"
	case strings.EqualFold(name, "localhost"):
		return "localhost"
	case name == bound.Addr().String():
		return "other-port"
	}
	return "foreign"
}

// tokenClass: "missing" (no Authorization), "not-bearer" (another scheme,
// several headers, no credential), "wrong-token" (a credential of a
// token's shape that is not this host's: a stale one, say), "malformed".
func tokenClass(values []string) string {
	if len(values) == 0 {
		return "missing"
	}
	tok, ok := streamable.BearerCredential(values)
	switch {
	case !ok:
		return "not-bearer"
	case validToken(tok):
		return "wrong-token"
	}
	return "malformed"
}

// authorized: a bearer credential equal to want. The comparison takes the
// same time for every credential of the right length (the length itself is
// no secret: it is always 64).
func authorized(values []string, want []byte) bool {
	tok, ok := streamable.BearerCredential(values)
	return ok && len(tok) == len(want) && subtle.ConstantTimeCompare([]byte(tok), want) == 1
}
