package oauth_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/agentmcp/agentmcp/adapters/oauth"
)

const (
	testResource = "https://mcp.example.com/mcp"
	testScope    = "mcp:tools"
	testSubject  = "alice"
	testClient   = "client-1"
)

// fakeClock is a manual [oauth.Clock]: Advance moves wall and monotonic
// time together.
type fakeClock struct {
	mu   sync.Mutex
	wall time.Time
	mono time.Duration
}

func newFakeClock() *fakeClock { return &fakeClock{wall: time.Unix(1_900_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall
}

func (c *fakeClock) Monotonic() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mono
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = c.wall.Add(d)
	c.mono += d
}

// AdvanceWall moves the wall clock alone, as a system-clock step would.
func (c *fakeClock) AdvanceWall(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = c.wall.Add(d)
}

// AdvanceMonotonic moves the monotonic clock alone.
func (c *fakeClock) AdvanceMonotonic(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mono += d
}

// signer is a private key a token is signed with, and the kid it names.
type signer struct {
	alg jose.SignatureAlgorithm
	key any // private key, or []byte for HMAC
	kid string
}

// public returns the signer's public key.
func (s signer) public() any {
	switch k := s.key.(type) {
	case *rsa.PrivateKey:
		return &k.PublicKey
	case *ecdsa.PrivateKey:
		return &k.PublicKey
	case ed25519.PrivateKey:
		return k.Public()
	}
	panic("no public key")
}

// withKid returns s naming another kid.
func (s signer) withKid(kid string) signer { s.kid = kid; return s }

// testKeys are generated once per test binary.
var testKeys = sync.OnceValue(func() struct {
	rsa, rsaOther, rsaSmall, ec, ecOther, ec384, ed signer
} {
	rsaKey := func(bits int) *rsa.PrivateKey {
		k, err := rsa.GenerateKey(rand.Reader, bits)
		if err != nil {
			panic(err)
		}
		return k
	}
	ecKey := func(c elliptic.Curve) *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(c, rand.Reader)
		if err != nil {
			panic(err)
		}
		return k
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	var ks struct {
		rsa, rsaOther, rsaSmall, ec, ecOther, ec384, ed signer
	}
	ks.rsa = signer{jose.RS256, rsaKey(2048), "rsa-1"}
	ks.rsaOther = signer{jose.RS256, rsaKey(2048), "rsa-attacker"}
	ks.rsaSmall = signer{jose.RS256, rsaKey(1536), "rsa-small"}
	ks.ec = signer{jose.ES256, ecKey(elliptic.P256()), "ec-1"}
	ks.ecOther = signer{jose.ES256, ecKey(elliptic.P256()), "ec-other"}
	ks.ec384 = signer{jose.ES384, ecKey(elliptic.P384()), "ec-384"}
	ks.ed = signer{jose.EdDSA, ed, "ed-1"}
	return ks
})

// jwk returns the public JWK of s as a JSON object, with extra members set
// (a nil value removes the member).
func jwk(t testing.TB, s signer, extra map[string]any) map[string]any {
	t.Helper()
	return jwkOf(t, s.public(), s.kid, extra)
}

func jwkOf(t testing.TB, key any, kid string, extra map[string]any) map[string]any {
	t.Helper()
	b, err := jose.JSONWebKey{Key: key, KeyID: kid}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range extra {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

// keySet renders a JWK Set document.
func keySet(t testing.TB, entries ...any) []byte {
	t.Helper()
	if entries == nil {
		entries = []any{}
	}
	b, err := json.Marshal(map[string]any{"keys": entries})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fakeIssuer is an authorization server served over TLS on 127.0.0.1: RFC
// 8414 and OpenID metadata and a key set, every request counted by path.
type fakeIssuer struct {
	srv    *httptest.Server
	Issuer string // the issuer identifier: srv.URL + path

	mu         sync.Mutex // guards the fields below
	path       string     // the issuer's path, "" or "/…"
	rfc8414    bool       // serve the RFC 8414 document
	openid     bool       // serve the OpenID document
	metaIssuer string     // issuer named in metadata; "" means Issuer
	jwksURI    string     // jwks_uri named in metadata; "" means srv.URL+"/jwks"
	jwks       []byte     // the key set served at /jwks
	down       bool       // every request answers 503
	gate       chan struct{}
	entered    chan struct{}
	extra      map[string]http.HandlerFunc
	hits       map[string]int
}

const (
	rfc8414Path = "/.well-known/oauth-authorization-server"
	openidPath  = "/.well-known/openid-configuration"
)

// newFakeIssuer starts an issuer at path ("" for none) serving keys.
func newFakeIssuer(t testing.TB, path string, keys ...any) *fakeIssuer {
	t.Helper()
	f := &fakeIssuer{
		path:    path,
		rfc8414: true,
		openid:  true,
		hits:    map[string]int{},
		extra:   map[string]http.HandlerFunc{},
	}
	f.jwks = keySet(t, keys...)
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert()}}
	f.srv.StartTLS()
	t.Cleanup(func() {
		f.mu.Lock()
		if f.gate != nil {
			select {
			case <-f.gate:
			default:
				close(f.gate)
			}
		}
		f.mu.Unlock()
		f.srv.Close()
	})
	f.Issuer = f.srv.URL + path
	return f
}

func (f *fakeIssuer) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.hits[r.URL.Path]++
	h := f.extra[r.URL.Path]
	down, path, gate, entered := f.down, f.path, f.gate, f.entered
	meta := map[string]any{"issuer": f.Issuer, "jwks_uri": f.srv.URL + "/jwks"}
	if f.metaIssuer != "" {
		meta["issuer"] = f.metaIssuer
	}
	if f.jwksURI != "" {
		meta["jwks_uri"] = f.jwksURI
	}
	rfc8414, openid, jwks := f.rfc8414, f.openid, f.jwks
	f.mu.Unlock()
	path = strings.TrimSuffix(path, "/")

	if h != nil {
		h(w, r)
		return
	}
	if down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	switch {
	case r.URL.Path == rfc8414Path+path && rfc8414, r.URL.Path == path+openidPath && openid:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(meta)
	case r.URL.Path == "/jwks":
		if gate != nil {
			if entered != nil {
				entered <- struct{}{}
			}
			<-gate
			f.mu.Lock()
			jwks = f.jwks // what the issuer serves once let through
			f.mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(jwks)
	default:
		http.NotFound(w, r)
	}
}

// serverCert is a self-signed certificate for 127.0.0.1, ::1 and localhost.
// (httptest's own does not name localhost, which the address-rule tests need
// to reach the same server under a second host name.)
var serverCert = sync.OnceValue(func() tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "fake issuer"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
})

// port returns the port the issuer listens on.
func (f *fakeIssuer) port() string {
	_, port, _ := net.SplitHostPort(f.srv.Listener.Addr().String())
	return port
}

// useHost makes the issuer identifier name host instead of 127.0.0.1 (the
// same server), with its key set under that host too.
func (f *fakeIssuer) useHost(host string) {
	f.set(func(f *fakeIssuer) {
		f.Issuer = "https://" + net.JoinHostPort(host, f.port()) + f.path
		f.jwksURI = "https://" + net.JoinHostPort(host, f.port()) + "/jwks"
	})
}

// set changes the issuer's behaviour under its lock.
func (f *fakeIssuer) set(change func(f *fakeIssuer)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

// setKeys replaces the served key set.
func (f *fakeIssuer) setKeys(t testing.TB, keys ...any) {
	body := keySet(t, keys...)
	f.set(func(f *fakeIssuer) { f.jwks = body })
}

// handle serves path with h, before anything else.
func (f *fakeIssuer) handle(path string, h http.HandlerFunc) {
	f.set(func(f *fakeIssuer) { f.extra[path] = h })
}

// count returns how many requests path received.
func (f *fakeIssuer) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[path]
}

// total returns how many requests the issuer received.
func (f *fakeIssuer) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.hits {
		n += c
	}
	return n
}

