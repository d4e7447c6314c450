package workspace_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/agentmcp/agentmcp/adapters/workspace"
)

// worstPatterns are costly search_text patterns within MaxPatternInsts, on
// a line of ASCII letters: 4 to 30 ms per KiB (see CancelCheckBytes), so 5
// to 30 seconds for one 1 MiB line matched in one piece.
var worstPatterns = []string{`(a|aa){0,120}b`, `(?:a?){400}b`, `(a*){200}b`, `(?:(?:a|\pL)*){498}b`, `(?:\pL*\pL*){249}b`}

// TestSearchTextCancellationWithinALine cancels search_text while it matches
// one line of 1 MiB against the costliest patterns (seconds of work each):
// the matcher must read no further than the next cancellation check —
// nothing when the cancellation comes as the line starts, at most
// LineCheckBytes (and a rune) past where it came while matching. The bound
// is on the work done after the cancellation, not on a clock: the same on
// a loaded machine as on an idle one.
func TestSearchTextCancellationWithinALine(t *testing.T) {
	s, _ := newSession(t, map[string]string{"long.txt": strings.Repeat("a", workspace.MaxSearchFileBytes)})
	const cancelAt = 8 << 10 // bytes into the line, while matching
	for _, pattern := range worstPatterns {
		for _, during := range []bool{false, true} {
			name := pattern + " as the line starts"
			if during {
				name = pattern + " while matching"
			}
			t.Run(name, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				cancelledAt, last := -1, -1 // offsets in the line; the hooks run on the search's goroutine
				var once sync.Once
				workspace.SetBeforeMatch(s, func(rel string, line int) {
					if !during {
						once.Do(func() { cancelledAt = 0; cancel() })
					}
				})
				workspace.SetLineCheck(s, func(off int) {
					last = off
					if during && off >= cancelAt {
						once.Do(func() { cancelledAt = off; cancel() })
					}
				})
				defer workspace.SetBeforeMatch(s, nil)
				defer workspace.SetLineCheck(s, nil)

				env := invokeCtx(t, ctx, s, "search_text", `{"pattern":`+quote(pattern)+`,"path":"long.txt"}`, nil)
				if cancelledAt < 0 {
					t.Fatalf("the line was never matched far enough to cancel: %+v", env)
				}
				if read := last - cancelledAt; read < 0 || read > workspace.LineCheckBytes+utf8.UTFMax {
					t.Errorf("the matcher read %d bytes after the cancellation (at byte %d), want at most %d", read, cancelledAt, workspace.LineCheckBytes+utf8.UTFMax)
				}
				fail(t, env, "search_text was cancelled")
			})
		}
	}
}

// TestSearchTextLongLines: lines longer than CancelCheckBytes are matched
// whole, as short ones are: anchors, word boundaries and matches anywhere
// in the line (the very end included) find what regexp finds on the line.
func TestSearchTextLongLines(t *testing.T) {
	unit := workspace.CancelCheckBytes
	lines := []string{
		strings.Repeat("x", 3*unit) + "needle",
		"needle" + strings.Repeat("y", 3*unit),
		strings.Repeat("x", unit-3) + "needle" + strings.Repeat("x", unit), // across the first check
		strings.Repeat("é", 2*unit) + "needle",                             // runes across the checks
		strings.Repeat("z", 2*unit) + "\xff\xfe" + "needle",                // invalid UTF-8
		strings.Repeat("ab ", unit) + "Needle " + strings.Repeat("ab ", unit),
		"short needle",
		strings.Repeat("q", 50_000),
		strings.Repeat("w", unit),
		strings.Repeat("w", unit+1),
		"",
	}
	content := strings.Join(lines, "\n") + "\n"
	s, _ := newSession(t, map[string]string{"long.txt": content})
	for _, pattern := range []string{
		`needle`, `needle$`, `^needle`, `\bneedle\b`, `\Bneedle`, `(?i)NEEDLE\s`, `y$`, `^x+needle$`,
		`é+needle`, `\x{FFFD}\x{FFFD}needle`, `q$`, `^q`, `^w+$`, `^w{500}w+$`, `^$`, `a.*b.*N`, `(?:\pL+|){5}e$`,
	} {
		re := regexp.MustCompile(pattern)
		var want []string
		for i, line := range lines {
			if re.MatchString(line) {
				want = append(want, fmt.Sprintf("long.txt:%d", i+1))
			}
		}
		var res searchResult
		succeed(t, invoke(t, s, "search_text", `{"pattern":`+quote(pattern)+`,"path":"long.txt"}`, nil), &res)
		var got []string
		for _, m := range res.Matches {
			got = append(got, fmt.Sprintf("%s:%d", m.Path, m.Line))
		}
		if !slices.Equal(got, want) {
			t.Errorf("search_text %q matched lines %q, want %q", pattern, got, want)
		}
	}
}
