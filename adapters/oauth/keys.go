package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/json"
)

// Key-set limits and cache ages (docs/SPEC.md §7).
const (
	maxKeys       = 32               // entries in a key set's keys array
	minRSABits    = 2048             // RFC 7518 §3.3
	refreshAge    = 10 * time.Minute // keys this old are refreshed before use
	hardAge       = 60 * time.Minute // keys this old are never used
	refetchPeriod = 30 * time.Second // at most one refresh attempt per period
)

var (
	errNoMetadata = errors.New("oauth: no usable authorization server metadata")
	errKeySet     = errors.New("oauth: key set is not an object with a keys array")
	errTooMany    = errors.New("oauth: key set has more than 32 keys")
)

// algBits is a set of the supported signature algorithms.
type algBits uint8

const (
	bitRS256 algBits = 1 << iota
	bitES256
	bitEdDSA
)

// supportedAlgs are the algorithms a verifier may be configured with, in
// the order their bits are assigned.
var supportedAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA}

func algBit(alg jose.SignatureAlgorithm) algBits {
	switch alg {
	case jose.RS256:
		return bitRS256
	case jose.ES256:
		return bitES256
	case jose.EdDSA:
		return bitEdDSA
	}
	return 0
}

// verificationKey is one entry of the issuer's key set, judged once when the
// set is fetched.
type verificationKey struct {
	kid  string
	key  any     // *rsa.PublicKey, *ecdsa.PublicKey or ed25519.PublicKey; nil for an entry holding private members
	fits algBits // the algorithms this entry may verify; 0 when it may verify none
}

// keySet is an immutable set of verification keys, in the issuer's order.
type keySet struct {
	keys []verificationKey
}

// privateMembers are the JWK members that carry secret key material (RFC
// 7518 §6.2.2, §6.3.2, §6.4.1; RFC 8037 §2; RFC 9964).
var privateMembers = []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k", "priv"}

// parseKeySet decodes a JWK Set (RFC 7517 §5). The document as a whole must
// be an object whose keys array has at most [maxKeys] entries; each entry is
// then decoded on its own, so one entry go-jose cannot decode (an unknown kty,
// an unsupported curve, a malformed member) is skipped instead of failing the
// set, as RFC 7517 §5 asks.
func parseKeySet(body []byte) (*keySet, error) {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.Keys == nil {
		return nil, errKeySet
	}
	if len(doc.Keys) > maxKeys {
		return nil, errTooMany
	}
	set := &keySet{keys: make([]verificationKey, 0, len(doc.Keys))}
	for _, raw := range doc.Keys {
		if k, ok := parseKey(raw); ok {
			set.keys = append(set.keys, k)
		}
	}
	return set, nil
}

// parseKey judges one key-set entry. It reports false for an entry to skip:
// not an object, no string kty, a non-string kid, or a key go-jose cannot
// decode. An entry carrying a private member is kept, never decoded, and fits
// no algorithm, so a token naming its kid is refused as key-mismatch.
func parseKey(raw []byte) (verificationKey, bool) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return verificationKey{}, false
	}
	var kty, kid string
	if json.Unmarshal(members["kty"], &kty) != nil || kty == "" {
		return verificationKey{}, false
	}
	if m, ok := members["kid"]; ok && json.Unmarshal(m, &kid) != nil {
		return verificationKey{}, false
	}
	k := verificationKey{kid: kid}
	for _, name := range privateMembers {
		if _, ok := members[name]; ok {
			return k, true
		}
	}
	var jwk jose.JSONWebKey
	if err := jwk.UnmarshalJSON(raw); err != nil || !jwk.Valid() || !jwk.IsPublic() {
		return verificationKey{}, false
	}
	k.key = jwk.Key

	// key_ops is read from the raw member: go-jose does not decode it.
	// RFC 7517 §4.3: when present it must allow "verify".
	if m, ok := members["key_ops"]; ok {
		var ops []string
		if json.Unmarshal(m, &ops) != nil || !slices.Contains(ops, "verify") {
			return k, true
		}
	}
	// RFC 7517 §4.2: when present, use must be "sig".
	if jwk.Use != "" && jwk.Use != "sig" {
		return k, true
	}
	for _, alg := range supportedAlgs {
		// RFC 7517 §4.4, RFC 8725 §3.1: a key bound to an algorithm is
		// used with that algorithm only.
		if jwk.Algorithm != "" && jwk.Algorithm != string(alg) {
			continue
		}
		if shapeFits(jwk.Key, alg) {
			k.fits |= algBit(alg)
		}
	}
	return k, true
}

// shapeFits reports whether key has the type, curve and size alg needs:
// RS256 an RSA key of at least 2048 bits, ES256 a P-256 key, EdDSA an Ed25519
// key (RFC 7518 §3.3–§3.4, RFC 8037 §3.1).
func shapeFits(key any, alg jose.SignatureAlgorithm) bool {
	switch k := key.(type) {
	case *rsa.PublicKey:
		return alg == jose.RS256 && k.N != nil && k.N.BitLen() >= minRSABits
	case *ecdsa.PublicKey:
		return alg == jose.ES256 && k.Curve == elliptic.P256()
	case ed25519.PublicKey:
		return alg == jose.EdDSA && len(k) == ed25519.PublicKeySize
	}
	return false
}

