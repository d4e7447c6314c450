package httpremote

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/agentmcp/agentmcp/adapters/streamable"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"

	"github.com/agentmcp/agentmcp/internal/logs"
)

// Admission is the remote host's front door (docs/SPEC.md §5.3) as http
// middleware: [Admission.Wrap] puts it in front of the MCP handler. It
// decides from the request line and headers alone: nothing here reads the
// body. The order is the package documentation's; its first row, oversized
// headers (431), is the server's (streamable.Server, or the host's own
// http.Server's MaxHeaderBytes). A Go host that mounts it in its own mux
// routes both the endpoint path and the metadata path
// (/.well-known/oauth-protected-resource + the endpoint path) to it.
type Admission struct {
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
}

// NewAdmission returns the admission for a: it fails with an error
// wrapping ErrVerifier, ErrPublicURL, ErrIssuer, ErrScopes or
// ErrTrustedProxy (see [Authorization]). logger (nil: none) receives debug
// records of refusals (status and reason only) and never a token, a claim
// or an address.
func NewAdmission(a Authorization, logger *slog.Logger) (*Admission, error) {
	return newAdmission(a, logger, defaultLimits())
}

func newAdmission(a Authorization, logger *slog.Logger, l limits) (*Admission, error) {
	if a.Verifier == nil {
		return nil, ErrVerifier
	}
	d := a.Verifier.Describe()
	res, why := parsePublicURL(d.Resource)
	if why != "" {
		return nil, fmt.Errorf("%w (%s)", ErrPublicURL, why)
	}
	if !validIssuer(d.Issuer) {
		return nil, ErrIssuer
	}
	if len(d.Scopes) == 0 {
		return nil, fmt.Errorf("%w (got none)", ErrScopes)
	}
	for _, s := range d.Scopes {
		if !domain.ValidScopeToken(s) {
			return nil, fmt.Errorf("%w (got %q)", ErrScopes, s)
		}
	}
	proxies := make(proxySet, len(a.TrustedProxies))
	for _, p := range a.TrustedProxies {
		addr, ok := parseAddr(p)
		if !ok {
			return nil, fmt.Errorf("%w (got %q)", ErrTrustedProxy, p)
		}
		proxies[addr] = true
	}
	logger = logs.OrDiscard(logger)
	audit := a.Audit
	if audit == nil {
		audit = discardAudit{}
	}
	door := &Admission{
		res:        res,
		metadata:   metadataDocument(d.Resource, d.Issuer, d.Scopes),
		challenges: newChallenges(res.metadataURL, d.Scopes),
		verifier:   a.Verifier,
		proxies:    proxies,
		throttle:   newThrottle(l.throttlePerMinute, l.throttleBurst, l.throttleClients),
		cache:      newVerdictCache(l.maxCached, l.cacheTTL),
		verifying:  make(chan struct{}, l.maxVerifying),
		audit:      audit,
		now:        l.now,
		logger:     logger,
	}
	if r, ok := a.Verifier.(ports.KeyRefreshReporter); ok {
		door.refresh = r
	}
	return door, nil
}

// Wrap returns next behind the admission: admitted requests are served by
// next on behalf of the token's principal (issuer, subject, client), so
// input-required rounds are never shared between principals (docs/SPEC.md
// §6) and the session's Caller reports who drives each call.
func (f *Admission) Wrap(next streamable.PrincipalHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.serve(w, r, next) })
}

func (f *Admission) serve(w http.ResponseWriter, r *http.Request, next streamable.PrincipalHandler) {
	switch {
	case !f.res.hosts[strings.ToLower(r.Host)]:
		f.reject(w, r, http.StatusForbidden, "Host")
	case !streamable.OriginAllowed(r.Header["Origin"], f.res.origin):
		f.reject(w, r, http.StatusForbidden, "Origin")
	case r.RequestURI == f.res.metadataPath:
		f.serveMetadata(w, r)
	case !streamable.ExactTarget(r, f.res.endpoint):
		f.reject(w, r, http.StatusNotFound, "request target")
	default:
		f.authorize(w, r, next)
	}
}

// serveMetadata answers the RFC 9728 protected-resource metadata document,
// unauthenticated, to GET; anything else gets 405 Allow: GET.
func (f *Admission) serveMetadata(w http.ResponseWriter, r *http.Request) {
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
func (f *Admission) authorize(w http.ResponseWriter, r *http.Request, next streamable.PrincipalHandler) {
	token, ok := streamable.BearerCredential(r.Header["Authorization"])
	var key [sha256.Size]byte
	if ok {
		key = tokenKey(token)
		if p, hit := f.cache.get(key, f.now()); hit {
			next.ServeMCP(w, r, p)
			return
		}
	}
	// The client's address is only needed to count a refusal against it.
	client := f.proxies.clientAddr(peerAddr(r.RemoteAddr), r.Header["X-Forwarded-For"])
	if !ok {
		f.refuse(w, r, client, ports.RefusalMissingToken)
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
	next.ServeMCP(w, r, v.verdict.Principal)
}

type verification struct {
	verdict ports.Verdict
	keysDue time.Time // the verifier's next key refresh, read before verifying; zero: unknown
}

// verify runs the verifier in one of the capped slots; false when none is
// free. The verification runs on the request's context: a client that
// leaves stops waiting for keys (and is answered nothing).
func (f *Admission) verify(r *http.Request, token string) (verification, bool) {
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

// refuse answers a refusal of the table (package documentation): counts it
// when it counts, audits it once, and answers its status and challenge, or
// 429 with Retry-After when the client is over its budget.
func (f *Admission) refuse(w http.ResponseWriter, r *http.Request, client netip.Addr, refusal ports.RefusalReason) {
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
func (f *Admission) reject(w http.ResponseWriter, r *http.Request, status int, reason string) {
	f.logger.Debug("httpremote: refused", "status", status, "reason", reason)
	streamable.Refuse(w, r, status)
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
