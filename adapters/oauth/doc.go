// Package oauth is the access-token verifier of docs/SPEC.md §7: it decides whether
// an OAuth 2.0 bearer token presented to the remote host is a JWT access
// token (RFC 9068) that one authorization server issued for this protected
// resource, to a subject or client this host admits. It implements
// [ports.AccessTokenVerifier] on github.com/go-jose/go-jose/v4, which does
// all JOSE parsing and signature work.
//
// # Refusals, in the order they are checked
//
// [Verifier.Verify] returns either the admitted principal or exactly one of
// these words, never text taken from the token, a claim value or an error
// message. Verification stops at the first refusal.
//
//   - malformed — the token is empty. (Also, below: the JOSE header or the
//     payload cannot be decoded, a header has the wrong JSON type, a crit
//     header is present, a required claim is missing or has the wrong type.)
//   - oversize — the token is longer than [MaxTokenBytes] (8192 bytes). It
//     is not parsed and nothing touches the network.
//   - wrong-type — the header's typ, lower-cased and stripped of an
//     "application/" prefix, is not "at+jwt". RFC 9068 §2.1 and §4 require
//     resource servers to check it, and RFC 8725 §3.11 explains why: it
//     keeps an OpenID Connect ID token (typ "JWT") or any other JWT the
//     issuer signs from being replayed as an access token. No network is
//     touched for such a token.
//   - unsupported-algorithm — alg is not one of the configured algorithms
//     (RS256, ES256, EdDSA at most). RFC 8725 §3.1–§3.2: the algorithm is
//     allow-listed, so "none" and HS256 — even a token whose HMAC key is the
//     issuer's published public key — never reach a key.
//   - malformed — a crit header is present (RFC 7515 §4.1.11: no extension
//     is understood here, and an unencoded RFC 7797 payload is no JWT). The
//     jku, x5u, jwk and x5c headers are never fetched or trusted (RFC 8725
//     §3.10: following them invites server-side request forgery and lets the
//     token choose its own key); keys come only from the issuer's published
//     key set.
//   - keys-unavailable — the issuer's keys cannot be had: discovery or the
//     key-set fetch failed and no keys younger than 60 minutes are cached,
//     or the caller's context ended while waiting for them.
//   - ambiguous-key — the token names no kid and the key set holds other
//     than exactly one key (RFC 7515 §4.1.4, RFC 7517 §4.5).
//   - unknown-key — no key in the set has the token's kid, even after the
//     one refetch an unknown kid may trigger.
//   - key-mismatch — no key with that kid fits: RS256 needs an RSA key of at
//     least 2048 bits, ES256 an EC P-256 key, EdDSA an OKP Ed25519 key (RFC
//     7518 §3.3–§3.4, RFC 8037 §3.1, RFC 8725 §3.2); a JWK alg member must equal
//     the token's alg, a use member must be "sig" and a key_ops member must
//     include "verify" (RFC 7517 §4.2–§4.4); a key-set entry carrying
//     private members (d and the like) is never used (RFC 7517 §9.2).
//   - bad-signature — the JWS signature does not verify under the key.
//   - wrong-issuer — iss is not exactly the configured issuer (RFC 9068 §4,
//     RFC 8414 §3.3, RFC 8725 §3.8).
//   - wrong-audience — aud, a string or an array of strings, does not name
//     the configured resource (RFC 9068 §4, RFC 8707 §2, RFC 8725 §3.9).
//   - malformed — exp is missing or not a number, or nbf is present and not
//     a number (RFC 9068 §2.2, RFC 7519 §4.1.4).
//   - expired — exp is more than [ClockSkew] (60 s) in the past.
//   - not-yet-valid — nbf is more than 60 s in the future.
//   - malformed — sub or client_id is missing, empty or not a string (RFC
//     9068 §2.2).
//   - missing-scope — a required scope is absent from the space-separated
//     scope claim (RFC 9068 §2.2.3, RFC 6749 §3.3). A scp claim never counts;
//     a scope claim that is not a string grants nothing.
//   - principal-not-allowed — the token is genuine but neither its sub is in
//     AllowedSubjects nor its client_id in AllowedClients; azp is not
//     consulted. This host is single-tenant: issuer, audience and scope alone
//     would admit anyone the issuer serves. AllowedClients is meant for
//     confidential or machine clients: a public client's id admits every
//     user of that client.
//
// # Keys
//
// Keys come from the issuer's JWK Set (RFC 7517 §5), found through its
// metadata. The URLs tried, in order, are
//
//	<origin>/.well-known/oauth-authorization-server<path>   (RFC 8414 §3.1)
//	<issuer>/.well-known/openid-configuration                (OpenID Connect Discovery 1.0 §4)
//
// where <path> is the issuer's path without a trailing slash; the second is
// asked on any failure of the first. A metadata document is used only if its
// issuer equals the configured one exactly (RFC 8414 §3.3) and its jwks_uri
// is https.
//
// Every fetch is https only, bounded to 10 s and 64 KiB, never follows a
// redirect and accepts status 200 only. A key set with more than 32 keys is
// refused whole; otherwise each entry is decoded on its own and one that
// cannot be decoded is skipped (RFC 7517 §5), so it does not take the others
// down. Only the issuer's own host may resolve to a private, loopback or other
// non-public address (see [Config.HTTPClient]).
//
// Keys are fetched on the first verification, never at construction. Before
// verifying, keys 10 minutes old or more (counted on the monotonic clock from
// the last successful fetch) are refreshed, metadata included, so a withdrawn
// key stops verifying within 10 minutes. Refreshes start at most once per
// 30 s, counted from the last attempt; concurrent callers share the one in
// flight, which runs on a context of its own, so a caller that gives up does
// not fail the others. A token whose kid the set lacks triggers at most that
// one refresh. A failed refresh keeps the previous keys until they are 60
// minutes old; from then on every token is keys-unavailable until a refresh
// succeeds.
//
// # Decisions where docs/SPEC.md §7 is silent
//
//   - Empty Algorithms means all three supported algorithms.
//   - A token without kid while the set holds no key is ambiguous-key, as
//     docs/SPEC.md §7 words it ("only when exactly one key is known").
//   - Token length is measured in bytes.
//   - iat is not consulted; jti is not tracked.
//   - aud as an array must hold strings only; any other element makes it
//     wrong-audience.
//   - A b64 header is refused as malformed like crit, since RFC 7797 makes
//     it critical.
//   - Each refresh rediscovers the metadata, so a moved jwks_uri is followed
//     within one refresh.
//   - A key-set entry without a string kty, with a non-string kid, or that
//     go-jose cannot decode (an unknown kty, an unsupported curve, bad
//     members) is skipped; an entry with a private member is kept but never
//     used, so its kid yields key-mismatch rather than a refetch.
//   - Verify recovers from an unexpected panic as malformed.
package oauth
