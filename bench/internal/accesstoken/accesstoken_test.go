package accesstoken

import (
	"encoding/json"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// A minted token is an RFC 9068 access token: typ at+jwt, RS256, the kid,
// and the claims; it verifies under the public key; two tokens differ.
func TestMint(t *testing.T) {
	key, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	p, err := EncodeKey(key)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeKey(p)
	if err != nil || !back.Equal(key) {
		t.Fatalf("key round trip: %v", err)
	}
	c := Claims{Issuer: "https://127.0.0.1:1", Audience: "https://a.bench.test/mcp", Subject: "s", ClientID: "c", Scope: "mcp:tools", KeyID: "k1"}
	m, err := NewMinter(back, c)
	if err != nil {
		t.Fatal(err)
	}
	tok1, err := m.Mint(1)
	if err != nil {
		t.Fatal(err)
	}
	tok2, _ := m.Mint(2)
	if tok1 == tok2 {
		t.Fatal("two tokens are the same string")
	}
	jws, err := jose.ParseSignedCompact(tok1, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	h := jws.Signatures[0].Header
	if h.Algorithm != "RS256" || h.KeyID != "k1" || h.ExtraHeaders["typ"] != "at+jwt" {
		t.Errorf("header %+v", h)
	}
	payload, err := jws.Verify(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(payload, &got); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"iss": c.Issuer, "aud": c.Audience, "sub": "s", "client_id": "c", "scope": "mcp:tools", "jti": "1"} {
		if got[k] != v {
			t.Errorf("%s = %v, want %s", k, got[k], v)
		}
	}
	exp, _ := got["exp"].(float64)
	if d := time.Until(time.Unix(int64(exp), 0)); d < Lifetime-time.Minute || d > Lifetime {
		t.Errorf("exp in %v", d)
	}
}
