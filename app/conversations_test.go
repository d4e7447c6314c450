package app_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/sqlite"
	"github.com/agentmcp/agentmcp/ports"
)

// TestConversationsCommandNames: list names each conversation (and a
// fork's parent) and filters by --root, --principal and --limit; show
// prints one --conversation's turns with their numbers and changes; clear
// forgets one --conversation and leaves the rest. Bad flags are usage
// errors (exit 2) and touch nothing.
func TestConversationsCommandNames(t *testing.T) {
	state := t.TempDir()
	rootA, rootB := t.TempDir(), t.TempDir()
	realA, _ := filepath.EvalSymlinks(rootA)
	realB, _ := filepath.EvalSymlinks(rootB)
	s, err := sqlite.Open(filepath.Join(state, sqlite.FileName), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	local := ports.RefOf(realA, ports.Principal{})
	alice := ports.RefOf(realA, ports.Principal{Issuer: "https://issuer", Subject: "alice", Client: "c"})
	turn := func(prompt string, changes ...ports.FileDiff) ports.Turn {
		return ports.Turn{Messages: []ports.Message{{Role: ports.RoleUser, Content: prompt}, {Role: ports.RoleAssistant, Content: "ok: " + prompt}},
			Changes: changes, Bytes: 100}
	}
	for _, step := range []struct {
		ref  ports.ConversationRef
		turn ports.Turn
		fork string
	}{
		{local, turn("first"), ""},
		{local.Named("fix-1"), turn("fix it", ports.FileDiff{Path: "a.go", Added: 1, Removed: 1, Diff: "--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n-old\n+new\n"}), ""},
		{local.Named("try"), turn("try it"), "default"},
		{alice, turn("alice's"), ""},
		{ports.RefOf(realB, ports.Principal{}), turn("other root"), ""},
	} {
		if _, err := s.Append(context.Background(), step.ref, step.turn, ports.AppendOptions{MaxBytes: 1 << 20, ForkFrom: step.fork}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	_, out, _ := runCLI(t, "conversations", "list", "--state-dir", state)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], realB+"\tlocal\tdefault\t1 turn\t100 bytes\t") ||
		!strings.HasPrefix(lines[1], realA+"\t"+alice.Principal[:len("remote:")+12]+"\tdefault\t") ||
		!strings.HasPrefix(lines[2], realA+"\tlocal\ttry\t2 turns\t200 bytes\t") || !strings.HasSuffix(lines[2], "\tforked from default") ||
		!strings.HasPrefix(lines[3], realA+"\tlocal\tfix-1\t1 turn\t") || !strings.HasPrefix(lines[4], realA+"\tlocal\tdefault\t") {
		t.Errorf("list:\n%s", out)
	}
	for _, c := range []struct {
		args []string
		want int // lines
	}{
		{[]string{"--root", rootA}, 4},
		{[]string{"--principal", "local"}, 4},
		{[]string{"--principal", "remote:"}, 1},
		{[]string{"--principal", alice.Principal[:len("remote:")+12]}, 1},
		{[]string{"--root", rootA, "--principal", "local", "--limit", "2"}, 2},
		{[]string{"--limit", "1"}, 1},
	} {
		_, out, _ := runCLI(t, append([]string{"conversations", "list", "--state-dir", state}, c.args...)...)
		if n := len(strings.Split(strings.TrimSpace(out), "\n")); n != c.want {
			t.Errorf("list %q: %d lines, want %d:\n%s", c.args, n, c.want, out)
		}
	}

	code, out, _ := runCLI(t, "conversations", "show", "--state-dir", state, "--root", rootA, "--conversation", "fix-1")
	want := fmt.Sprintf("# %s (local) fix-1, 1 turn, last ", realA)
	if code != 0 || !strings.HasPrefix(out, want) || !strings.Contains(out, "\n## turn 1\n[user] fix it\n[assistant] ok: fix it\n[changed a.go +1 -1]\n--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n-old\n+new\n") ||
		strings.Contains(out, "first") {
		t.Errorf("show --conversation fix-1: exit %d\n%s", code, out)
	}
	if _, out, _ := runCLI(t, "conversations", "show", "--state-dir", state, "--root", rootA, "--conversation", "try", "--principal", "local"); !strings.Contains(out, "forked from default") ||
		!strings.Contains(out, "## turn 1\n[user] first\n") || !strings.Contains(out, "## turn 2\n[user] try it\n") {
		t.Errorf("show of the fork:\n%s", out)
	}

	code, out, _ = runCLI(t, "conversations", "clear", "--state-dir", state, "--root", rootA, "--conversation", "try")
	if code != 0 || !strings.Contains(out, "forgot 1 conversation of") {
		t.Errorf("clear --conversation try: exit %d, %q", code, out)
	}
	if _, out, _ := runCLI(t, "conversations", "list", "--state-dir", state, "--root", rootA); strings.Contains(out, "\ttry\t") || len(strings.Split(strings.TrimSpace(out), "\n")) != 3 {
		t.Errorf("after clearing try:\n%s", out)
	}

	for _, args := range [][]string{
		{"list", "--limit", "-1"},
		{"show", "--conversation", "a b"},
		{"clear", "--conversation", strings.Repeat("x", 65)},
	} {
		code, out, errOut := runCLI(t, append([]string{"conversations"}, append(args, "--state-dir", state)...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, args[1]) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want a usage error naming %s", args, code, out, errOut, args[1])
		}
	}
	if _, out, _ := runCLI(t, "conversations", "list", "--state-dir", state); len(strings.Split(strings.TrimSpace(out), "\n")) != 4 {
		t.Errorf("bad flags changed the store:\n%s", out)
	}
}
