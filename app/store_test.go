package app_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/app"
	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/internal/syncbuf"
	"github.com/agentmcp/agentmcp/internal/waitfor"
)

func submitLineN(id int, prompt string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":%q}}}`, id, prompt)
}

// TestConversationsCommand: a served turn is stored under the root's real
// path; "conversations list" and "show" print it, "clear" forgets it, and
// the next serve starts without it. No command creates a store. One turn
// and one conversation are said in the singular.
func TestConversationsCommand(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	srv := chatscript.New(t, func(r *chatscript.Request) chatscript.Reply { return chatscript.Reply{Text: "heard " + r.LastUser()} })
	r := serveStdio(t, "--root", link, "--model", "m", "--model-url", srv.URL, "--state-dir", state)
	r.roundTrip(t, initLine)
	if text, _ := submitText(t, r.roundTrip(t, submitLineN(2, "remember heliotrope"))); text != "heard remember heliotrope" {
		t.Fatalf("turn = %q", text)
	}
	r.in.Close()
	if code := <-r.code; code != 0 {
		t.Fatalf("serve exit %d", code)
	}
	r.code <- 0 // for the cleanup

	real, _ := filepath.EvalSymlinks(root)
	code, out, errOut := runCLI(t, "conversations", "list", "--state-dir", state)
	if code != 0 || !strings.Contains(out, real+"\tlocal\tdefault\t1 turn\t") {
		t.Errorf("list: exit %d, %q, %q; want the root's real path, local, default, 1 turn", code, out, errOut)
	}
	code, out, _ = runCLI(t, "conversations", "show", "--state-dir", state, "--root", root)
	if code != 0 || !strings.Contains(out, "[user] remember heliotrope\n[assistant] heard remember heliotrope\n") || !strings.Contains(out, "(local) default, 1 turn, last ") {
		t.Errorf("show: exit %d, %q", code, out)
	}
	code, out, _ = runCLI(t, "conversations", "clear", "--state-dir", state, "--root", link)
	if code != 0 || !strings.Contains(out, "forgot 1 conversation of ") {
		t.Errorf("clear: exit %d, %q", code, out)
	}
	if _, out, _ = runCLI(t, "conversations", "list", "--state-dir", state); !strings.Contains(out, "no conversations") {
		t.Errorf("list after clear: %q", out)
	}
	empty := filepath.Join(t.TempDir(), "none")
	code, out, _ = runCLI(t, "conversations", "list", "--state-dir", empty)
	if _, err := os.Stat(empty); code != 0 || !strings.Contains(out, "no store") || err == nil {
		t.Errorf("list without a store: exit %d, %q, created: %v", code, out, err == nil)
	}
}

// TestServeStoreFaults: a store that cannot be used fails start-up (exit
// 1) with one log line that names the file and what to do (flags that
// conflict or are out of range are usage errors: TestUsageErrors).
func TestServeStoreFaults(t *testing.T) {
	state := t.TempDir()
	os.WriteFile(filepath.Join(state, "conversations.db"), []byte(strings.Repeat("garbage!", 1000)), 0o600)
	r := serveStdio(t, "--root", t.TempDir(), "--model", "m", "--model-url", "http://127.0.0.1:1/v1", "--state-dir", state)
	if code := <-r.code; code != 1 {
		t.Fatalf("exit %d with a corrupt store, want 1", code)
	}
	r.code <- 1
	log := r.stderr.String()
	if !strings.Contains(log, filepath.Join(state, "conversations.db")) || !strings.Contains(log, "is corrupt") || !strings.Contains(log, "move it aside") {
		t.Errorf("start-up log does not name the file and what to do:\n%s", log)
	}
}

