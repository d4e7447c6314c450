package oauth_test

import (
	"testing"
)

// BenchmarkVerify measures Verify of a valid token with warm keys.
func BenchmarkVerify(b *testing.B) {
	ks := testKeys()
	iss := newFakeIssuer(b, "", defaultKeys(b)...)
	clk := newFakeClock()
	v := newVerifier(b, iss.config(clk))
	for _, s := range []signer{ks.rsa, ks.ec, ks.ed} {
		token := mint(b, s, iss.Issuer, clk.Now())
		if got := v.Verify(b.Context(), token); !got.Admitted() {
			b.Fatalf("%s: Verify = %+v; want admitted", s.alg, got)
		}
		b.Run(string(s.alg), func(b *testing.B) {
			b.ReportAllocs()
			ctx := b.Context()
			for b.Loop() {
				if got := v.Verify(ctx, token); !got.Admitted() {
					b.Fatalf("Verify = %+v", got)
				}
			}
		})
	}
	if n := iss.jwksFetches(); n != 1 {
		b.Errorf("%d key-set fetches; want 1", n)
	}
}
