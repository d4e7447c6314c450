package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/json"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// Token limits (docs/SPEC.md §7).
const (
	// MaxTokenBytes is the longest token Verify parses; a longer one is
	// refused as oversize without being parsed.
	MaxTokenBytes = 8192

	// ClockSkew is the tolerance applied to exp and nbf.
	ClockSkew = 60 * time.Second
)

// ErrInvalidConfig is wrapped by every error [NewVerifier] returns.
var ErrInvalidConfig = errors.New("oauth: invalid verifier configuration")

// Config configures a [Verifier]. Issuer, Resource, RequiredScopes and at
// least one of AllowedSubjects and AllowedClients are required.
type Config struct {
	// Issuer is the authorization server's issuer identifier (RFC 8414 §2):
	// an absolute https URL with a host and no user info, query or
	// fragment. A token's iss must equal it byte for byte, and the
	// server's metadata is discovered from it.
	Issuer string

	// Resource is this protected resource's URL, the audience a token's
	// aud must name (RFC 8707, RFC 9068 §3). It must be an absolute URL;
	// the remote host checks the rest of its form.
	Resource string

	// Algorithms is the set of signature algorithms accepted, a subset of
	// "RS256", "ES256" and "EdDSA" (RFC 7518 §3.3–§3.4, RFC 8037). Empty
	// means all three. HMAC and "none" can never be configured.
	Algorithms []string

	// RequiredScopes must each appear in a token's space-separated scope
	// claim (RFC 9068 §2.2.3). At least one is required; each must be an
	// RFC 6749 §3.3 scope token (printable ASCII without space, '"' or '\').
	RequiredScopes []string

	// AllowedSubjects are the sub values admitted. A token is admitted when
	// its sub is listed here or its client_id is listed in AllowedClients.
	AllowedSubjects []string

	// AllowedClients are the client_id values admitted whatever the
	// token's sub. It is meant for confidential or machine clients (for
	// example a client-credentials grant): listing a public client's id
	// admits every user who signs in through that client.
	AllowedClients []string

	// HTTPClient fetches the issuer's metadata and keys; nil means a client
	// built on http.DefaultTransport's settings. Set it to trust a custom
	// CA, for instance. The verifier never uses it as given: it derives
	// a client that never follows redirects and bounds each request to
	// 10 s. If the client's Transport is an *http.Transport (or nil), the
	// derived client uses a clone of it whose proxy setting and dial hooks
	// are replaced, so that connections are direct and only the issuer's
	// own host may resolve to a private, loopback or other non-public
	// address. Any other RoundTripper is used as is and is then
	// responsible for that rule.
	HTTPClient *http.Client

	// Clock supplies wall-clock time for exp and nbf and monotonic time
	// for key-cache ages; nil means the system clock.
	Clock Clock
}

// Verifier is the OAuth 2.0 access-token verifier of docs/SPEC.md §7: it admits
// RFC 9068 JWT access tokens issued by one authorization server for one
// protected resource. It implements [ports.AccessTokenVerifier] and is safe
// for concurrent use.
type Verifier struct {
	issuer   string
	resource string
	algs     []jose.SignatureAlgorithm
	scopes   []string
	subjects map[string]bool
	clients  map[string]bool
	clock    Clock
	keys     *keyCache
}

var _ ports.AccessTokenVerifier = (*Verifier)(nil)

