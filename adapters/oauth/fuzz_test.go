package oauth_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentmcp/agentmcp/ports"
)

// FuzzVerify checks that Verify, without its recover, never panics on any
// string, and that whatever it returns is either an admission for an
// allowed principal or a bare word of the vocabulary. The keys are warm and
// the clock stands still, so after the first fetch no input reaches the
// network.
func FuzzVerify(f *testing.F) {
	ks := testKeys()
	iss := newFakeIssuer(f, "", defaultKeys(f)...)
	clk := newFakeClock()
	v := newVerifier(f, iss.config(clk))
	now := clk.Now()

	valid := mint(f, ks.rsa, iss.Issuer, now)
	if got := v.Verify(f.Context(), valid); !got.Admitted() {
		f.Fatalf("warming the keys: Verify = %+v; want admitted", got)
	}
	seeds := []string{
		valid,
		mint(f, ks.ec, iss.Issuer, now),
		mint(f, ks.ed, iss.Issuer, now),
		mint(f, ks.rsa.withKid(""), iss.Issuer, now),
		mint(f, ks.rsa, iss.Issuer, now, header("typ", "JWT")),
		mint(f, ks.rsa, iss.Issuer, now, header("crit", []string{"exp"}), header("exp", 1)),
		mint(f, ks.rsa, iss.Issuer, now, header("jwk", true)),
		mint(f, ks.rsa, iss.Issuer, now, claim("exp", "soon"), claim("aud", []any{1, "x"})),
		mint(f, signer{jose.HS256, []byte(strings.Repeat("k", 32)), "rsa-1"}, iss.Issuer, now),
		rawToken(f, map[string]any{"alg": "none", "typ": "at+jwt"}, baseClaims(iss.Issuer, now), nil),
		rawToken(f, map[string]any{"alg": "RS256", "typ": "at+jwt", "kid": []int{1}}, map[string]any{"exp": 1e300}, []byte{0}),
		"", ".", "..", "a.b.c", "e30.e30.", "eyJhbGciOiJSUzI1NiJ9..", `{"payload":"e30"}`,
		strings.Repeat("A", 8193),
	}
	for _, s := range seeds {
		f.Add(s)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, token string) {
		got := v.VerifyUnrecovered(ctx, token)
		if got.Admitted() {
			if got.Principal.Issuer != iss.Issuer || (got.Principal.Subject != testSubject) || got.Expiry == 0 {
				t.Fatalf("admitted an unexpected principal: %+v", got)
			}
			return
		}
		if !slices.Contains(vocabulary, got.Refusal) || got != (ports.Verdict{Refusal: got.Refusal}) {
			t.Fatalf("verdict %+v is not a bare word of the vocabulary", got)
		}
	})
}
