package ports

import (
	"context"
	"time"
)

// Refusal words of the access-token verifier (docs/SPEC.md §7) and the remote host's
// own missing-token (§5.3). They are the whole vocabulary: a verdict carries
// one of them and nothing taken from the token.
type RefusalReason string

const (
	RefusalMissingToken        RefusalReason = "missing-token"
	RefusalOversize            RefusalReason = "oversize"
	RefusalMalformed           RefusalReason = "malformed"
	RefusalWrongType           RefusalReason = "wrong-type"
	RefusalUnsupportedAlg      RefusalReason = "unsupported-algorithm"
	RefusalAmbiguousKey        RefusalReason = "ambiguous-key"
	RefusalUnknownKey          RefusalReason = "unknown-key"
	RefusalKeyMismatch         RefusalReason = "key-mismatch"
	RefusalBadSignature        RefusalReason = "bad-signature"
	RefusalWrongIssuer         RefusalReason = "wrong-issuer"
	RefusalWrongAudience       RefusalReason = "wrong-audience"
	RefusalExpired             RefusalReason = "expired"
	RefusalNotYetValid         RefusalReason = "not-yet-valid"
	RefusalMissingScope        RefusalReason = "missing-scope"
	RefusalPrincipalNotAllowed RefusalReason = "principal-not-allowed"
	RefusalKeysUnavailable     RefusalReason = "keys-unavailable"
)

// Principal is who an admitted access token speaks for (docs/SPEC.md §7).
type Principal struct {
	Issuer  string
	Subject string // the token's sub
	Client  string // the token's client_id
}

// Verdict is the outcome of one verification: Refusal is empty when the token
// was admitted, and then Principal is set. Expiry is the token's exp (Unix
// seconds) for an admitted token, so a host may cache the verdict until then.
type Verdict struct {
	Principal Principal
	Refusal   RefusalReason
	Expiry    int64
}

// Admitted reports whether the token was admitted.
func (v Verdict) Admitted() bool { return v.Refusal == "" }

// VerifierDescription is what a verifier checks, so a host can refuse a
// verifier configured for another issuer, resource or scope set.
type VerifierDescription struct {
	Issuer   string
	Resource string
	Scopes   []string
}

// AccessTokenVerifier decides whether an OAuth access token admits a request
// to this protected resource (docs/SPEC.md §7). Verify never panics and never returns
// text taken from the token. It is safe for concurrent use.
type AccessTokenVerifier interface {
	Verify(ctx context.Context, token string) Verdict
	Describe() VerifierDescription
}

// KeyRefreshReporter is optionally implemented by an AccessTokenVerifier that
// holds its issuer's keys: NextKeyRefresh returns when the keys it holds now
// are next refreshed (the zero time when it holds none). A host that caches
// successful verifications caches none past that instant nor past the
// token's exp (docs/SPEC.md §5.3: "until the earlier of its exp and the next key
// refresh"), so a withdrawn key stops admitting when the verifier would stop
// admitting it.
type KeyRefreshReporter interface {
	NextKeyRefresh() time.Time
}

// KeyReadiness is optionally implemented by an AccessTokenVerifier that
// fetches its issuer's keys: KeysReady reports whether it holds usable keys,
// fetching them first when it holds none and no fetch ran lately (waiting
// at most until ctx ends). A host's readiness probe asks it (docs/SPEC.md
// §13).
type KeyReadiness interface {
	KeysReady(ctx context.Context) bool
}
