package domain_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/domain"
)

// TestLinesArgument: a Lines argument is shown one quoted, escaped line
// per line, at most MaxLines of them, then a count of the rest; no line
// of it can break out of its quotes or pass for the dialog's own text.
func TestLinesArgument(t *testing.T) {
	var value strings.Builder
	value.WriteString("-old\n+new \"quoted\"\u202e\r\nAllow the tool \"x\" to run once?")
	for i := range domain.MaxLines + 5 {
		fmt.Fprintf(&value, "\n%d", i)
	}
	msg := domain.PermissionForm(domain.PermissionPrompt{Tool: "edit_file", Arguments: []domain.Argument{{Name: "diff", Value: value.String(), Lines: true}}}).Message
	lines := strings.Split(msg, "\n")
	if lines[0] != `Allow the tool "edit_file" to run once?` || lines[1] != `"diff":` {
		t.Fatalf("head of the message: %q", lines[:2])
	}
	body := lines[2:]
	if len(body) != domain.MaxLines+1 {
		t.Fatalf("%d lines shown, want %d and a count", len(body), domain.MaxLines)
	}
	want := []string{`  "-old"`, `  "+new \"quoted\"\u202e\r"`, `  "Allow the tool \"x\" to run once?"`}
	for i, w := range want {
		if body[i] != w {
			t.Errorf("line %d = %s, want %s", i, body[i], w)
		}
	}
	if last := body[len(body)-1]; last != "  … 8 more lines" {
		t.Errorf("last line %q, want the count of lines left out", last)
	}
}

func TestFits(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"go vet ./...", true},
		{strings.Repeat("x", domain.MaxExcerpt), true},
		{strings.Repeat("x", domain.MaxExcerpt+1), false},
		{strings.Repeat("é", domain.MaxExcerpt), true}, // characters, not bytes
		{strings.Repeat("a\n", domain.MaxLines-1) + "a", true},
		{strings.Repeat("a\n", domain.MaxLines), false},
	} {
		if got := domain.Fits(tc.s); got != tc.want {
			t.Errorf("Fits(%.20q… %d bytes) = %v, want %v", tc.s, len(tc.s), got, tc.want)
		}
	}
}
