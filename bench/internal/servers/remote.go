package servers

import (
	"context"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/agentmcp/agentmcp/bench/internal/accesstoken"
)

// The remote host's fixed identity in the bench. The public URL's host is a
// reserved test name (RFC 6761): requests reach the listener on 127.0.0.1
// and carry it as their Host header, as they would through a proxy.
const (
	RemotePublicURL = "https://agentmcp.bench.test/mcp"
	RemoteScope     = "mcp:tools"
	RemoteSubject   = "bench-user"
	RemoteClientID  = "bench-client"
	remoteKeyID     = "bench-key-1"
)

// Remote is how to mint the tokens the remote host admits: the claims and
// the issuer's private key (a throwaway key made when the server starts).
type Remote struct {
	accesstoken.Claims
	// KeyPEM is the PKCS #8 private key. benchserver writes it to a file
	// for the load generator rather than printing it.
	KeyPEM []byte
	// CacheSize is the host's verdict cache size: a pool of more distinct
	// tokens than this, used in turn, is verified in full on every request.
	CacheSize int
}

// startRemote starts an issuer (an httptest TLS server publishing RFC 8414
// metadata and a JWK Set with one RS256 key) and agentmcp's remote host
// trusting it.
func startRemote(ctx context.Context) (*HTTP, error) {
	key, err := accesstoken.NewKey()
	if err != nil {
		return nil, err
	}
	iss, err := startIssuer(key)
	if err != nil {
		return nil, err
	}
	addr, stop, err := startAgentmcpRemote(ctx, remoteConfig{
		PublicURL: RemotePublicURL, Issuer: iss.URL, Scope: RemoteScope, Subject: RemoteSubject,
		IssuerClient: iss.Client(),
	})
	if err != nil {
		iss.Close()
		return nil, err
	}
	pemKey, err := accesstoken.EncodeKey(key)
	if err != nil {
		_ = stop(ctx)
		iss.Close()
		return nil, err
	}
	return &HTTP{
		Name: AgentmcpRemote,
		URL:  "http://" + addr + "/mcp",
		Host: hostOf(RemotePublicURL),
		Remote: &Remote{
			Claims: accesstoken.Claims{Issuer: iss.URL, Audience: RemotePublicURL, Subject: RemoteSubject,
				ClientID: RemoteClientID, Scope: RemoteScope, KeyID: remoteKeyID},
			KeyPEM:    pemKey,
			CacheSize: agentmcpVerdictCache,
		},
		stop: []func(context.Context) error{stop, func(context.Context) error { iss.Close(); return nil }},
	}, nil
}

// startIssuer serves, over TLS on 127.0.0.1, the authorization server
// metadata (RFC 8414 §3) at /.well-known/oauth-authorization-server and the
// JWK Set (RFC 7517 §5) it names, holding key's public half.
func startIssuer(key *rsa.PrivateKey) (*httptest.Server, error) {
	jwks, err := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
		Key: &key.PublicKey, KeyID: remoteKeyID, Algorithm: string(jose.RS256), Use: "sig",
	}}})
	if err != nil {
		return nil, err
	}
	srv := httptest.NewUnstartedServer(nil)
	base := "https://" + srv.Listener.Addr().String() // what StartTLS makes srv.URL
	metadata, err := json.Marshal(map[string]any{
		"issuer":                                base,
		"jwks_uri":                              base + "/jwks",
		"authorization_endpoint":                base + "/authorize",
		"token_endpoint":                        base + "/token",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "client_credentials"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none"},
	})
	if err != nil {
		srv.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(metadata)
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(jwks)
	})
	srv.Config.Handler = mux
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	if srv.URL != base {
		srv.Close()
		return nil, fmt.Errorf("servers: issuer at %s, not %s", srv.URL, base)
	}
	return srv, nil
}
