package workspace_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/workspace"
)

// worstPatterns are costly search_text patterns within MaxPatternInsts, on
// a line of ASCII letters: 4 to 30 ms per KiB (see CancelCheckBytes), so 5
// to 30 seconds for one 1 MiB line matched in one piece.
var worstPatterns = []string{`(a|aa){0,120}b`, `(?:a?){400}b`, `(a*){200}b`, `(?:(?:a|\pL)*){498}b`, `(?:\pL*\pL*){249}b`}

// cancelBound is how long a cancelled search_text may take to return: a
// generous bound, several times the work between two checks even under the
// race detector, and a fifth of what one of these lines took to match before
// the search checked for cancellation within a line.
const cancelBound = time.Second

// TestSearchTextCancellationWithinALine cancels search_text while it matches
// one line of 1 MiB against the costliest patterns: the call must return
// within cancelBound, whether the cancellation comes as the line starts or
// while it is being matched.
func TestSearchTextCancellationWithinALine(t *testing.T) {
	s, _ := newSession(t, map[string]string{"long.txt": strings.Repeat("a", workspace.MaxSearchFileBytes)})
	for _, pattern := range worstPatterns {
		for _, during := range []bool{false, true} {
			name := pattern + " as the line starts"
			if during {
				name = pattern + " while matching"
			}
			t.Run(name, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				cancelled := make(chan time.Time, 1)
				cancelNow := func() {
					cancelled <- time.Now()
					cancel()
				}
				var once sync.Once
				workspace.SetBeforeMatch(s, func(rel string, line int) {
					once.Do(func() {
						if !during {
							cancelNow()
							return
						}
						go cancelNow() // lands while the line is being matched
					})
				})
				defer workspace.SetBeforeMatch(s, nil)

				env := invokeCtx(t, ctx, s, "search_text", `{"pattern":`+quote(pattern)+`,"path":"long.txt"}`, nil)
				returned := time.Now()
				if !env.Success && !strings.Contains(env.Error, "cancelled") {
					t.Fatalf("the line was never matched: %s", env.Error)
				}
				at := await(t, cancelled, "the cancellation")
				took := returned.Sub(at)
				t.Logf("returned %v after the cancellation", took.Round(time.Microsecond))
				if took > cancelBound {
					t.Errorf("returned %v after the cancellation, want at most %v", took.Round(time.Millisecond), cancelBound)
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