// NewVerifier returns a verifier for cfg. It makes no network call: keys are
// fetched on the first verification. The error wraps [ErrInvalidConfig] when
// Issuer is not an absolute https URL with a host and no user info, query or
// fragment; Resource is not an absolute URL; Algorithms names an algorithm
// other than RS256, ES256 and EdDSA; RequiredScopes is empty or holds an
// invalid scope token; AllowedSubjects and AllowedClients are both empty
// (issuer, audience and scope alone would admit anyone that issuer serves);
// or either of them holds an empty string.
func NewVerifier(cfg Config) (*Verifier, error) {
	iss, err := url.Parse(cfg.Issuer)
	if err != nil || iss.Scheme != "https" || iss.Host == "" || iss.Opaque != "" ||
		iss.User != nil || iss.RawQuery != "" || iss.ForceQuery || iss.Fragment != "" ||
		strings.ContainsAny(cfg.Issuer, "?#") {
		return nil, fmt.Errorf("%w: issuer must be an absolute https URL with a host and no user info, query or fragment", ErrInvalidConfig)
	}
	if res, err := url.Parse(cfg.Resource); err != nil || res.Scheme == "" || res.Host == "" {
		return nil, fmt.Errorf("%w: resource must be an absolute URL", ErrInvalidConfig)
	}

	algs := cfg.Algorithms
	if len(algs) == 0 {
		algs = []string{string(jose.RS256), string(jose.ES256), string(jose.EdDSA)}
	}
	v := &Verifier{
		issuer:   cfg.Issuer,
		resource: cfg.Resource,
		subjects: make(map[string]bool, len(cfg.AllowedSubjects)),
		clients:  make(map[string]bool, len(cfg.AllowedClients)),
		clock:    cfg.Clock,
	}
	for _, a := range algs {
		alg := jose.SignatureAlgorithm(a)
		if algBit(alg) == 0 {
			return nil, fmt.Errorf("%w: algorithm %q is not one of RS256, ES256, EdDSA", ErrInvalidConfig, a)
		}
		if !slices.Contains(v.algs, alg) {
			v.algs = append(v.algs, alg)
		}
	}

	if len(cfg.RequiredScopes) == 0 {
		return nil, fmt.Errorf("%w: at least one required scope is needed", ErrInvalidConfig)
	}
	for _, s := range cfg.RequiredScopes {
		if !domain.ValidScopeToken(s) {
			return nil, fmt.Errorf("%w: required scope %q is not an RFC 6749 scope token", ErrInvalidConfig, s)
		}
	}
	v.scopes = slices.Clone(cfg.RequiredScopes)

	if len(cfg.AllowedSubjects) == 0 && len(cfg.AllowedClients) == 0 {
		return nil, fmt.Errorf("%w: name at least one allowed subject or client: issuer, audience and scope alone admit anyone the issuer serves", ErrInvalidConfig)
	}
	for _, s := range cfg.AllowedSubjects {
		if s == "" {
			return nil, fmt.Errorf("%w: an allowed subject is empty", ErrInvalidConfig)
		}
		v.subjects[s] = true
	}
	for _, c := range cfg.AllowedClients {
		if c == "" {
			return nil, fmt.Errorf("%w: an allowed client is empty", ErrInvalidConfig)
		}
		v.clients[c] = true
	}

	if v.clock == nil {
		v.clock = newSystemClock()
	}
	v.keys = &keyCache{
		client:       newFetchClient(cfg.HTTPClient, iss.Hostname()),
		issuer:       cfg.Issuer,
		metadataURLs: metadataURLs(iss),
		clock:        v.clock,
	}
	return v, nil
}

// Describe returns the issuer, resource and required scopes, as configured.
func (v *Verifier) Describe() ports.VerifierDescription {
	return ports.VerifierDescription{
		Issuer:   v.issuer,
		Resource: v.resource,
		Scopes:   slices.Clone(v.scopes),
	}
}

// Verify decides whether token, the credential of an Authorization: Bearer
// header, admits a request. It returns the admitted principal — the
// configured issuer, the token's sub and client_id — with the token's exp
// (Unix seconds) as Expiry, or a verdict carrying exactly one refusal word
// and nothing else. The checks run in the order the package documentation
// lists. Verify may wait for the issuer's keys (a refresh is bounded by
// three fetches of at most 10 s each); if ctx ends first the verdict is
// keys-unavailable. It never panics.
func (v *Verifier) Verify(ctx context.Context, token string) (verdict ports.Verdict) {
	defer func() {
		if recover() != nil {
			verdict = refuse(ports.RefusalMalformed)
		}
	}()
	return v.verify(ctx, token)
}

func refuse(r ports.RefusalReason) ports.Verdict { return ports.Verdict{Refusal: r} }

