package httpremote

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/agentmcp/agentmcp/adapters/streamable"
	"github.com/agentmcp/agentmcp/ports"
)

// frontDoor is the host's admission (docs/SPEC.md §5.3), in front of the framing.
// It decides from the request line and headers alone: nothing here reads
// the body. The order is the package documentation's; its first row,
// oversized headers (431), is the shared streamable.Server's.
type frontDoor struct {
	res        resource
	metadata   []byte
	challenges challenges

	verifier  ports.AccessTokenVerifier
	refresh   ports.KeyRefreshReporter // nil when the verifier does not report refreshes
	proxies   proxySet
	throttle  *throttle
	cache     *verdictCache
	verifying chan struct{} // semaphore: verifications running
	audit     ports.AuditSink
	now       func() time.Time
	logger    *slog.Logger

	next *streamable.Handler // the framing, for admitted requests; set by Start, before serving
}

func (f *frontDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case !f.res.hosts[strings.ToLower(r.Host)]:
		f.reject(w, r, http.StatusForbidden, "Host")
	case !f.originAllowed(r.Header.Values("Origin")):
		f.reject(w, r, http.StatusForbidden, "Origin")
	case r.RequestURI == f.res.metadataPath:
		f.serveMetadata(w, r)
	case r.RequestURI != f.res.endpoint:
		f.reject(w, r, http.StatusNotFound, "request target")
	default:
		f.authorize(w, r)
	}
}

// originAllowed: no Origin (a non-browser client), or exactly one, equal to
// the public origin. A page elsewhere, or a DNS-rebinding one, is refused.
func (f *frontDoor) originAllowed(values []string) bool {
	switch len(values) {
	case 0:
		return true
	case 1:
		return values[0] == f.res.origin
	}
	return false
}

// serveMetadata answers the RFC 9728 protected-resource metadata document,
// unauthenticated, to GET; anything else gets 405 Allow: GET.
func (f *frontDoor) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		f.reject(w, r, http.StatusMethodNotAllowed, "metadata method")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(f.metadata)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(f.metadata)
}

// authorize admits a request to the endpoint or refuses it: bearer token,
// cached verdict, capped verification, then the verdict (docs/SPEC.md §5.3 step 4).
func (f *frontDoor) authorize(w http.ResponseWriter, r *http.Request) {
	client := f.proxies.clientAddr(peerAddr(r.RemoteAddr), r.Header.Values("X-Forwarded-For"))
	token, ok := bearer(r.Header.Values("Authorization"))
	if !ok {
		f.refuse(w, r, client, ports.RefusalMissingToken)
		return
	}
	key := tokenKey(token)
	if p, ok := f.cache.get(key, f.now()); ok {
		f.admit(w, r, p)
		return
	}
	v, ok := f.verify(r, token)
	if !ok {
		// Load shedding, not a verdict: nothing is counted or audited.
		w.Header().Set("Retry-After", "1")
		f.reject(w, r, http.StatusServiceUnavailable, "verifications at their cap")
		return
	}
	if !v.verdict.Admitted() {
		f.refuse(w, r, client, v.verdict.Refusal)
		return
	}
	f.cache.put(key, v.verdict.Principal, v.verdict.Expiry, v.keysDue, f.now())
	f.admit(w, r, v.verdict.Principal)
}

type verification struct {
	verdict ports.Verdict
	keysDue time.Time // the verifier's next key refresh, read before verifying; zero: unknown
}

// verify runs the verifier in one of the capped slots; false when none is
// free. The verification runs on the request's context: a client that
// leaves stops waiting for keys (and is answered nothing).
func (f *frontDoor) verify(r *http.Request, token string) (verification, bool) {
	select {
	case f.verifying <- struct{}{}:
	default:
		return verification{}, false
	}
	defer func() { <-f.verifying }()
	var v verification
	if f.refresh != nil {
		v.keysDue = f.refresh.NextKeyRefresh()
	}
	v.verdict = f.verifier.Verify(r.Context(), token)
	return v, true
}

// admit hands the request to the framing, bound to its principal.
func (f *frontDoor) admit(w http.ResponseWriter, r *http.Request, p ports.Principal) {
	f.next.ServeHTTP(w, r.WithContext(withPrincipal(r.Context(), p)))
}