// keyCache holds the issuer's key set: fetched lazily, refreshed before use
// once it is [refreshAge] old, never used once it is [hardAge] old, and
// refetched at most once per [refetchPeriod]. A refresh runs on a context of
// its own and is shared by every caller that needs it while it runs.
type keyCache struct {
	client       *http.Client
	issuer       string
	metadataURLs []string // RFC 8414 first, then OpenID Connect Discovery
	clock        Clock

	// onWait, when set (by tests, before first use), is called each time a
	// caller starts waiting for a refresh.
	onWait func()

	mu        sync.Mutex    // guards the fields below
	set       *keySet       // nil: no usable keys
	fetchedAt time.Duration // monotonic reading of the last successful fetch
	attempted bool          // a refresh has been started at least once
	attemptAt time.Duration // monotonic reading of the last refresh start
	inflight  *refresh      // the running refresh, if any
}

// refresh is one running fetch of metadata and keys; done closes when it
// has ended, successfully or not.
type refresh struct {
	done chan struct{}
}

// current returns the key set to verify with, or nil when no usable keys
// exist. It first waits for a refresh when the keys are missing or due, or
// when unknownKid is set (a token named a kid the set lacks); such a refresh
// starts only if none ran in the last [refetchPeriod], otherwise the keys at
// hand are used. A caller whose ctx ends while waiting gets nil; the refresh
// itself carries on for the others.
func (c *keyCache) current(ctx context.Context, unknownKid bool) *keySet {
	c.mu.Lock()
	now := c.clock.Monotonic()
	c.expireLocked(now)
	var r *refresh
	if c.set == nil || now-c.fetchedAt >= refreshAge || unknownKid {
		r = c.startLocked(now)
	}
	set := c.set
	c.mu.Unlock()
	if r == nil {
		return set
	}
	if c.onWait != nil {
		c.onWait()
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked(c.clock.Monotonic())
	return c.set
}

// expireLocked drops keys that have reached [hardAge].
func (c *keyCache) expireLocked(now time.Duration) {
	if c.set != nil && now-c.fetchedAt >= hardAge {
		c.set = nil
	}
}

// startLocked returns the running refresh, or starts one if the last
// attempt was at least [refetchPeriod] ago, or returns nil.
func (c *keyCache) startLocked(now time.Duration) *refresh {
	if c.inflight != nil {
		return c.inflight
	}
	if c.attempted && now-c.attemptAt < refetchPeriod {
		return nil
	}
	c.attempted, c.attemptAt = true, now
	r := &refresh{done: make(chan struct{})}
	c.inflight = r
	go c.run(r)
	return r
}

// run performs refresh r. Its context is its own, not any caller's: each
// fetch is bounded by [fetchTimeout], so run ends within three of them. A
// failed refresh keeps the old keys.
func (c *keyCache) run(r *refresh) {
	set, err := c.load(context.Background())
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.set, c.fetchedAt = set, c.clock.Monotonic()
	}
	c.inflight = nil
	close(r.done)
}

// load discovers the jwks_uri and fetches the key set. A panic while
// decoding what the network returned is a failed refresh, not a crash.
func (c *keyCache) load(ctx context.Context) (set *keySet, err error) {
	defer func() {
		if recover() != nil {
			set, err = nil, errKeySet
		}
	}()
	jwksURI, err := c.discover(ctx)
	if err != nil {
		return nil, err
	}
	body, err := fetch(ctx, c.client, jwksURI)
	if err != nil {
		return nil, err
	}
	return parseKeySet(body)
}

// discover returns the jwks_uri of the first metadata document that can be
// fetched, is a JSON object, names the configured issuer exactly (RFC 8414
// §3.3) and gives an https jwks_uri. Any failure of the RFC 8414 document
// falls back on the OpenID Connect Discovery document.
func (c *keyCache) discover(ctx context.Context) (string, error) {
	for _, u := range c.metadataURLs {
		body, err := fetch(ctx, c.client, u)
		if err != nil {
			continue
		}
		var doc struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if json.Unmarshal(body, &doc) != nil || doc.Issuer != c.issuer {
			continue
		}
		if ju, err := url.Parse(doc.JWKSURI); err != nil || ju.Scheme != "https" || ju.Host == "" {
			continue
		}
		return doc.JWKSURI, nil
	}
	return "", errNoMetadata
}

// metadataURLs returns where issuer's metadata is looked for: the RFC 8414
// §3.1 well-known URL, with the well-known segment inserted between the host
// and the issuer's path, then the OpenID Connect Discovery 1.0 §4 URL,
// appended to the issuer. A trailing slash on the issuer is dropped first.
func metadataURLs(issuer *url.URL) []string {
	path := issuer.EscapedPath()
	for len(path) > 0 && path[len(path)-1] == '/' {
		path = path[:len(path)-1]
	}
	origin := issuer.Scheme + "://" + issuer.Host
	return []string{
		fmt.Sprintf("%s/.well-known/oauth-authorization-server%s", origin, path),
		fmt.Sprintf("%s%s/.well-known/openid-configuration", origin, path),
	}
}

// nextRefresh is the wall-clock instant at which the held keys reach
// refreshAge (zero when none are held). The age is measured on the injected
// monotonic clock; the instant is expressed against time.Now, which the
// host compares with its own clock.
func (c *keyCache) nextRefresh() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set == nil {
		return time.Time{}
	}
	return time.Now().Add(refreshAge - (c.clock.Monotonic() - c.fetchedAt))
}
