package app_test

import (
	"bufio"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/internal/chatscript"
)

// pingSocket sends a ping on a new connection to the socket at path and
// returns the answer's line.
func pingSocket(t *testing.T, path string) string {
	t.Helper()
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		t.Fatalf("no answer to ping on %s: %v", path, err)
	}
	return strings.TrimSpace(line)
}

// TestServeUnixDefaultSocket: without --socket, serve unix serves on
// agentmcp.sock in $XDG_RUNTIME_DIR when it is set and absolute; else (root
// in a container, a service without a login session) in agentmcp-<uid>
// under the temporary directory, which it makes with mode 0700. It prints
// the path, serves on it, and removes the socket at exit (the trial found
// "--socket $XDG_RUNTIME_DIR/agentmcp.sock" expanded to /agentmcp.sock).
func TestServeUnixDefaultSocket(t *testing.T) {
	uid := strconv.Itoa(os.Getuid())
	tests := []struct {
		name    string
		runtime func(t *testing.T) string // the value of XDG_RUNTIME_DIR; "unset" unsets it
		want    func(runtime, tmp string) string
	}{
		{"runtime dir", func(t *testing.T) string { return shortTempDir(t) },
			func(runtime, _ string) string { return filepath.Join(runtime, "agentmcp.sock") }},
		{"empty", func(*testing.T) string { return "" },
			func(_, tmp string) string { return filepath.Join(tmp, "agentmcp-"+uid, "agentmcp.sock") }},
		{"unset", func(*testing.T) string { return "unset" },
			func(_, tmp string) string { return filepath.Join(tmp, "agentmcp-"+uid, "agentmcp.sock") }},
		{"relative", func(*testing.T) string { return "run/user" },
			func(_, tmp string) string { return filepath.Join(tmp, "agentmcp-"+uid, "agentmcp.sock") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := shortTempDir(t)
			t.Setenv("TMPDIR", tmp)
			runtime := tt.runtime(t)
			t.Setenv("XDG_RUNTIME_DIR", runtime)
			if runtime == "unset" {
				os.Unsetenv("XDG_RUNTIME_DIR")
			}
			want := tt.want(runtime, tmp)
			r := serveCommand(t, "unix", "--root", t.TempDir())
			if r.url != want {
				t.Fatalf("serve unix printed %q, want %q; stderr:\n%s", r.url, want, r.stderr)
			}
			if dir := filepath.Dir(want); dir != runtime {
				fi, err := os.Lstat(dir)
				if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
					t.Errorf("%s: %v, %v; want a directory with mode 0700", dir, fi.Mode(), err)
				}
			}
			if got := pingSocket(t, want); got != `{"jsonrpc":"2.0","id":1,"result":{}}` {
				t.Errorf("ping = %s", got)
			}
			if !strings.Contains(r.stderr.String(), "socket="+want) {
				t.Errorf("the log does not name the socket %s:\n%s", want, r.stderr)
			}
			if code := r.stop(t); code != 0 {
				t.Errorf("exit %d; stderr:\n%s", code, r.stderr)
			}
			if _, err := os.Lstat(want); !os.IsNotExist(err) {
				t.Errorf("socket left behind: %v", err)
			}
		})
	}
}

// TestServeUnixDefaultSocketDirRefused: the directory under the temporary
// directory, shared by every user, must be this user's, a directory (not
// a link), and closed to others: anything else there fails start-up
// (exit 1) with one line saying what to do, before the session opens, and
// is left as it was.
func TestServeUnixDefaultSocketDirRefused(t *testing.T) {
	uid := strconv.Itoa(os.Getuid())
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"open to others", func(t *testing.T, dir string) {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"a link", func(t *testing.T, dir string) {
			if err := os.Symlink(t.TempDir(), dir); err != nil {
				t.Fatal(err)
			}
		}},
		{"a file", func(t *testing.T, dir string) {
			if err := os.WriteFile(dir, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := shortTempDir(t)
			t.Setenv("TMPDIR", tmp)
			t.Setenv("XDG_RUNTIME_DIR", "")
			dir := filepath.Join(tmp, "agentmcp-"+uid)
			tt.setup(t, dir)
			before, err := os.Lstat(dir)
			if err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := runCLI(t, "serve", "unix", "--root", t.TempDir())
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if code != 1 || stdout != "" || len(lines) != 1 || !strings.Contains(stderr, dir) || !strings.Contains(stderr, "--socket PATH") {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant 1 and one line naming %s and --socket PATH", code, stdout, stderr, dir)
			}
			after, err := os.Lstat(dir)
			if err != nil || after.Mode() != before.Mode() {
				t.Errorf("%s changed: %v → %v (%v)", dir, before.Mode(), after.Mode(), err)
			}
		})
	}
}

