//go:build linux

package bubblewrap_test

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/bubblewrap"
)

// newSandbox is New(o), the test skipped where bubblewrap cannot run
// (scripts/lib.sh installs it for CI).
func newSandbox(t *testing.T, o bubblewrap.Options) *bubblewrap.Sandbox {
	t.Helper()
	s, err := bubblewrap.New(o)
	if errors.Is(err, bubblewrap.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// run runs script under /bin/sh in the sandbox over root and returns its
// output and error.
func run(t *testing.T, s *bubblewrap.Sandbox, root, temp, script string, args ...string) (string, error) {
	t.Helper()
	argv, err := s.Wrap(append([]string{"/bin/sh", "-c", script, "sh"}, args...), root, temp)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.ExtraFiles = s.Files()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// dirIn makes a directory under /var/tmp, a place the sandbox leaves
// visible, so that hiding it is the sandbox's doing.
func dirIn(t *testing.T, pattern string) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", pattern)
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// TestNewWithoutBwrap: no bwrap on PATH is ErrUnavailable, saying what to
// install.
func TestNewWithoutBwrap(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := bubblewrap.New(bubblewrap.Options{})
	if !errors.Is(err, bubblewrap.ErrUnavailable) || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Errorf("New without bwrap: %v", err)
	}
}

// TestWrapHidesAndBinds: the root is writable and the working directory;
// the homes, the runtime directory and what Hide names (inside the root
// too) are hidden; /tmp is the temporary directory; the rest of the file
// system is read-only; the network is the sandbox's own.
func TestWrapHidesAndBinds(t *testing.T) {
	home, runtime, outside := dirIn(t, "bw-home-"), dirIn(t, "bw-run-"), dirIn(t, "bw-out-")
	write(t, filepath.Join(home, ".ssh", "id_ed25519"), "PRIVATE")
	write(t, filepath.Join(runtime, "bus"), "BUS")
	write(t, filepath.Join(outside, "seen"), "SEEN")
	root := dirIn(t, "bw-root-")
	write(t, filepath.Join(root, "state", "conversations.db"), "STORE")
	ln, err := net.Listen("unix", filepath.Join(root, "agent.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	temp := t.TempDir()
	write(t, filepath.Join(temp, "from-temp"), "TEMP")
	s := newSandbox(t, bubblewrap.Options{Homes: []string{home, "relative", "/"}, RuntimeDir: runtime,
		Hide: func() []string {
			return []string{filepath.Join(root, "state"), filepath.Join(root, "agent.sock"), "/nonexistent/x"}
		}})

	out, err := run(t, s, root, temp, `pwd
cat "$1/.ssh/id_ed25519" 2>/dev/null || echo home hidden
cat "$2/bus" 2>/dev/null || echo runtime hidden
cat "$3/seen"; echo
touch "$3/new" 2>/dev/null || echo outside read-only
ls -A state; cat state/conversations.db 2>/dev/null || echo state hidden
test -S agent.sock || echo socket masked
cat /tmp/from-temp; echo; echo "$TMPDIR"
echo w > made && echo root writable
grep -c : /proc/net/dev`, home, runtime, outside)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := root + "\nhome hidden\nruntime hidden\nSEEN\noutside read-only\nstate hidden\nsocket masked\nTEMP\n/tmp\nroot writable\n1\n"
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	if data, _ := os.ReadFile(filepath.Join(root, "state", "conversations.db")); string(data) != "STORE" {
		t.Errorf("the store changed: %q", data)
	}
	// The private home is temp/home, kept for the session's next command.
	if fi, err := os.Stat(filepath.Join(temp, "home")); err != nil || !fi.IsDir() {
		t.Errorf("no private home in the temporary directory: %v", err)
	}
	for _, w := range []string{root, "/tmp", "/dev/shm", home} {
		if !contains(s.Writable(root), w) {
			t.Errorf("Writable(%s) = %v, lacks %s", root, s.Writable(root), w)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestWrapNetwork: Options.Network keeps the host's interfaces.
func TestWrapNetwork(t *testing.T) {
	s := newSandbox(t, bubblewrap.Options{Network: true})
	out, err := run(t, s, t.TempDir(), t.TempDir(), `grep -c : /proc/net/dev`)
	host, _ := os.ReadFile("/proc/net/dev")
	if want := strconv.Itoa(strings.Count(string(host), ":")); err != nil || strings.TrimSpace(out) != want {
		t.Errorf("interfaces with the network: %q (%v), the host has %s", out, err, want)
	}
}

// TestWrapGitReadOnly: a .git directory is read-only; a .git file's git
// directory (a worktree's, under a hidden home) and its common directory
// are bound read-only, so git works and nothing of it changes.
func TestWrapGitReadOnly(t *testing.T) {
	home := dirIn(t, "bw-home-")
	common := filepath.Join(home, "repo", ".git")
	gitdir := filepath.Join(common, "worktrees", "w")
	write(t, filepath.Join(gitdir, "HEAD"), "ref: refs/heads/w\n")
	write(t, filepath.Join(gitdir, "commondir"), "../..\n")
	write(t, filepath.Join(common, "config"), "[core]\n")
	write(t, filepath.Join(common, "HEAD"), "ref: refs/heads/main\n")
	wt := dirIn(t, "bw-wt-")
	write(t, filepath.Join(wt, ".git"), "gitdir: "+gitdir+"\n")
	plain := dirIn(t, "bw-plain-")
	write(t, filepath.Join(plain, ".git", "config"), "[core]\n")
	s := newSandbox(t, bubblewrap.Options{Homes: []string{home}})

	out, err := run(t, s, wt, t.TempDir(), `cat .git "$1/HEAD" "$2/config"
{ echo x >> .git; } 2>/dev/null || echo dotgit read-only
{ echo x >> "$1/HEAD"; } 2>/dev/null || echo gitdir read-only
{ echo x >> "$2/config"; } 2>/dev/null || echo common read-only
ls "$3"`, gitdir, common, home)
	want := "gitdir: " + gitdir + "\nref: refs/heads/w\n[core]\ndotgit read-only\ngitdir read-only\ncommon read-only\nrepo\n"
	if err != nil || out != want {
		t.Errorf("worktree: %v\n%s\nwant:\n%s", err, out, want)
	}
	// A .git file a command wrote, naming a hidden directory that is no git
	// directory (a home, a runtime directory), binds nothing.
	secret := filepath.Join(home, ".ssh")
	write(t, filepath.Join(secret, "id_ed25519"), "PRIVATE")
	planted := dirIn(t, "bw-planted-")
	write(t, filepath.Join(planted, ".git"), "gitdir: "+secret+"\n")
	out, err = run(t, s, planted, t.TempDir(), `cat "$1/id_ed25519" 2>/dev/null || echo still hidden`, secret)
	if err != nil || out != "still hidden\n" {
		t.Errorf("a planted gitdir: %v %q", err, out)
	}
	out, err = run(t, s, plain, t.TempDir(), `{ echo x >> .git/config; } 2>/dev/null || echo config read-only
mv .git moved 2>/dev/null || echo not moved`)
	if err != nil || out != "config read-only\nnot moved\n" {
		t.Errorf(".git directory: %v\n%s", err, out)
	}
}

// TestWrapLauncher: a command vector naming /proc/self/exe runs
// Options.Launcher, bound read-only; without it Wrap refuses.
func TestWrapLauncher(t *testing.T) {
	bare := newSandbox(t, bubblewrap.Options{})
	if _, err := bare.Wrap([]string{"/proc/self/exe", "x"}, t.TempDir(), t.TempDir()); err == nil {
		t.Error("Wrap ran /proc/self/exe without a Launcher")
	}
	echo, err := os.Open("/bin/echo")
	if err != nil {
		t.Skip(err)
	}
	defer echo.Close()
	s := newSandbox(t, bubblewrap.Options{Launcher: echo})
	argv, err := s.Wrap([]string{"/proc/self/exe", "launched"}, t.TempDir(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.ExtraFiles = s.Files()
	if out, err := cmd.CombinedOutput(); err != nil || string(out) != "launched\n" {
		t.Errorf("the launcher: %v, %q", err, out)
	}
	for _, bad := range [][2]string{{"sh", "/"}, {"/bin/sh", "relative"}} {
		if _, err := s.Wrap([]string{bad[0]}, bad[1], t.TempDir()); err == nil {
			t.Errorf("Wrap accepted %q over %q", bad[0], bad[1])
		}
	}
}
