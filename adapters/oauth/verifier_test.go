package oauth_test

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/go-cmp/cmp"

	"github.com/agentmcp/agentmcp/adapters/oauth"
	"github.com/agentmcp/agentmcp/ports"
)

func TestNewVerifierRefusesUnsafeConfig(t *testing.T) {
	valid := func() oauth.Config {
		return oauth.Config{
			Issuer:          "https://issuer.example.com",
			Resource:        testResource,
			RequiredScopes:  []string{testScope},
			AllowedSubjects: []string{testSubject},
		}
	}
	tests := []struct {
		name   string
		change func(*oauth.Config)
		want   string // substring of the error; "" means success
	}{
		{"valid", func(*oauth.Config) {}, ""},
		{"valid with clients only", func(c *oauth.Config) { c.AllowedSubjects, c.AllowedClients = nil, []string{testClient} }, ""},
		{"valid issuer with path", func(c *oauth.Config) { c.Issuer = "https://issuer.example.com/tenants/a" }, ""},
		{"valid single algorithm", func(c *oauth.Config) { c.Algorithms = []string{"EdDSA"} }, ""},
		{"no principal", func(c *oauth.Config) { c.AllowedSubjects = nil }, "name at least one allowed subject or client"},
		{"empty subject", func(c *oauth.Config) { c.AllowedSubjects = []string{""} }, "allowed subject is empty"},
		{"empty client", func(c *oauth.Config) { c.AllowedClients = []string{""} }, "allowed client is empty"},
		{"http issuer", func(c *oauth.Config) { c.Issuer = "http://issuer.example.com" }, "issuer must be an absolute https URL"},
		{"issuer not a URL", func(c *oauth.Config) { c.Issuer = "issuer.example.com" }, "issuer must be"},
		{"empty issuer", func(c *oauth.Config) { c.Issuer = "" }, "issuer must be"},
		{"issuer with query", func(c *oauth.Config) { c.Issuer = "https://issuer.example.com/?a=b" }, "issuer must be"},
		{"issuer with empty query", func(c *oauth.Config) { c.Issuer = "https://issuer.example.com/?" }, "issuer must be"},
		{"issuer with fragment", func(c *oauth.Config) { c.Issuer = "https://issuer.example.com/#x" }, "issuer must be"},
		{"issuer with user info", func(c *oauth.Config) { c.Issuer = "https://u:p@issuer.example.com" }, "issuer must be"},
		{"relative resource", func(c *oauth.Config) { c.Resource = "/mcp" }, "resource must be an absolute URL"},
		{"no required scope", func(c *oauth.Config) { c.RequiredScopes = nil }, "at least one required scope"},
		{"scope with space", func(c *oauth.Config) { c.RequiredScopes = []string{"a b"} }, "not an RFC 6749 scope token"},
		{"empty scope", func(c *oauth.Config) { c.RequiredScopes = []string{""} }, "not an RFC 6749 scope token"},
		{"HS256", func(c *oauth.Config) { c.Algorithms = []string{"RS256", "HS256"} }, `algorithm "HS256" is not one of`},
		{"none", func(c *oauth.Config) { c.Algorithms = []string{"none"} }, `algorithm "none" is not one of`},
		{"PS256", func(c *oauth.Config) { c.Algorithms = []string{"PS256"} }, `algorithm "PS256" is not one of`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := valid()
			tt.change(&cfg)
			v, err := oauth.NewVerifier(cfg)
			if tt.want == "" {
				if err != nil || v == nil {
					t.Fatalf("NewVerifier = %v, %v; want a verifier", v, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("NewVerifier succeeded; want an error containing %q", tt.want)
			}
			if !errors.Is(err, oauth.ErrInvalidConfig) {
				t.Errorf("error %q does not wrap ErrInvalidConfig", err)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "oauth: ") || !strings.Contains(msg, tt.want) {
				t.Errorf("error = %q; want the prefix \"oauth: \" and %q", msg, tt.want)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	scopes := []string{"a", "b"}
	v := newVerifier(t, oauth.Config{
		Issuer:         "https://issuer.example.com/t",
		Resource:       testResource,
		RequiredScopes: scopes,
		AllowedClients: []string{testClient},
	})
	want := ports.VerifierDescription{Issuer: "https://issuer.example.com/t", Resource: testResource, Scopes: []string{"a", "b"}}
	got := v.Describe()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Describe() mismatch (-want +got):\n%s", diff)
	}
	got.Scopes[0] = "changed"
	scopes[1] = "changed"
	if diff := cmp.Diff(want, v.Describe()); diff != "" {
		t.Errorf("Describe() shares its slice (-want +got):\n%s", diff)
	}
}

// env is one verification scenario: an issuer, a clock, and an attacker's
// server whose URLs tokens may name but the verifier must never fetch.
type env struct {
	iss      *fakeIssuer
	attacker *fakeIssuer
	clk      *fakeClock
}

func (e *env) mint(t testing.TB, s signer, edits ...edit) string {
	t.Helper()
	return mint(t, s, e.iss.Issuer, e.clk.Now(), edits...)
}

// verifyRow is one row of TestVerify.
type verifyRow struct {
	name string
	// keys returns the issuer's key set; nil means RSA, EC and Ed25519
	// keys under kids rsa-1, ec-1 and ed-1.
	keys   func(t testing.TB) []any
	config func(*oauth.Config)
	token  func(t testing.TB, e *env) string
	want   ports.RefusalReason // "" means admitted
	// noNetwork: the issuer receives no request at all.
	noNetwork bool
	// attackerUntouched: the attacker's server receives no request.
	attackerUntouched bool
}

func defaultKeys(t testing.TB) []any {
	ks := testKeys()
	return []any{jwk(t, ks.rsa, nil), jwk(t, ks.ec, nil), jwk(t, ks.ed, nil)}
}

// verifyRows are every admission and refusal of docs/SPEC.md §7 and issue 4.
func verifyRows() []verifyRow {
	ks := testKeys()
	secs := func(d time.Duration) func(e *env) int64 {
		return func(e *env) int64 { return e.clk.Now().Add(d).Unix() }
	}
	at := func(d time.Duration) func(t testing.TB, e *env) string {
		return func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("exp", secs(d)(e))) }
	}
	return []verifyRow{
		// Admitted.
		{name: "RS256 admitted", token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa) }},
		{name: "ES256 admitted", token: func(t testing.TB, e *env) string { return e.mint(t, ks.ec) }},
		{name: "EdDSA admitted", token: func(t testing.TB, e *env) string { return e.mint(t, ks.ed) }},
		{name: "typ AT+JWT admitted", token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, header("typ", "AT+JWT")) }},
		{name: "typ application/at+jwt admitted", token: func(t testing.TB, e *env) string {
			return e.mint(t, ks.ec, header("typ", "application/at+jwt"))
		}},
		{name: "typ Application/AT+JWT admitted", token: func(t testing.TB, e *env) string {
			return e.mint(t, ks.ed, header("typ", "Application/AT+JWT"))
		}},
		{
			name:   "AllowedClients alone admits any subject of that client",
			config: func(c *oauth.Config) { c.AllowedSubjects, c.AllowedClients = nil, []string{testClient} },
			token:  func(t testing.TB, e *env) string { return e.mint(t, ks.ec, claim("sub", "bob")) },
		},
		{
			name:   "allowed subject admits through another client",
			config: func(c *oauth.Config) { c.AllowedClients = []string{"other-client"} },
			token:  func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("client_id", "unlisted-client")) },
		},
		{
			name:  "no kid with exactly one key",
			keys:  func(t testing.TB) []any { return []any{jwk(t, ks.rsa, nil)} },
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa.withKid("")) },
		},
		{
			name: "key with alg, use sig and key_ops verify",
			keys: func(t testing.TB) []any {
				return []any{jwk(t, ks.rsa, map[string]any{"alg": "RS256", "use": "sig", "key_ops": []string{"verify"}})}
			},
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa) },
		},
		{name: "aud array naming the resource", token: func(t testing.TB, e *env) string {
			return e.mint(t, ks.rsa, claim("aud", []string{"https://other.example", testResource}))
		}},
		{name: "exp 59 s ago admitted", token: at(-59 * time.Second)},
		{name: "exp 60 s ago admitted", token: at(-60 * time.Second)},
		{name: "nbf in 59 s admitted", token: func(t testing.TB, e *env) string {
			return e.mint(t, ks.rsa, claim("nbf", secs(59*time.Second)(e)))
		}},
		{name: "several required scopes granted", config: func(c *oauth.Config) { c.RequiredScopes = []string{testScope, "other"} },
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa) }},

		// Refused before anything is parsed or fetched.
		{name: "empty", want: ports.RefusalMalformed, noNetwork: true,
			token: func(testing.TB, *env) string { return "" }},
		{name: "oversize", want: ports.RefusalOversize, noNetwork: true,
			token: func(testing.TB, *env) string { return strings.Repeat("a", oauth.MaxTokenBytes+1) }},
		{name: "oversize valid token", want: ports.RefusalOversize, noNetwork: true,
			token: func(t testing.TB, e *env) string {
				return e.mint(t, ks.rsa, claim("pad", strings.Repeat("x", oauth.MaxTokenBytes)))
			}},
		{name: "8192 bytes of garbage is malformed", want: ports.RefusalMalformed, noNetwork: true,
			token: func(testing.TB, *env) string { return strings.Repeat("a", oauth.MaxTokenBytes) }},
		{name: "garbage", want: ports.RefusalMalformed, noNetwork: true,
			token: func(testing.TB, *env) string { return "not a token" }},
		{name: "three dots", want: ports.RefusalMalformed, noNetwork: true,
			token: func(testing.TB, *env) string { return "a.b.c" }},
		{name: "header not JSON", want: ports.RefusalMalformed, noNetwork: true,
			token: func(testing.TB, *env) string { return "bm90IGpzb24.e30.c2ln" }},
		{name: "JWS JSON serialization", want: ports.RefusalMalformed, noNetwork: true,
			token: func(testing.TB, *env) string { return `{"payload":"e30","signatures":[]}` }},
		{name: "kid not a string", want: ports.RefusalMalformed, noNetwork: true,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, header("kid", 7)) }},

		// typ (RFC 9068, RFC 8725 §3.11).
		{name: "ID token (typ JWT)", want: ports.RefusalWrongType, noNetwork: true,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, header("typ", "JWT")) }},
		{name: "untyped token", want: ports.RefusalWrongType, noNetwork: true,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, header("typ", nil)) }},
		{name: "typ not a string", want: ports.RefusalWrongType, noNetwork: true,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, header("typ", []string{"at+jwt"})) }},
		{name: "typ application/jwt", want: ports.RefusalWrongType, noNetwork: true,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, header("typ", "application/jwt")) }},

		// alg (RFC 8725 §3.1–§3.2).
		{name: "alg none", want: ports.RefusalUnsupportedAlg, noNetwork: true, token: func(t testing.TB, e *env) string {
			return rawToken(t, map[string]any{"alg": "none", "typ": "at+jwt"}, baseClaims(e.iss.Issuer, e.clk.Now()), nil)
		}},
		{name: "alg none without typ is wrong-type first", want: ports.RefusalWrongType, noNetwork: true, token: func(t testing.TB, e *env) string {
			return rawToken(t, map[string]any{"alg": "none"}, baseClaims(e.iss.Issuer, e.clk.Now()), nil)
		}},
		{name: "alg missing", want: ports.RefusalUnsupportedAlg, noNetwork: true, token: func(t testing.TB, e *env) string {
			return rawToken(t, map[string]any{"typ": "at+jwt", "kid": "rsa-1"}, baseClaims(e.iss.Issuer, e.clk.Now()), []byte("sig"))
		}},
		{name: "HS256 keyed with the RSA public key's bytes", want: ports.RefusalUnsupportedAlg, noNetwork: true,
			token: func(t testing.TB, e *env) string {
				der, err := x509.MarshalPKIXPublicKey(ks.rsa.public())
				if err != nil {
					t.Fatal(err)
				}
				pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
				return e.mint(t, signer{jose.HS256, pemKey, "rsa-1"})
			}},
		{name: "RS384 (not supported)", want: ports.RefusalUnsupportedAlg, noNetwork: true,
			token: func(t testing.TB, e *env) string { return e.mint(t, signer{jose.RS384, ks.rsa.key, "rsa-1"}) }},
		{name: "ES256 when only RS256 is configured", want: ports.RefusalUnsupportedAlg, noNetwork: true,
			config: func(c *oauth.Config) { c.Algorithms = []string{"RS256"} },
			token:  func(t testing.TB, e *env) string { return e.mint(t, ks.ec) }},

		// Headers that are refused or never used (RFC 7515 §4.1.11, RFC 8725 §3.10).
		{name: "crit header", want: ports.RefusalMalformed, noNetwork: true,
			token: func(t testing.TB, e *env) string {
				return e.mint(t, ks.rsa, header("crit", []string{"exp"}), header("exp", 1))
			}},
		{name: "b64 header outside crit", want: ports.RefusalMalformed, noNetwork: true,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, header("b64", true)) }},
		{name: "jku header never fetched", want: ports.RefusalBadSignature, attackerUntouched: true,
			token: func(t testing.TB, e *env) string {
				return e.mint(t, ks.rsaOther.withKid("rsa-1"), header("jku", e.attacker.srv.URL+"/jwks"))
			}},
		{name: "jku header naming an attacker kid", want: ports.RefusalUnknownKey, attackerUntouched: true,
			token: func(t testing.TB, e *env) string {
				return e.mint(t, ks.rsaOther, header("jku", e.attacker.srv.URL+"/jwks"))
			}},
		{name: "x5u header never fetched", want: ports.RefusalBadSignature, attackerUntouched: true,
			token: func(t testing.TB, e *env) string {
				return e.mint(t, ks.rsaOther.withKid("rsa-1"), header("x5u", e.attacker.srv.URL+"/cert.pem"))
			}},
		{name: "jwk header never trusted", want: ports.RefusalBadSignature, attackerUntouched: true,
			token: func(t testing.TB, e *env) string {
				return e.mint(t, ks.rsaOther.withKid("rsa-1"), header("jwk", true))
			}},
		{name: "jwk header without kid never trusted", want: ports.RefusalBadSignature, attackerUntouched: true,
			keys: func(t testing.TB) []any { return []any{jwk(t, ks.rsa, nil)} },
			token: func(t testing.TB, e *env) string {
				return e.mint(t, ks.rsaOther.withKid(""), header("jwk", true))
			}},
		{name: "x5c header never trusted", want: ports.RefusalBadSignature, attackerUntouched: true,
			token: func(t testing.TB, e *env) string {
				return e.mint(t, ks.rsaOther.withKid("rsa-1"), header("x5c", []string{selfSignedCert(t, ks.rsaOther)}))
			}},

		// Key selection and fit (RFC 7515 §4.1.4, RFC 7517 §4, RFC 8725 §3.5).
		{name: "no kid with several keys", want: ports.RefusalAmbiguousKey,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa.withKid("")) }},
		{name: "no kid with no keys", want: ports.RefusalAmbiguousKey,
			keys:  func(testing.TB) []any { return []any{} },
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa.withKid("")) }},
		{name: "unknown kid", want: ports.RefusalUnknownKey,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa.withKid("nope")) }},
		{name: "key type mismatch (RS256 under an EC key)", want: ports.RefusalKeyMismatch,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa.withKid("ec-1")) }},
		{name: "key type mismatch (EdDSA under an RSA key)", want: ports.RefusalKeyMismatch,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.ed.withKid("rsa-1")) }},
		{name: "no kid, the one key has the wrong type", want: ports.RefusalKeyMismatch,
			keys:  func(t testing.TB) []any { return []any{jwk(t, ks.ec, nil)} },
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa.withKid("")) }},
		{name: "curve mismatch (ES256 under a P-384 key)", want: ports.RefusalKeyMismatch,
			keys:  func(t testing.TB) []any { return []any{jwk(t, ks.ec384, nil)} },
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.ec.withKid("ec-384")) }},
		{name: "key alg mismatch", want: ports.RefusalKeyMismatch,
			keys:  func(t testing.TB) []any { return []any{jwk(t, ks.rsa, map[string]any{"alg": "PS256"})} },
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa) }},
		{name: "key use enc", want: ports.RefusalKeyMismatch,
			keys:  func(t testing.TB) []any { return []any{jwk(t, ks.rsa, map[string]any{"use": "enc"})} },
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa) }},
		{name: "key_ops encrypt", want: ports.RefusalKeyMismatch,
			keys:  func(t testing.TB) []any { return []any{jwk(t, ks.rsa, map[string]any{"key_ops": []string{"encrypt"}})} },
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa) }},
		{name: "key_ops not an array", want: ports.RefusalKeyMismatch,
			keys:  func(t testing.TB) []any { return []any{jwk(t, ks.ec, map[string]any{"key_ops": "verify"})} },
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.ec) }},
		{name: "key set entry carrying private d", want: ports.RefusalKeyMismatch,
			keys:  func(t testing.TB) []any { return []any{jwkOf(t, ks.rsa.key, "rsa-1", nil)} },
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa) }},
		{name: "Ed25519 key set entry carrying private d", want: ports.RefusalKeyMismatch,
			keys:  func(t testing.TB) []any { return []any{jwkOf(t, ks.ed.key, "ed-1", nil)} },
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.ed) }},
		{name: "RSA key under 2048 bits", want: ports.RefusalKeyMismatch,
			keys:  func(t testing.TB) []any { return []any{jwk(t, ks.rsaSmall, nil)} },
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsaSmall) }},

		// Signature.
		{name: "forged signature under a known kid", want: ports.RefusalBadSignature,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsaOther.withKid("rsa-1")) }},
		{name: "forged ES256 signature under a known kid", want: ports.RefusalBadSignature,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.ecOther.withKid("ec-1")) }},
		{name: "payload swapped under a valid signature", want: ports.RefusalBadSignature,
			token: func(t testing.TB, e *env) string {
				good := strings.Split(e.mint(t, ks.rsa, claim("sub", "mallory")), ".")
				other := strings.Split(e.mint(t, ks.rsa), ".")
				return good[0] + "." + other[1] + "." + good[2]
			}},

		// Claims, in order.
		{name: "wrong iss", want: ports.RefusalWrongIssuer,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("iss", "https://evil.example")) }},
		{name: "iss with a trailing slash", want: ports.RefusalWrongIssuer,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("iss", e.iss.Issuer+"/")) }},
		{name: "iss missing", want: ports.RefusalWrongIssuer,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("iss", nil)) }},
		{name: "wrong iss before a string exp", want: ports.RefusalWrongIssuer,
			token: func(t testing.TB, e *env) string {
				return e.mint(t, ks.rsa, claim("iss", "https://evil.example"), claim("exp", "4102444800"))
			}},
		{name: "wrong aud", want: ports.RefusalWrongAudience,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("aud", "https://other.example/mcp")) }},
		{name: "aud array without the resource", want: ports.RefusalWrongAudience,
			token: func(t testing.TB, e *env) string {
				return e.mint(t, ks.rsa, claim("aud", []string{"https://a.example", "https://b.example"}))
			}},
		{name: "aud missing", want: ports.RefusalWrongAudience,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("aud", nil)) }},
		{name: "aud a number", want: ports.RefusalWrongAudience,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("aud", 5)) }},
		{name: "exp missing", want: ports.RefusalMalformed,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("exp", nil)) }},
		{name: "exp null", want: ports.RefusalMalformed,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("exp", json.RawMessage("null"))) }},
		{name: "exp as a string", want: ports.RefusalMalformed,
			token: func(t testing.TB, e *env) string {
				return e.mint(t, ks.rsa, claim("exp", e.clk.Now().Add(time.Hour).Format("2006-01-02")))
			}},
		{name: "exp as a numeric string", want: ports.RefusalMalformed,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("exp", "4102444800")) }},
		{name: "exp 61 s ago", want: ports.RefusalExpired, token: at(-61 * time.Second)},
		{name: "nbf in 61 s", want: ports.RefusalNotYetValid,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("nbf", secs(61*time.Second)(e))) }},
		{name: "nbf as a string", want: ports.RefusalMalformed,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("nbf", "0")) }},
		{name: "sub missing", want: ports.RefusalMalformed,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("sub", nil)) }},
		{name: "sub not a string", want: ports.RefusalMalformed,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("sub", 42)) }},
		{name: "client_id missing", want: ports.RefusalMalformed,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("client_id", nil)) }},
		{name: "client_id empty", want: ports.RefusalMalformed,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("client_id", "")) }},
		{name: "missing scope", want: ports.RefusalMissingScope,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("scope", "openid other")) }},
		{name: "scope a prefix of the required one", want: ports.RefusalMissingScope,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("scope", "mcp:tool mcp:toolsx")) }},
		{name: "scp never counts", want: ports.RefusalMissingScope,
			token: func(t testing.TB, e *env) string {
				return e.mint(t, ks.rsa, claim("scope", nil), claim("scp", []string{testScope}))
			}},
		{name: "scope as an array grants nothing", want: ports.RefusalMissingScope,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("scope", []string{testScope})) }},
		{name: "scopes separated by a tab", want: ports.RefusalMissingScope,
			token: func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("scope", "openid\t"+testScope)) }},
		{name: "subject and client not allowed", want: ports.RefusalPrincipalNotAllowed,
			config: func(c *oauth.Config) { c.AllowedClients = []string{"other-client"} },
			token:  func(t testing.TB, e *env) string { return e.mint(t, ks.rsa, claim("sub", "mallory")) }},
		{name: "azp is not consulted", want: ports.RefusalPrincipalNotAllowed,
			config: func(c *oauth.Config) { c.AllowedSubjects, c.AllowedClients = nil, []string{"trusted-client"} },
			token: func(t testing.TB, e *env) string {
				return e.mint(t, ks.rsa, claim("azp", "trusted-client"))
			}},
	}
}

