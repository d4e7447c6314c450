package workspace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/ports/porttest"
)

type findResult struct {
	Pattern   string   `json:"pattern"`
	Path      string   `json:"path"`
	Files     []string `json:"files"`
	Truncated bool     `json:"truncated"`
	Stopped   string   `json:"stopped"`
	Ignored   int      `json:"ignored"`
	Skipped   int      `json:"skipped"`
}

func find(t *testing.T, s *workspace.Session, args string) findResult {
	t.Helper()
	var res findResult
	succeed(t, invoke(t, s, "find_files", args, nil), &res)
	return res
}

func TestFindFiles(t *testing.T) {
	s, root := newSession(t, map[string]string{
		"main.go":                "",
		"README.md":              "",
		"cmd/tool/main.go":       "",
		"cmd/tool/main_test.go":  "",
		"internal/a/b/c/deep.go": "",
		"build/out.go":           "",
		"logs/x.log":             "",
		"logs/keep.log":          "",
		"vendor/v.go":            "",
		"sub/.gitignore":         "local.go\n",
		"sub/local.go":           "",
		"sub/kept.go":            "",
		".git/objects/x.go":      "",
		".gitignore":             "# build output\n/build/\n*.log\n!keep.log\nvendor\n",
		"a[1]/x.go":              "",
	})
	if err := os.Symlink("main.go", filepath.Join(root, "link.go")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args string
		want []string
	}{
		{`{"pattern":"**/*.go"}`, []string{"a[1]/x.go", "cmd/tool/main.go", "cmd/tool/main_test.go", "internal/a/b/c/deep.go", "link.go", "main.go", "sub/kept.go"}},
		{`{"pattern":"*.go"}`, []string{"link.go", "main.go"}},
		{`{"pattern":"cmd/**/main*.go"}`, []string{"cmd/tool/main.go", "cmd/tool/main_test.go"}},
		{`{"pattern":"**/*.log"}`, []string{"logs/keep.log"}},
		{`{"pattern":"**/*.go","path":"cmd"}`, []string{"cmd/tool/main.go", "cmd/tool/main_test.go"}},
		{`{"pattern":"*.go","path":"a[1]"}`, []string{"a[1]/x.go"}},
		{`{"pattern":"**/*.go","path":"sub"}`, []string{"sub/kept.go"}},
		{`{"pattern":"**/*.{md,log}"}`, []string{"README.md", "logs/keep.log"}},
		{`{"pattern":"nothing/**"}`, []string{}},
		{`{"pattern":"**/*.go","include_ignored":true}`, []string{"a[1]/x.go", "build/out.go", "cmd/tool/main.go", "cmd/tool/main_test.go", "internal/a/b/c/deep.go", "link.go", "main.go", "sub/kept.go", "sub/local.go", "vendor/v.go"}},
	} {
		res := find(t, s, tc.args)
		if !slices.Equal(res.Files, tc.want) {
			t.Errorf("%s: files %q, want %q", tc.args, res.Files, tc.want)
		}
	}
	for _, tc := range []struct{ args, want string }{
		{`{"pattern":"/etc/*"}`, "must be relative"},
		{`{"pattern":"[abc"}`, "not a valid glob"},
		{`{"pattern":"*","path":"../x"}`, "escapes the workspace root"},
		{`{"pattern":"*","path":"main.go"}`, "is not a directory"},
		{`{"pattern":"../*"}`, "escapes the workspace root"},
	} {
		fail(t, invoke(t, s, "find_files", tc.args, nil), tc.want)
	}
}

func TestFindFilesCap(t *testing.T) {
	files := map[string]string{}
	for i := range workspace.MaxFindResults + 5 {
		files[fmt.Sprintf("d/f%05d.txt", i)] = ""
	}
	s, _ := newSession(t, files)
	res := find(t, s, `{"pattern":"**"}`)
	if !res.Truncated || res.Stopped != "results" || len(res.Files) != workspace.MaxFindResults {
		t.Errorf("truncated %v (%q), %d files; want truncated by results at %d", res.Truncated, res.Stopped, len(res.Files), workspace.MaxFindResults)
	}
	if !slices.IsSorted(res.Files) || res.Files[0] != "d/f00000.txt" {
		t.Errorf("results not sorted from the first: %q…", res.Files[:3])
	}
}

// TestFindFilesCancellation: a cancelled walk ends with the cancellation,
// not a result.
func TestFindFilesCancellation(t *testing.T) {
	s, _ := newSession(t, manyFiles("many", 50))
	ctx, cancel := context.WithCancel(t.Context())
	workspace.SetBeforeOpen(s, func(rel string) {
		if rel == "many" {
			cancel()
		}
	})
	fail(t, invokeCtx(t, ctx, s, "find_files", `{"pattern":"**"}`, &porttest.Recorder{}), "find_files was cancelled")
}

// TestFindFilesNeverEntersGit: no pattern or path reaches into a .git
// directory, the root's or a nested repository's: not ".git/**", not a
// path of ".git" or beneath it, not a pattern naming a file inside
// (issue 32; docs/SPEC.md §9 "Editing and finding").
func TestFindFilesNeverEntersGit(t *testing.T) {
	s, _ := newSession(t, map[string]string{
		"main.go":               "",
		".git/config":           "[core]\n",
		".git/hooks/pre-commit": "",
		".git/objects/x.go":     "",
		"sub/.git/config":       "",
		"sub/kept.go":           "",
	})
	for _, args := range []string{
		`{"pattern":".git/**"}`, `{"pattern":"**","path":".git"}`, `{"pattern":"*","path":".git/hooks"}`,
		`{"pattern":".git/config"}`, `{"pattern":"**/config"}`, `{"pattern":"sub/.git/*"}`,
		`{"pattern":"**","path":"sub/.git"}`, `{"pattern":"./.git/**"}`, `{"pattern":"**","include_ignored":true}`,
	} {
		for _, f := range find(t, s, args).Files {
			if slices.Contains(strings.Split(f, "/"), ".git") {
				t.Errorf("find_files %s listed %s", args, f)
			}
		}
	}
	if got := find(t, s, `{"pattern":"**"}`).Files; !slices.Equal(got, []string{"main.go", "sub/kept.go"}) {
		t.Errorf("** = %v", got)
	}
}