// refuse answers a refusal of the table (package documentation): counts it
// when it counts, audits it once, and answers its status and challenge, or
// 429 with Retry-After when the client is over its budget.
func (f *frontDoor) refuse(w http.ResponseWriter, r *http.Request, client netip.Addr, refusal ports.RefusalReason) {
	status, challenge, counted := f.challenges.answer(refusal)
	var throttled bool
	var retryAfter int
	if counted {
		throttled, retryAfter = f.throttle.spend(keyOf(client), f.now())
	}
	f.audit.Audit(ports.AuditRecord{Refusal: refusal, Remote: classify(client), Throttled: throttled})
	if throttled {
		status, challenge = http.StatusTooManyRequests, ""
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	if challenge != "" {
		w.Header().Set("WWW-Authenticate", challenge)
	}
	f.reject(w, r, status, string(refusal))
}

// reject answers status with an empty body and closes the connection, so a
// refused client keeps no connection slot; the body is never read.
func (f *frontDoor) reject(w http.ResponseWriter, r *http.Request, status int, reason string) {
	f.logger.Debug("httpremote: refused", "status", status, "reason", reason)
	w.Header().Set("Connection", "close")
	f.next.Refuse(w, r, status)
}

// challenges holds the WWW-Authenticate values (RFC 6750 §3, RFC 9728 §5.1),
// built once: no realm, no error_description.
type challenges struct {
	missing, invalid, scope string
}

func newChallenges(metadataURL string, scopes []string) challenges {
	rm := `resource_metadata="` + metadataURL + `"`
	return challenges{
		missing: "Bearer " + rm,
		invalid: `Bearer error="invalid_token", ` + rm,
		scope:   `Bearer error="insufficient_scope", scope="` + strings.Join(scopes, " ") + `", ` + rm,
	}
}

// answer maps a refusal to its status, challenge ("" for none) and whether
// it counts against the client (docs/SPEC.md §5.3's table). A refusal word outside
// the vocabulary is a token not proven genuine.
func (c challenges) answer(refusal ports.RefusalReason) (status int, challenge string, counted bool) {
	switch refusal {
	case ports.RefusalMissingToken:
		return http.StatusUnauthorized, c.missing, true
	case ports.RefusalMissingScope:
		return http.StatusForbidden, c.scope, false
	case ports.RefusalPrincipalNotAllowed:
		return http.StatusForbidden, "", false
	case ports.RefusalExpired, ports.RefusalNotYetValid, ports.RefusalWrongAudience:
		return http.StatusUnauthorized, c.invalid, false
	case ports.RefusalKeysUnavailable:
		return http.StatusServiceUnavailable, "", false
	}
	return http.StatusUnauthorized, c.invalid, true
}

// bearer returns the credential of the one Authorization header, when it
// is "Bearer" (any case), one or more spaces or tabs, then a non-empty
// credential (RFC 6750 §2.1). No header, several, another scheme or an
// empty credential: no bearer token (missing-token; RFC 6750 §3.1 says a
// request with several credentials is malformed, and it counts all the
// same).
func bearer(values []string) (string, bool) {
	if len(values) != 1 {
		return "", false
	}
	const scheme = "bearer"
	v := values[0]
	if len(v) <= len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return "", false
	}
	rest := v[len(scheme):]
	token := strings.TrimLeft(rest, " \t")
	if len(token) == len(rest) || token == "" {
		return "", false
	}
	return token, true
}

// metadataDocument is the RFC 9728 §2 document, keys in docs/SPEC.md §5.3's order.
// HTML characters are not escaped: the values are written as configured.
func metadataDocument(publicURL, issuer string, scopes []string) []byte {
	doc := struct {
		Resource               string   `json:"resource"`
		AuthorizationServers   []string `json:"authorization_servers"`
		ScopesSupported        []string `json:"scopes_supported"`
		BearerMethodsSupported []string `json:"bearer_methods_supported"`
	}{publicURL, []string{issuer}, scopes, []string{"header"}}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(doc) // strings and slices of strings always encode
	return bytes.TrimRight(b.Bytes(), "\n")
}