func (f *fakeIssuer) jwksFetches() int { return f.count("/jwks") }

// config returns the verifier configuration used unless a test changes it.
func (f *fakeIssuer) config(clk oauth.Clock) oauth.Config {
	return oauth.Config{
		Issuer:          f.Issuer,
		Resource:        testResource,
		RequiredScopes:  []string{testScope},
		AllowedSubjects: []string{testSubject},
		HTTPClient:      f.srv.Client(),
		Clock:           clk,
	}
}

func newVerifier(t testing.TB, cfg oauth.Config) *oauth.Verifier {
	t.Helper()
	v, err := oauth.NewVerifier(cfg)
	if err != nil {
		t.Fatalf("NewVerifier: %v", err)
	}
	return v
}

// edit changes a token's header or claims before it is signed; a nil value
// removes the member.
type edit func(header, claims map[string]any)

func header(k string, v any) edit {
	return func(h, _ map[string]any) { setOrDelete(h, k, v) }
}

func claim(k string, v any) edit {
	return func(_, c map[string]any) { setOrDelete(c, k, v) }
}

func setOrDelete(m map[string]any, k string, v any) {
	if v == nil {
		delete(m, k)
	} else {
		m[k] = v
	}
}

// baseClaims are a valid token's claims for issuer at now.
func baseClaims(issuer string, now time.Time) map[string]any {
	return map[string]any{
		"iss":       issuer,
		"aud":       testResource,
		"sub":       testSubject,
		"client_id": testClient,
		"scope":     "openid " + testScope + " other",
		"iat":       now.Unix(),
		"exp":       now.Add(2 * time.Hour).Unix(),
		"jti":       "token-id-1",
	}
}

// mint signs a token for issuer at now with s, after edits. The header
// starts as {"typ":"at+jwt","kid":s.kid}.
func mint(t testing.TB, s signer, issuer string, now time.Time, edits ...edit) string {
	t.Helper()
	h := map[string]any{"typ": "at+jwt"}
	if s.kid != "" {
		h["kid"] = s.kid
	}
	c := baseClaims(issuer, now)
	for _, e := range edits {
		e(h, c)
	}
	return signWith(t, s.alg, s.key, h, c)
}

// signWith signs claims under header with go-jose.
func signWith(t testing.TB, alg jose.SignatureAlgorithm, key any, h, c map[string]any) string {
	t.Helper()
	opts := &jose.SignerOptions{}
	for k, v := range h {
		if k == "jwk" {
			opts.EmbedJWK = true
			continue
		}
		opts.WithHeader(jose.HeaderKey(k), v)
	}
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatalf("NewSigner: %v", err)
	}
	tok, err := jwt.Signed(sig).Claims(c).Serialize()
	if err != nil {
		t.Fatalf("Serialize: %v", err)
	}
	return tok
}

// rawToken assembles a compact JWS from JSON header and claims and a
// signature, none of it checked: for tokens go-jose will not produce.
func rawToken(t testing.TB, h, c map[string]any, sig []byte) string {
	t.Helper()
	hb, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(hb) + "." + enc.EncodeToString(cb) + "." + enc.EncodeToString(sig)
}
