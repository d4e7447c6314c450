package app

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/agentmcp/agentmcp/adapters/httpremote"
	"github.com/agentmcp/agentmcp/adapters/oauth"
	"github.com/agentmcp/agentmcp/ports"
)

// RemoteAccess is what the access-token verifier needs beyond the host's
// [httpremote.Authorization]: whom it admits, and how it reaches the
// issuer. See [oauth.Config] for each field.
type RemoteAccess struct {
	// AllowedSubjects are the token sub values admitted; AllowedClients the
	// client_id values admitted whatever the sub (meant for confidential or
	// machine clients: a public client's id admits every user of that
	// client). At least one entry in all (docs/SPEC.md §7).
	AllowedSubjects, AllowedClients []string
	// Algorithms limits the accepted signature algorithms to a subset of
	// RS256, ES256 and EdDSA; empty means all three.
	Algorithms []string
	// HTTPClient fetches the issuer's metadata and keys; nil means
	// http.DefaultTransport's settings, which trust the system's
	// certificate pool (so SSL_CERT_FILE / SSL_CERT_DIR name a private CA).
	HTTPClient *http.Client
}

// ErrVerifierGiven is NewRemote's error when opts.Authorization.Verifier is
// set: NewRemote builds the verifier itself.
var ErrVerifierGiven = errors.New("app: NewRemote builds the verifier: leave Authorization.Verifier nil")

// NewRemote returns the remote Streamable HTTP host (docs/SPEC.md §5.3) serving
// session, with the access-token verifier of adapters/oauth (docs/SPEC.md §7) built
// from the same values: opts.Authorization's Issuer, PublicURL (the
// verifier's Resource, the audience tokens must name) and Scopes (its
// RequiredScopes), plus access. The verifier's Describe() therefore always
// agrees with the host. opts.Session is replaced by session.
//
// It fails with ErrVerifierGiven; an error wrapping [oauth.ErrInvalidConfig]
// (no allowed subject or client, an issuer that is not https, an
// unsupported algorithm, ...); or [httpremote.New]'s errors (a public URL
// that is not canonical, a bind address that is not a literal IP, ...).
// Nothing is bound and no network is touched until the host's Start; the
// issuer's keys are fetched on the first verification.
func NewRemote(session ports.Session, opts httpremote.Options, access RemoteAccess) (*httpremote.Host, error) {
	a := opts.Authorization
	if a.Verifier != nil {
		return nil, ErrVerifierGiven
	}
	v, err := oauth.NewVerifier(oauth.Config{
		Issuer:          a.Issuer,
		Resource:        a.PublicURL,
		Algorithms:      access.Algorithms,
		RequiredScopes:  a.Scopes,
		AllowedSubjects: access.AllowedSubjects,
		AllowedClients:  access.AllowedClients,
		HTTPClient:      access.HTTPClient,
	})
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	opts.Session = session
	opts.Authorization.Verifier = v
	return httpremote.New(opts)
}
