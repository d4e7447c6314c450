//go:build linux

package landlock_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/landlock"
)

// TestMain makes this test binary the launcher Wrap re-executes.
func TestMain(m *testing.M) {
	landlock.Main()
	os.Exit(m.Run())
}

// TestWrap runs a shell through the launcher: it writes beneath the
// writable directory and to /dev/null, and nowhere else, not even as root;
// it still reads outside.
func TestWrap(t *testing.T) {
	if _, err := landlock.Available(); err != nil {
		t.Skip(err)
	}
	inside, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "readable"), []byte("r"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `echo in > "$1/in" && echo x > /dev/null && cat "$2/readable" && if { echo out > "$2/out"; } 2>/dev/null; then echo ESCAPED; fi`
	argv, err := landlock.Wrap([]string{"/bin/sh", "-c", script, "sh", inside, outside}, []string{inside})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil || string(out) != "r" {
		t.Fatalf("sandboxed shell: %v, output %q", err, out)
	}
	if _, err := os.Stat(filepath.Join(inside, "in")); err != nil {
		t.Errorf("the write beneath the writable directory failed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "out")); err == nil {
		t.Error("the shell wrote outside the writable directory")
	}
}

// TestLauncherFailsClosed: a launcher that has nothing to run, or a
// command it cannot exec, exits 126 and says why.
func TestLauncherFailsClosed(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{landlock.LauncherArg, t.TempDir(), "--"},
		{landlock.LauncherArg, t.TempDir(), "--", "/nonexistent/program"},
	} {
		out, err := exec.Command(exe, args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != landlock.ExitLaunchFailed || !strings.HasPrefix(string(out), "agentmcp sandbox: ") {
			t.Errorf("%q: %v, output %q; want exit %d with a reason", args, err, out, landlock.ExitLaunchFailed)
		}
	}
	if _, err := landlock.Wrap([]string{"sh"}, nil); err == nil {
		t.Error("Wrap accepted a relative program")
	}
	if _, err := landlock.Wrap([]string{"/bin/sh"}, []string{"relative"}); err == nil {
		t.Error("Wrap accepted a relative writable directory")
	}
}
