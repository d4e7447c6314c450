//go:build linux

package landlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// devices are the character devices a sandboxed command may open for
// writing: sinks and sources every shell script expects.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full"}

// Available returns the Landlock ABI version the kernel offers, or an
// error saying why there is none (a kernel without Landlock, or with it
// disabled at boot).
func Available() (int, error) {
	abi, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0, fmt.Errorf("Landlock is not available on this kernel (%v)", err)
	}
	if abi < 1 {
		return 0, errors.New("Landlock is not available on this kernel")
	}
	return abi, nil
}

// Wrap returns the argument vector that runs argv (argv[0] an absolute
// path) under the sandbox with writes allowed beneath writable (absolute
// directories): the running executable with LauncherArg, each directory
// and argv. It fails when the executable cannot be found or an argument
// is not absolute.
func Wrap(argv, writable []string) ([]string, error) {
	if len(argv) == 0 || !filepath.IsAbs(argv[0]) {
		return nil, errors.New("landlock: the command must be an absolute path")
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("landlock: cannot find the running executable to launch the sandbox: %v", err)
	}
	out := []string{exe, LauncherArg}
	for _, d := range writable {
		if !filepath.IsAbs(d) || strings.HasPrefix(d, "-") {
			return nil, fmt.Errorf("landlock: writable directory %q is not absolute", d)
		}
		out = append(out, d)
	}
	out = append(out, "--")
	return append(out, argv...), nil
}

// Main acts as the launcher when the process was started by a Wrap
// argument vector: it restricts the process and execs the command, and
// never returns (on failure it prints one line on stderr and exits with
// ExitLaunchFailed). Otherwise it returns at once.
func Main() {
	if len(os.Args) < 2 || os.Args[1] != LauncherArg {
		return
	}
	err := launch(os.Args[2:])
	fmt.Fprintf(os.Stderr, "agentmcp sandbox: %v\n", err)
	os.Exit(ExitLaunchFailed)
}

// launch parses "dir... -- argv...", restricts the process and execs
// argv; it returns only on failure.
func launch(args []string) error {
	var writable []string
	for len(args) > 0 && args[0] != "--" {
		writable, args = append(writable, args[0]), args[1:]
	}
	if len(args) < 2 {
		return errors.New("no command to run")
	}
	argv := args[1:]
	if _, err := Available(); err != nil {
		return err // fail closed: never run the command unrestricted
	}
	err := ll.V7.BestEffort().RestrictPaths(
		ll.RODirs("/"),
		ll.RWDirs(writable...).WithRefer(),
		ll.RWFiles(devices...).IgnoreIfMissing(),
	)
	if err != nil {
		return fmt.Errorf("cannot apply the Landlock rules: %v", err)
	}
	return fmt.Errorf("cannot run %s: %v", argv[0], syscall.Exec(argv[0], argv, os.Environ()))
}
