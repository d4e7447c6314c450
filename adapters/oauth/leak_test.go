package oauth_test

import (
	"fmt"
	"log"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/internal/syncbuf"

	"github.com/agentmcp/agentmcp/ports"
)

// vocabulary is the closed set of verifier refusals (docs/SPEC.md §7).
var vocabulary = []ports.RefusalReason{
	ports.RefusalOversize, ports.RefusalMalformed, ports.RefusalWrongType,
	ports.RefusalUnsupportedAlg, ports.RefusalAmbiguousKey, ports.RefusalUnknownKey,
	ports.RefusalKeyMismatch, ports.RefusalBadSignature, ports.RefusalWrongIssuer,
	ports.RefusalWrongAudience, ports.RefusalExpired, ports.RefusalNotYetValid,
	ports.RefusalMissingScope, ports.RefusalPrincipalNotAllowed, ports.RefusalKeysUnavailable,
}

// TestNoTokenTextInVerdictsOrLogs runs every refusal row with the standard
// and slog loggers captured: each verdict must be one word of the
// vocabulary and nothing else, and neither verdicts nor logs may contain the
// token, a part of it or a claim value. It changes process-wide loggers, so
// it does not run in parallel.
func TestNoTokenTextInVerdictsOrLogs(t *testing.T) {
	var logs syncbuf.Buffer
	prevWriter, prevFlags, prevSlog := log.Writer(), log.Flags(), slog.Default()
	log.SetOutput(&logs)
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() {
		log.SetOutput(prevWriter)
		log.SetFlags(prevFlags)
		slog.SetDefault(prevSlog)
	})

	// Claim values the rows put in tokens.
	secrets := []string{testSubject, testClient, "mallory", "token-id-1", "trusted-client", "unlisted-client",
		"evil.example", "other.example", "openid", "rsa-attacker"}
	refusals := 0
	for _, row := range verifyRows() {
		if row.want == "" {
			continue
		}
		refusals++
		t.Run(row.name, func(t *testing.T) {
			got, _, token := runRow(t, row)
			if !slices.Contains(vocabulary, got.Refusal) {
				t.Fatalf("refusal %q is not in the vocabulary", got.Refusal)
			}
			if got != (ports.Verdict{Refusal: got.Refusal}) {
				t.Errorf("refused verdict carries more than its word: %+v", got)
			}
			text := fmt.Sprintf("%#v", got)
			for _, s := range append(tokenPieces(token), secrets...) {
				if strings.Contains(text, s) {
					t.Errorf("verdict %s contains token text %q", text, s)
				}
			}
			secrets = append(secrets, tokenPieces(token)...)
		})
	}
	if refusals < 50 {
		t.Fatalf("only %d refusal rows ran; the table lost rows", refusals)
	}
	out := logs.String()
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("a log line contains token text or a claim value %q:\n%s", s, out)
			break
		}
	}
}

// tokenPieces returns the token and its dot-separated parts, the ones long
// enough to be recognisable.
func tokenPieces(token string) []string {
	var pieces []string
	for _, p := range append(strings.Split(token, "."), token) {
		if len(p) >= 8 {
			pieces = append(pieces, p)
		}
	}
	return pieces
}
