//go:build linux

package landlock_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
	argv, err := landlock.Wrap([]string{"/bin/sh", "-c", script, "sh", inside, outside}, landlock.Options{Writable: []string{inside}})
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
	if _, err := landlock.Wrap([]string{"sh"}, landlock.Options{}); err == nil {
		t.Error("Wrap accepted a relative program")
	}
	if _, err := landlock.Wrap([]string{"/bin/sh"}, landlock.Options{Writable: []string{"relative"}}); err == nil {
		t.Error("Wrap accepted a relative writable directory")
	}
}

// sandboxed runs script under /bin/sh through the launcher with o and
// returns its output and error.
func sandboxed(t *testing.T, o landlock.Options, script string, args ...string) (string, error) {
	t.Helper()
	if _, err := landlock.Available(); err != nil {
		t.Skip(err)
	}
	argv, err := landlock.Wrap(append([]string{"/bin/sh", "-c", script, "sh"}, args...), o)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	return string(out), err
}

// TestCommandHasNoPrivilege: the command holds no capability (as root
// neither), cannot make a device node, and cannot signal or trace the
// launcher that keeps it.
func TestCommandHasNoPrivilege(t *testing.T) {
	dir := t.TempDir()
	out, err := sandboxed(t, landlock.Options{Writable: []string{dir}}, `grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status
cd "$1"; mknod chr c 1 3 2>/dev/null && echo made a device
kill -0 $PPID 2>/dev/null && echo signalled the launcher
mkfifo fifo && echo fifo`, dir)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		switch {
		case strings.HasPrefix(line, "Cap") && strings.HasPrefix(line, "CapBnd") && os.Geteuid() != 0:
			// an unprivileged launcher cannot empty the bounding set; no_new_privs keeps exec from using it
		case strings.HasPrefix(line, "Cap") && !strings.HasSuffix(line, "0000000000000000"):
			t.Errorf("the command holds capabilities: %s", line)
		case line == "made a device", line == "signalled the launcher":
			t.Errorf("the command %s", line)
		}
	}
	if !strings.HasSuffix(out, "fifo\n") {
		t.Errorf("a FIFO beneath the writable directory should be allowed: %s", out)
	}
}

// TestNetworkOption: without Options.Network TCP is refused; with it, it
// reaches a listener on 127.0.0.1.
func TestNetworkOption(t *testing.T) {
	if abi, _ := landlock.Available(); abi < 4 {
		t.Skipf("Landlock ABI %d restricts no TCP", abi)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	script := `exec 3<>/dev/tcp/127.0.0.1/` + port + ` && echo connected`
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash for /dev/tcp")
	}
	for _, network := range []bool{false, true} {
		argv, _ := landlock.Wrap([]string{bash, "-c", script}, landlock.Options{Network: network})
		out, _ := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if got := strings.Contains(string(out), "connected"); got != network {
			t.Errorf("Network %v: %q", network, out)
		}
	}
}

// TestKeeperEndsDetachedProcesses: what the command detached (setsid, a
// double fork) ends when the shell exits — by kill(-1) within the scoped
// domain, and, where signals cannot be scoped, by killing the keeper's
// children round after round.
func TestKeeperEndsDetachedProcesses(t *testing.T) {
	if _, err := landlock.Available(); err != nil {
		t.Skip(err)
	}
	for _, flags := range [][]string{nil, {"-no-scoped-kill"}} {
		argv := append([]string{landlock.Launcher, landlock.LauncherArg}, flags...)
		argv = append(argv, t.TempDir(), "--", "/bin/sh", "-c", `setsid sleep 1000 >/dev/null 2>&1 </dev/null & echo $!
( (sleep 1001 >/dev/null 2>&1 & echo $! >&3) & ) 3>&1`)
		out, err := exec.Command(argv[0], argv[1:]...).Output()
		if err != nil {
			t.Fatalf("%v: %v", flags, err)
		}
		for _, f := range strings.Fields(string(out)) {
			pid, _ := strconv.Atoi(f)
			if pid <= 0 {
				t.Fatalf("output %q", out)
			}
			if err := syscall.Kill(pid, 0); err == nil {
				data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
				t.Errorf("%v: process %d outlived the shell: %s", flags, pid, data)
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}
