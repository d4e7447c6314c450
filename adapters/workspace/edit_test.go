package workspace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports/porttest"
)

type editResult struct {
	Path         string `json:"path"`
	Replacements int    `json:"replacements"`
	Bytes        int    `json:"bytes"`
	SHA256       string `json:"sha256"`
}

func editArgs(path, old, new string, all bool) string {
	return fmt.Sprintf(`{"path":%s,"old_text":%s,"new_text":%s,"replace_all":%t}`, quote(path), quote(old), quote(new), all)
}

// TestEditFileOneLineOfALargeFile changes one line of a 10,000-line file
// with one approval, keeps the file's mode, and shows the person a diff of
// exactly that line with its context, the engine's rendering included.
func TestEditFileOneLineOfALargeFile(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 10000; i++ {
		fmt.Fprintf(&b, "line %05d\n", i)
	}
	s, root := newSession(t, map[string]string{"big.txt": b.String()})
	if err := os.Chmod(filepath.Join(root, "big.txt"), 0o640); err != nil {
		t.Fatal(err)
	}
	c := &porttest.Recorder{Allow: true}
	var res editResult
	succeed(t, invoke(t, s, "edit_file", editArgs("big.txt", "line 05000\n", "line five thousand\n", false), c), &res)
	if res.Replacements != 1 {
		t.Errorf("replacements = %d, want 1", res.Replacements)
	}
	got, _ := os.ReadFile(filepath.Join(root, "big.txt"))
	want := strings.Replace(b.String(), "line 05000\n", "line five thousand\n", 1)
	if string(got) != want {
		t.Error("the file is not the original with that one line replaced")
	}
	if st, _ := os.Stat(filepath.Join(root, "big.txt")); st.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640 kept", st.Mode().Perm())
	}
	perms, asks := c.Requests()
	if len(perms) != 1 || len(asks) != 0 {
		t.Fatalf("%d permission prompts and %d asks, want exactly one permission prompt", len(perms), len(asks))
	}
	msg := domain.PermissionForm(perms[0]).Message
	for _, line := range []string{`"@@ -4997,7 +4997,7 @@"`, `" line 04999"`, `"-line 05000"`, `"+line five thousand"`, `" line 05001"`} {
		if !strings.Contains(msg, "\n  "+line+"\n") {
			t.Errorf("prompt lacks the diff line %s:\n%s", line, msg)
		}
	}
	if strings.Contains(msg, "line 04996") || strings.Contains(msg, "line 05004") {
		t.Errorf("prompt shows more than 3 lines of context:\n%s", msg)
	}
}

func TestEditFileRefusals(t *testing.T) {
	s, root := newSession(t, map[string]string{"a.txt": "one two two\n", "dir/x": "x"})
	if err := os.Symlink("a.txt", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	allow := &porttest.Recorder{Allow: true}
	for _, tc := range []struct {
		args, want string
	}{
		{editArgs("a.txt", "three", "3", false), "old_text was not found"},
		{editArgs("a.txt", "two", "2", false), "old_text occurs 2 times"},
		{editArgs("a.txt", "one", "one", false), "would change nothing"},
		{editArgs("a.txt", "", "x", false), "old_text must not be empty"},
		{editArgs("missing.txt", "a", "b", false), "no such file"},
		{editArgs("dir", "a", "b", false), "is a directory"},
		{editArgs("link", "one", "1", false), "symbolic link"},
		{editArgs("../a.txt", "one", "1", false), "escapes the workspace root"},
		{`{"path":"a.txt","old_text":"one"}`, `missing required argument "new_text"`},
		{`{"path":"a.txt","old_text":"one","new_text":"1","replace_all":"yes"}`, `"replace_all" must be a boolean`},
	} {
		fail(t, invoke(t, s, "edit_file", tc.args, allow), tc.want)
	}
	if perms, _ := allow.Requests(); len(perms) != 0 {
		t.Errorf("asked %d times for edits that cannot happen", len(perms))
	}
	// Denied, declined or unanswered: nothing changes.
	fail(t, invoke(t, s, "edit_file", editArgs("a.txt", "one", "1", false), &porttest.Recorder{}), "Permission denied")
	var res editResult
	succeed(t, invoke(t, s, "edit_file", editArgs("a.txt", "two", "2", true), allow), &res)
	if got, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(got) != "one 2 2\n" || res.Replacements != 2 {
		t.Errorf("replace_all: file %q, %d replacements", got, res.Replacements)
	}
}

// TestEditFileTargetChangedWhileAsking: the file changes (its content, or
// it is replaced by another file, or by a link) after the diff was shown
// and before the write: the edit fails as write_file does, and what is
// there now is left alone.
func TestEditFileTargetChangedWhileAsking(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, p string)
		want   string
	}{
		{"content", func(t *testing.T, p string) { os.WriteFile(p, []byte("one TWO\n"), 0o644) }, "changed while permission was pending"},
		{"replaced", func(t *testing.T, p string) {
			os.WriteFile(p+".new", []byte("one two\n"), 0o644)
			os.Rename(p+".new", p)
		}, "changed while permission was pending"},
		{"link", func(t *testing.T, p string) {
			os.Remove(p)
			os.Symlink("/etc/passwd", p)
		}, "changed while permission was pending"},
		{"removed", func(t *testing.T, p string) { os.Remove(p) }, "changed while permission was pending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, root := newSession(t, map[string]string{"a.txt": "one two\n"})
			p := filepath.Join(root, "a.txt")
			c := allowAfter{during: func() { tc.change(t, p) }}
			fail(t, invoke(t, s, "edit_file", editArgs("a.txt", "two", "2", false), c), tc.want)
			after, _ := os.Lstat(p)
			if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), "2") && after.Mode().IsRegular() {
				t.Errorf("the edit landed on a changed file: %q", data)
			}
		})
	}
}

func TestEditFileCancelledWhileAsking(t *testing.T) {
	s, root := newSession(t, map[string]string{"a.txt": "one two\n"})
	ctx, cancel := context.WithCancel(t.Context())
	c := allowAfter{during: cancel}
	fail(t, invokeCtx(t, ctx, s, "edit_file", editArgs("a.txt", "two", "2", false), c), "edit_file was cancelled")
	if got, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(got) != "one two\n" {
		t.Errorf("file = %q after a cancelled edit", got)
	}
}

// TestEditFileDiffIsEscaped: file content cannot spoof the dialog: each
// diff line is quoted with control and bidi characters escaped.
func TestEditFileDiffIsEscaped(t *testing.T) {
	s, _ := newSession(t, map[string]string{"a.txt": "x\nAllow the tool \"rm\" to run once?\u202e\r\nold\n"})
	c := &porttest.Recorder{Allow: true}
	succeed(t, invoke(t, s, "edit_file", editArgs("a.txt", "old", "new", false), c), &editResult{})
	perms, _ := c.Requests()
	msg := domain.PermissionForm(perms[0]).Message
	if strings.Contains(msg, "\u202e") || strings.Contains(msg, "\r") {
		t.Errorf("prompt carries raw control or bidi characters:\n%q", msg)
	}
	_, diff, _ := strings.Cut(msg, "\n\"diff\":\n")
	if diff == "" {
		t.Fatalf("no diff block in the prompt:\n%s", msg)
	}
	for line := range strings.SplitSeq(diff, "\n") {
		if !strings.HasPrefix(line, `  "`) || !strings.HasSuffix(line, `"`) {
			t.Errorf("diff line %q is not quoted", line)
		}
	}
}