// runRow sets up row's issuer and verifier and returns the verdict and env.
func runRow(t *testing.T, row verifyRow) (ports.Verdict, *env, string) {
	t.Helper()
	keys := defaultKeys
	if row.keys != nil {
		keys = row.keys
	}
	e := &env{
		iss:      newFakeIssuer(t, "", keys(t)...),
		attacker: newFakeIssuer(t, "", jwk(t, testKeys().rsaOther, nil)),
		clk:      newFakeClock(),
	}
	cfg := e.iss.config(e.clk)
	if row.config != nil {
		row.config(&cfg)
	}
	v := newVerifier(t, cfg)
	token := row.token(t, e)
	return v.Verify(t.Context(), token), e, token
}

func TestVerify(t *testing.T) {
	for _, row := range verifyRows() {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			got, e, token := runRow(t, row)

			want := ports.Verdict{Refusal: row.want}
			if row.want == "" {
				want = admittedVerdict(t, e.iss.Issuer, token)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Verify mismatch (-want +got):\n%s", diff)
			}
			if row.noNetwork {
				if n := e.iss.total(); n != 0 {
					t.Errorf("issuer received %d requests; want none", n)
				}
			}
			if row.attackerUntouched {
				if n := e.attacker.total(); n != 0 {
					t.Errorf("attacker's server received %d requests; want none", n)
				}
			}
		})
	}
}

// admittedVerdict is what admitting token means: the configured issuer,
// the token's sub and client_id, its exp.
func admittedVerdict(t testing.TB, issuer, token string) ports.Verdict {
	t.Helper()
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.EdDSA})
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Sub      string `json:"sub"`
		ClientID string `json:"client_id"`
		Exp      int64  `json:"exp"`
	}
	if err := tok.UnsafeClaimsWithoutVerification(&c); err != nil {
		t.Fatal(err)
	}
	return ports.Verdict{
		Principal: ports.Principal{Issuer: issuer, Subject: c.Sub, Client: c.ClientID},
		Expiry:    c.Exp,
	}
}

// selfSignedCert returns a base64 DER certificate for s's key, as an x5c
// header carries it.
func selfSignedCert(t testing.TB, s signer) string {
	t.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "attacker"},
		NotBefore:    time.Unix(0, 0),
		NotAfter:     time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, s.public(), s.key)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(der)
}