// accessClaims are the claims Verify reads, kept raw so that each is judged
// in its turn: a malformed exp must not hide a wrong iss.
type accessClaims struct {
	Iss      json.RawMessage `json:"iss"`
	Aud      json.RawMessage `json:"aud"`
	Exp      json.RawMessage `json:"exp"`
	Nbf      json.RawMessage `json:"nbf"`
	Sub      json.RawMessage `json:"sub"`
	ClientID json.RawMessage `json:"client_id"`
	Scope    json.RawMessage `json:"scope"`
}

func (v *Verifier) verify(ctx context.Context, token string) ports.Verdict {
	if token == "" {
		return refuse(ports.RefusalMalformed)
	}
	if len(token) > MaxTokenBytes {
		return refuse(ports.RefusalOversize)
	}

	// go-jose refuses an algorithm outside the list while parsing, before
	// the header can be read; since typ is judged before alg, a token with
	// an unconfigured alg is parsed a second time with that alg alone, to
	// read its typ.
	tok, err := jwt.ParseSigned(token, v.algs)
	if err != nil {
		var unexpected *jose.ErrUnexpectedSignatureAlgorithm
		if !errors.As(err, &unexpected) {
			return refuse(ports.RefusalMalformed)
		}
		tok, err = jwt.ParseSigned(token, []jose.SignatureAlgorithm{unexpected.Got})
		if err != nil || len(tok.Headers) != 1 {
			return refuse(ports.RefusalMalformed)
		}
		if !isAccessTokenType(tok.Headers[0]) {
			return refuse(ports.RefusalWrongType)
		}
		return refuse(ports.RefusalUnsupportedAlg)
	}
	if len(tok.Headers) != 1 {
		return refuse(ports.RefusalMalformed)
	}
	h := tok.Headers[0]
	if !isAccessTokenType(h) {
		return refuse(ports.RefusalWrongType)
	}
	alg := jose.SignatureAlgorithm(h.Algorithm)
	if !slices.Contains(v.algs, alg) { // already enforced by ParseSigned
		return refuse(ports.RefusalUnsupportedAlg)
	}
	// RFC 7515 §4.1.11: no extension is understood here, so a crit header
	// cannot be honoured. An unencoded payload (RFC 7797 b64) is no JWT.
	if _, ok := h.ExtraHeaders["crit"]; ok {
		return refuse(ports.RefusalMalformed)
	}
	if _, ok := h.ExtraHeaders["b64"]; ok {
		return refuse(ports.RefusalMalformed)
	}
	// jku, x5u, jwk and x5c are never consulted: keys come only from the
	// issuer's published key set (RFC 8725 §3.10).

	key, r := v.selectKey(ctx, h.KeyID, alg)
	if r != "" {
		return refuse(r)
	}

	var c accessClaims
	if err := tok.Claims(key, &c); err != nil {
		if errors.Is(err, jose.ErrCryptoFailure) {
			return refuse(ports.RefusalBadSignature)
		}
		return refuse(ports.RefusalMalformed)
	}

	if iss, ok := stringClaim(c.Iss); !ok || iss != v.issuer {
		return refuse(ports.RefusalWrongIssuer)
	}
	var aud jwt.Audience
	if c.Aud == nil || json.Unmarshal(c.Aud, &aud) != nil || !aud.Contains(v.resource) {
		return refuse(ports.RefusalWrongAudience)
	}
	exp, ok := numericDate(c.Exp)
	if !ok {
		return refuse(ports.RefusalMalformed)
	}
	nbf, hasNbf := numericDate(c.Nbf)
	if c.Nbf != nil && !hasNbf {
		return refuse(ports.RefusalMalformed)
	}
	now := v.clock.Now()
	if now.Add(-ClockSkew).After(exp.Time()) {
		return refuse(ports.RefusalExpired)
	}
	if hasNbf && now.Add(ClockSkew).Before(nbf.Time()) {
		return refuse(ports.RefusalNotYetValid)
	}
	sub, ok := stringClaim(c.Sub)
	if !ok || sub == "" {
		return refuse(ports.RefusalMalformed)
	}
	client, ok := stringClaim(c.ClientID)
	if !ok || client == "" {
		return refuse(ports.RefusalMalformed)
	}
	scope, _ := stringClaim(c.Scope) // a non-string scope grants nothing
	for _, want := range v.scopes {
		if !hasScope(scope, want) {
			return refuse(ports.RefusalMissingScope)
		}
	}
	if !v.subjects[sub] && !v.clients[client] {
		return refuse(ports.RefusalPrincipalNotAllowed)
	}
	return ports.Verdict{
		Principal: ports.Principal{Issuer: v.issuer, Subject: sub, Client: client},
		Expiry:    int64(*exp),
	}
}