// TestServeUnixSocketInRootDir: a --socket directly under / while
// $XDG_RUNTIME_DIR is empty is what "--socket $XDG_RUNTIME_DIR/agentmcp.sock"
// becomes there: a usage error that names the default instead.
func TestServeUnixSocketInRootDir(t *testing.T) {
	tmp := shortTempDir(t)
	t.Setenv("TMPDIR", tmp)
	t.Setenv("XDG_RUNTIME_DIR", "")
	if _, err := os.Lstat("/agentmcp.sock"); err == nil {
		t.Skip("/agentmcp.sock exists already")
	}
	r := serveCommand(t, "unix", "--socket", "/agentmcp.sock", "--root", t.TempDir())
	if r.url != "" {
		t.Errorf("served on %s", r.url)
	}
	code := r.stop(t)
	lines := strings.Split(strings.TrimSpace(r.stderr.String()), "\n")
	want := `agentmcp serve unix: --socket /agentmcp.sock is in the root directory and $XDG_RUNTIME_DIR is empty here ` +
		`(did "$XDG_RUNTIME_DIR/agentmcp.sock" expand to it?): leave --socket out to use ` +
		filepath.Join(tmp, "agentmcp-"+strconv.Itoa(os.Getuid()), "agentmcp.sock") + `, or name a path in a directory of yours`
	if code != 2 || r.stdout.String() != "" || len(lines) > 4 || lines[0] != want {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant 2 and\n%s", code, r.stdout, r.stderr, want)
	}
	if _, err := os.Lstat("/agentmcp.sock"); err == nil {
		t.Error("/agentmcp.sock exists")
	}
}

// TestUnixConnectionsShareThePrincipalsConversations: every connection to
// serve unix is the one local principal, so a submission that names no
// conversation continues the same default conversation whichever
// connection sends it, and a named conversation is apart from it
// (docs/http.md's "Conversations", docs/agent.md; it said all connections
// share one conversation).
func TestUnixConnectionsShareThePrincipalsConversations(t *testing.T) {
	srv := chatscript.New(t, func(r *chatscript.Request) chatscript.Reply {
		return chatscript.Reply{Text: "ok: " + r.LastUser()}
	})
	c := serveOver(t, "unix", "--root", t.TempDir(), "--model", "m", "--model-url", srv.URL, "--ephemeral", "--no-model-probe")
	id := 0
	submit := func(args, wantConv string, wantTurn float64, wantSeen string) {
		t.Helper()
		id++
		m := c.do(modernCall(id, "tools/call", `"name":"agent_submit","arguments":`+args, "{}"), id, "tools/call", "agent_submit")
		r, _ := m["result"].(map[string]any)
		sc, _ := r["structuredContent"].(map[string]any)
		if sc["conversation"] != wantConv || sc["turn"] != wantTurn {
			t.Fatalf("%s: %v; want conversation %s, turn %v", args, m, wantConv, wantTurn)
		}
		reqs := srv.Requests()
		if got := strings.Join(reqs[len(reqs)-1].UserPrompts(), "|"); got != wantSeen {
			t.Errorf("%s: the model saw %q, want %q", args, got, wantSeen)
		}
	}
	submit(`{"prompt":"one"}`, "default", 1, "one")
	c.redial() // another client of the socket
	submit(`{"prompt":"two"}`, "default", 2, "one|two")
	submit(`{"prompt":"three","conversation":"notes"}`, "notes", 1, "three")
	c.redial()
	submit(`{"prompt":"four"}`, "default", 3, "one|two|four")
}
