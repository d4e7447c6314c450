package httploopback

import (
	"crypto/subtle"
	"log/slog"
	"net/http"
	"net/netip"

	"github.com/agentmcp/agentmcp/adapters/streamable"

	"github.com/agentmcp/agentmcp/internal/logs"
)

// Admission returns the loopback host's admission (docs/SPEC.md §5.2) as
// http middleware for a host bound to bound, whose clients present token:
// in order, 403 when the request target is not exactly /mcp, when Host is
// not exactly bound ("127.0.0.1:<port>"), or when an Origin is present and
// not exactly "http://" + bound; 401, with no WWW-Authenticate, when
// Authorization is not "Bearer <token>" (compared in constant time). Every
// refusal is empty, closes its connection and reads no body. logger (nil:
// none) receives one debug record per refusal: status and reason only.
func Admission(bound netip.AddrPort, token string, logger *slog.Logger) func(http.Handler) http.Handler {
	logger = logs.OrDiscard(logger)
	hostport := bound.String()
	origin := "http://" + hostport
	want := []byte(token)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			status, reason := 0, ""
			switch {
			case !streamable.ExactTarget(r, "/mcp"):
				status, reason = http.StatusForbidden, "request target"
			case r.Host != hostport:
				status, reason = http.StatusForbidden, "Host"
			case !streamable.OriginAllowed(r.Header["Origin"], origin):
				status, reason = http.StatusForbidden, "Origin"
			case !authorized(r.Header["Authorization"], want):
				status, reason = http.StatusUnauthorized, "bearer token"
			default:
				next.ServeHTTP(w, r)
				return
			}
			logger.Debug("httploopback: refused", "status", status, "reason", reason)
			streamable.Refuse(w, r, status)
		})
	}
}

// authorized: a bearer credential equal to want. The comparison takes the
// same time for every credential of the right length (the length itself is
// no secret: it is always 64).
func authorized(values []string, want []byte) bool {
	tok, ok := streamable.BearerCredential(values)
	return ok && len(tok) == len(want) && subtle.ConstantTimeCompare([]byte(tok), want) == 1
}
