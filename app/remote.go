package app

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/agentmcp/agentmcp/adapters/httpremote"
	"github.com/agentmcp/agentmcp/adapters/oauth"
	"github.com/agentmcp/agentmcp/engine"
)

// RemoteAccess is what the access-token verifier checks: the resource's
// identity (which the host then advertises: the verifier is its one source,
// docs/SPEC.md §5.3), whom it admits, and how it reaches the issuer. See
// [oauth.Config] for each field.
type RemoteAccess struct {
	// PublicURL is the https URL clients use: the resource identifier and
	// the audience tokens must name (oauth.Config.Resource).
	PublicURL string
	// Issuer is the authorization server's https issuer identifier.
	Issuer string
	// Scopes are the scopes every token must carry (RequiredScopes).
	Scopes []string
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
// set: NewRemote builds the verifier itself, from access.
var ErrVerifierGiven = errors.New("app: NewRemote builds the verifier: leave Authorization.Verifier nil")

// NewRemote returns the remote Streamable HTTP host (docs/SPEC.md §5.3)
// serving eng, with the access-token verifier of adapters/oauth
// (docs/SPEC.md §7) built from access; the host takes its public URL,
// issuer and scopes from that verifier.
//
// It fails with ErrVerifierGiven; an error wrapping [oauth.ErrInvalidConfig]
// (no allowed subject or client, an issuer that is not https, an
// unsupported algorithm, ...); or [httpremote.New]'s errors (a public URL
// that is not canonical, a bind address that is not a literal IP, ...).
// Nothing is bound and no network is touched until the host's Start; the
// issuer's keys are fetched on the first verification.
func NewRemote(eng *engine.Engine, opts httpremote.Options, access RemoteAccess) (*httpremote.Host, error) {
	if opts.Authorization.Verifier != nil {
		return nil, ErrVerifierGiven
	}
	v, err := access.verifier()
	if err != nil {
		return nil, err
	}
	opts.Authorization.Verifier = v
	return httpremote.New(eng, opts)
}

// verifier is the adapters/oauth verifier access describes.
func (access RemoteAccess) verifier() (*oauth.Verifier, error) {
	v, err := oauth.NewVerifier(oauth.Config{
		Issuer:          access.Issuer,
		Resource:        access.PublicURL,
		Algorithms:      access.Algorithms,
		RequiredScopes:  access.Scopes,
		AllowedSubjects: access.AllowedSubjects,
		AllowedClients:  access.AllowedClients,
		HTTPClient:      access.HTTPClient,
	})
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	return v, nil
}
