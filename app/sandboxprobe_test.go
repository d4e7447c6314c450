//go:build linux

package app_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// probeName is the name under which this test binary, hard-linked into a
// sandboxed command's workspace as ./probe, acts as a probe of what the
// command can reach (TestMain dispatches to runProbe). Each probe prints
// one line: "reached <what>" when the attempt succeeded, "refused: <error>"
// when it failed; the sandbox tests read that line.
const probeName = "probe"

// runProbe runs one probe: unix PATH (connect to a pathname socket),
// abstract NAME (connect to an abstract socket), tcp ADDR, dns NAME,
// ptrace PID (attach and detach), xattr PATH (set user.agentmcp),
// tiocsti (push a byte into the controlling terminal's input).
func runProbe(args []string) int {
	if len(args) < 1 {
		fmt.Println("refused: no probe named")
		return 2
	}
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	var err error
	switch args[0] {
	case "unix", "abstract":
		name := arg(1)
		if args[0] == "abstract" {
			name = "@" + name
		}
		var c net.Conn
		if c, err = net.DialTimeout("unix", name, 5*time.Second); err == nil {
			c.Close()
		}
	case "tcp":
		var c net.Conn
		if c, err = net.DialTimeout("tcp", arg(1), 5*time.Second); err == nil {
			c.Close()
		}
	case "dns":
		_, err = net.LookupHost(arg(1))
	case "ptrace":
		pid, _ := strconv.Atoi(arg(1))
		if err = unix.PtraceAttach(pid); err == nil {
			var ws unix.WaitStatus
			unix.Wait4(pid, &ws, unix.WALL, nil)
			unix.PtraceDetach(pid)
		}
	case "xattr":
		err = unix.Setxattr(arg(1), "user.agentmcp", []byte("planted"), 0)
	case "fds":
		var entries []os.DirEntry
		entries, err = os.ReadDir("/proc/self/fd")
		for _, e := range entries {
			// What this process opened itself is close-on-exec; what it
			// inherited is not. The shell's own /dev/null is harmless.
			target, _ := os.Readlink("/proc/self/fd/" + e.Name())
			n, _ := strconv.Atoi(e.Name())
			flags, ferr := unix.FcntlInt(uintptr(n), unix.F_GETFD, 0)
			if n > 2 && ferr == nil && flags&unix.FD_CLOEXEC == 0 && target != "/dev/null" {
				fmt.Printf("reached fd %d -> %s\n", n, target)
			}
		}
		if err == nil {
			err = errors.New("(the descriptors above were open)")
		}
	case "tiocsti":
		// TIOCSTI checks no access mode: a descriptor open for reading
		// is enough.
		var fd int
		if fd, err = unix.Open("/dev/tty", unix.O_RDONLY, 0); err == nil {
			b := byte('#')
			err = unix.IoctlSetPointerInt(fd, unix.TIOCSTI, int(b))
			unix.Close(fd)
		}
	default:
		err = errors.New("unknown probe " + args[0])
	}
	if err != nil {
		fmt.Printf("refused: %v\n", err)
		return 1
	}
	fmt.Printf("reached %s %s\n", args[0], arg(1))
	return 0
}

// probeMain runs the probe when this process was started as one.
func probeMain() {
	if filepath.Base(os.Args[0]) == probeName {
		os.Exit(runProbe(os.Args[1:]))
	}
}