// TestProgressTextOverStdio: over the stdio carrier, progress
// notifications carry the model's newest streamed text while it streams;
// the endpoint holds its stream until the client has read that text.
func TestProgressTextOverStdio(t *testing.T) {
	seen := make(chan struct{})
	srv := chatscript.New(t, func(*chatscript.Request) chatscript.Reply {
		return chatscript.Reply{Text: "The answer is being written now, slowly.", MidAfterText: 8, Mid: func(ctx context.Context) {
			select {
			case <-seen:
			case <-ctx.Done():
			}
		}}
	})
	r := serveStdio(t, "--root", t.TempDir(), "--model", "m", "--model-url", srv.URL, "--ephemeral")
	r.roundTrip(t, initLine)
	line := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"write"},"_meta":{"progressToken":"p"}}}`
	if _, err := r.in.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	var once sync.Once
	go func() {
		for r.out.Scan() {
			l := r.out.Text()
			if strings.Contains(l, `"message":"model step 1: The answer is being written now,"`) {
				once.Do(func() { close(seen) })
			}
			if strings.Contains(l, `"id":2`) {
				got <- l
				return
			}
		}
	}()
	answer := waitfor.Value(t, got, 10*time.Second, "the turn's answer")
	if text, isErr := submitText(t, answer); isErr || text != "The answer is being written now, slowly." {
		t.Errorf("answer %q (error %v)", text, isErr)
	}
}

// TestStateDirOwnerChecked: serve refuses a state directory that others
// can write (or that another user owns: adapters/sqlite's test), in one
// line, and so does agentmcp conversations (issue 32).
func TestStateDirOwnerChecked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	var stderr syncbuf.Buffer
	code := app.Main(context.Background(), []string{"serve", "stdio", "--root", t.TempDir(), "--model", "m",
		"--model-url", "http://127.0.0.1:1/v1", "--no-model-probe", "--state-dir", dir}, strings.NewReader(""), io.Discard, &stderr)
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if code != 1 || !strings.Contains(stderr.String(), "refusing it") || !strings.Contains(lines[len(lines)-1], "can be written by others") {
		t.Errorf("serve over a world-writable state dir: exit %d, stderr %q", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "conversations.db")); err == nil {
		t.Error("a store was made in the refused state dir")
	}
}

// TestConversationsEscapeTerminalControls: what the model wrote (and a
// root's name) reaches the person's terminal escaped as the approval
// dialog escapes: no OSC 52 clipboard write, no window title, no bidi
// override, and no stored line that passes for a message of its own
// (issue 32).
func TestConversationsEscapeTerminalControls(t *testing.T) {
	root := filepath.Join(t.TempDir(), "proj\x1b]0;owned\x07")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	const hostile = "done\x1b]52;c;ZWNobyBwd25lZA==\x07\n[user] delete everything\n\u202eevil\u009b2J"
	srv := chatscript.New(t, func(r *chatscript.Request) chatscript.Reply { return chatscript.Reply{Text: hostile} })
	r := serveStdio(t, "--root", root, "--model", "m", "--model-url", srv.URL, "--state-dir", state)
	r.roundTrip(t, initLine)
	r.roundTrip(t, submitLineN(2, "go"))
	r.in.Close()
	<-r.code
	r.code <- 0
	for _, args := range [][]string{{"list"}, {"show", "--root", root}} {
		code, out, errOut := runCLI(t, append(append([]string{"conversations"}, args...), "--state-dir", state)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		if strings.ContainsAny(out, "\x1b\x07\u202e\u009b") {
			t.Errorf("conversations %v printed a control character raw: %q", args, out)
		}
		if !strings.Contains(out, `proj\x1b]0;owned\a`) {
			t.Errorf("conversations %v does not show the root escaped: %q", args, out)
		}
		if args[0] == "show" {
			if !strings.Contains(out, "[assistant] done\\x1b]52;c;ZWNobyBwd25lZA==\\a\n  [user] delete everything\n  \\u202eevil\\u009b2J\n") {
				t.Errorf("show: %q", out)
			}
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(line, "[user] delete") {
					t.Errorf("a stored line passes for a message: %q", line)
				}
			}
		}
	}
}
