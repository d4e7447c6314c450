// Package accesstoken mints the RFC 9068 JWT access tokens the bench
// presents to agentmcp's remote host: header typ "at+jwt", alg RS256 and a
// kid; claims iss, aud (the host's public URL), exp, iat, sub, client_id,
// scope and a unique jti, so that every token is a different string.
package accesstoken

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Claims are the fixed claims of every token.
type Claims struct {
	Issuer   string `json:"issuer"`
	Audience string `json:"audience"`
	Subject  string `json:"subject"`
	ClientID string `json:"clientID"`
	Scope    string `json:"scope"`
	KeyID    string `json:"kid"`
}

// Lifetime is every token's exp minus its iat: long enough for any run.
const Lifetime = 2 * time.Hour

// NewKey makes a fresh 2048-bit RSA key, the smallest the verifier accepts
// for RS256.
func NewKey() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) }

// EncodeKey returns key as a PKCS #8 PEM block.
func EncodeKey(key *rsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// DecodeKey reads an RSA key from a PKCS #8 PEM block.
func DecodeKey(p []byte) (*rsa.PrivateKey, error) {
	b, _ := pem.Decode(p)
	if b == nil || b.Type != "PRIVATE KEY" {
		return nil, errors.New("accesstoken: no PRIVATE KEY PEM block")
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, err
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("accesstoken: a %T, want an RSA key", k)
	}
	return rk, nil
}

// Minter signs tokens with one key.
type Minter struct {
	signer jose.Signer
	c      Claims
	now    func() time.Time
}

// NewMinter returns a Minter signing with key under c.KeyID.
func NewMinter(key *rsa.PrivateKey, c Claims) (*Minter, error) {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: c.KeyID}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		return nil, err
	}
	return &Minter{signer: s, c: c, now: time.Now}, nil
}

type claims struct {
	Iss      string `json:"iss"`
	Aud      string `json:"aud"`
	Exp      int64  `json:"exp"`
	Iat      int64  `json:"iat"`
	Sub      string `json:"sub"`
	ClientID string `json:"client_id"`
	Scope    string `json:"scope"`
	Jti      string `json:"jti"`
}

// Mint returns a compact JWS access token whose jti is n.
func (m *Minter) Mint(n uint64) (string, error) {
	now := m.now()
	payload, err := json.Marshal(claims{
		Iss: m.c.Issuer, Aud: m.c.Audience, Sub: m.c.Subject, ClientID: m.c.ClientID, Scope: m.c.Scope,
		Iat: now.Unix(), Exp: now.Add(Lifetime).Unix(), Jti: strconv.FormatUint(n, 10),
	})
	if err != nil {
		return "", err
	}
	jws, err := m.signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}