// isAccessTokenType reports whether the header's typ names an RFC 9068 JWT
// access token: "at+jwt" once lower-cased and stripped of "application/"
// (RFC 9068 §2.1, §4; RFC 8725 §3.11).
func isAccessTokenType(h jose.Header) bool {
	typ, ok := h.ExtraHeaders[jose.HeaderType].(string)
	if !ok {
		return false
	}
	typ = strings.ToLower(typ)
	return strings.TrimPrefix(typ, "application/") == "at+jwt"
}

// selectKey finds the key to verify a token signed with alg under kid. With
// no kid, the set must hold exactly one key. With a kid the set lacks, the
// keys are refetched once (within the refetch limit). Among several keys
// with the kid, the first that fits alg is used.
func (v *Verifier) selectKey(ctx context.Context, kid string, alg jose.SignatureAlgorithm) (any, ports.RefusalReason) {
	set := v.keys.current(ctx, false)
	if set == nil {
		return nil, ports.RefusalKeysUnavailable
	}
	bit := algBit(alg)
	if kid == "" {
		if len(set.keys) != 1 {
			return nil, ports.RefusalAmbiguousKey
		}
		if k := set.keys[0]; k.fits&bit != 0 {
			return k.key, ""
		}
		return nil, ports.RefusalKeyMismatch
	}
	if !set.hasKid(kid) {
		if set = v.keys.current(ctx, true); set == nil {
			return nil, ports.RefusalKeysUnavailable
		}
		if !set.hasKid(kid) {
			return nil, ports.RefusalUnknownKey
		}
	}
	for _, k := range set.keys {
		if k.kid == kid && k.fits&bit != 0 {
			return k.key, ""
		}
	}
	return nil, ports.RefusalKeyMismatch
}

func (s *keySet) hasKid(kid string) bool {
	for _, k := range s.keys {
		if k.kid == kid {
			return true
		}
	}
	return false
}

// stringClaim decodes a JSON string claim; ok is false when the claim is
// absent or not a string.
func stringClaim(raw json.RawMessage) (s string, ok bool) {
	if raw == nil || string(raw) == "null" {
		return "", false
	}
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// numericDate decodes a NumericDate claim (RFC 7519 §2); ok is false when
// the claim is absent, null or not a JSON number.
func numericDate(raw json.RawMessage) (*jwt.NumericDate, bool) {
	if raw == nil || string(raw) == "null" {
		return nil, false
	}
	n := new(jwt.NumericDate)
	if json.Unmarshal(raw, n) != nil {
		return nil, false
	}
	return n, true
}

// hasScope reports whether the space-separated scope list granted (RFC 6749
// §3.3, RFC 9068 §2.2.3) contains want.
func hasScope(granted, want string) bool {
	for s := range strings.SplitSeq(granted, " ") {
		if s == want {
			return true
		}
	}
	return false
}

// NextKeyRefresh returns when the keys the verifier holds are due for
// refresh (their age reaches 10 minutes), or the zero time when it holds
// none. It implements [ports.KeyRefreshReporter], so a host caching verdicts
// stops reusing them when this verifier would refetch its keys. A refetch
// for an unknown kid may come earlier; it only adds keys the issuer
// publishes, and a key withdrawn then stops admitting at the latest at this
// instant.
func (v *Verifier) NextKeyRefresh() time.Time {
	return v.keys.nextRefresh()
}

var _ ports.KeyRefreshReporter = (*Verifier)(nil)

// KeysReady reports whether the verifier holds usable keys of its issuer,
// fetching them first when it holds none (at most one attempt per 30 s,
// shared with verifications) and waiting for that fetch until ctx ends. It
// implements [ports.KeyReadiness].
func (v *Verifier) KeysReady(ctx context.Context) bool {
	return v.keys.current(ctx, false) != nil
}

var _ ports.KeyReadiness = (*Verifier)(nil)
