package load

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer is an OAuth authorization server over TLS on 127.0.0.1
// (httptest): RFC 8414 metadata and a key set with one RS256 key, and
// access tokens (RFC 9068, typ at+jwt) signed with it by go-jose.
type Issuer struct {
	srv   *httptest.Server
	key   *rsa.PrivateKey
	other *rsa.PrivateKey // signs forged tokens (same kid, wrong key)
}

// NewIssuer starts an issuer; Close stops it.
func NewIssuer() (*Issuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	iss := &Issuer{key: key, other: other}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"issuer": iss.srv.URL, "jwks_uri": iss.srv.URL + "/jwks"})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
			{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"},
		}})
	})
	iss.srv = httptest.NewTLSServer(mux)
	return iss, nil
}

// URL is the issuer identifier (https://127.0.0.1:<port>).
func (i *Issuer) URL() string { return i.srv.URL }

// Client trusts the issuer's certificate.
func (i *Issuer) Client() *http.Client { return i.srv.Client() }

// CertificatePEM is the issuer's TLS certificate in PEM, for a process that
// must trust it (SSL_CERT_FILE).
func (i *Issuer) CertificatePEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: i.srv.Certificate().Raw})
}

// Close stops the issuer.
func (i *Issuer) Close() { i.srv.Close() }

// Token mints an access token for audience with scope for subject, valid
// from now for ttl (a negative ttl: expired that long ago); forged signs
// it with a key the issuer never published.
func (i *Issuer) Token(audience, scope, subject string, ttl time.Duration, forged bool) (string, error) {
	now := time.Now()
	claims := map[string]any{
		"iss": i.srv.URL, "aud": audience, "sub": subject, "client_id": "load",
		"scope": scope, "iat": now.Add(-time.Minute).Unix(), "exp": now.Add(ttl).Unix(),
	}
	if ttl < 0 {
		claims["iat"] = now.Add(2 * ttl).Unix()
	}
	return i.Sign(claims, forged)
}

// Sign signs claims as an RFC 9068 access token (typ at+jwt, kid k1);
// forged signs them with a key the issuer never published, under the same
// kid, so only the signature is wrong.
func (i *Issuer) Sign(claims map[string]any, forged bool) (string, error) {
	key := i.key
	if forged {
		key = i.other
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "k1"))
	if err != nil {
		return "", err
	}
	return jwt.Signed(signer).Claims(claims).Serialize()
}
