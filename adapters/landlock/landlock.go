//go:build linux

package landlock

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	ll "github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// devices are the character devices a sandboxed command may open for
// writing: sinks and sources every shell script expects.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full"}

// boundDevices are the device nodes bubblewrap's --dev binds from the
// host, which Options.ReadOnlyDevices remounts read-only.
var boundDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/console"}

// Launcher flags, between LauncherArg and the writable directories (which
// are absolute, so never taken for a flag).
const (
	flagNetwork  = "-network"
	flagDevices  = "-ro-devices"
	flagStage2   = "-stage2"
	flagOwnPIDNS = "-own-pid-namespace"
	flagNoScopes = "-no-scoped-kill" // tests: the keeper's fallback where signals cannot be scoped
)

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
// path) under the sandbox o describes: [Launcher] with LauncherArg, the
// options, the writable directories, "--" and argv. It fails when an
// argument is not absolute. The process that starts it should set a
// parent-death signal (SIGTERM) and stop it with SIGTERM: the launcher
// then ends every process of the command before it exits.
func Wrap(argv []string, o Options) ([]string, error) {
	if len(argv) == 0 || !filepath.IsAbs(argv[0]) {
		return nil, errors.New("landlock: the command must be an absolute path")
	}
	out := append([]string{Launcher, LauncherArg}, o.flags()...)
	for _, d := range o.Writable {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("landlock: writable directory %q is not absolute", d)
		}
		out = append(out, d)
	}
	out = append(out, "--")
	return append(out, argv...), nil
}

func (o Options) flags() []string {
	var f []string
	if o.Network {
		f = append(f, flagNetwork)
	}
	if o.ReadOnlyDevices {
		f = append(f, flagDevices)
	}
	if o.OwnPIDNamespace {
		f = append(f, flagOwnPIDNS)
	}
	return f
}

// Main acts as the launcher when the process was started by a Wrap
// argument vector: it runs the command sandboxed and exits as the command
// did, never returning (on a failure to sandbox it prints one line on
// stderr and exits with ExitLaunchFailed). Otherwise it returns at once.
func Main() {
	if len(os.Args) < 2 || os.Args[1] != LauncherArg {
		return
	}
	err := launch(os.Args[2:])
	fmt.Fprintf(os.Stderr, "agentmcp sandbox: %v\n", err)
	os.Exit(ExitLaunchFailed)
}

// launch parses "[flags] dir... -- argv..." and runs the stage the flags
// name; it returns only on failure.
func launch(args []string) error {
	var o Options
	stage2, scopedKill := false, true
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "--" {
		switch args[0] {
		case flagNetwork:
			o.Network = true
		case flagDevices:
			o.ReadOnlyDevices = true
		case flagStage2:
			stage2 = true
		case flagNoScopes:
			scopedKill = false
		case flagOwnPIDNS:
			o.OwnPIDNamespace = true
		default:
			return fmt.Errorf("unknown launcher flag %q", args[0])
		}
		args = args[1:]
	}
	for len(args) > 0 && args[0] != "--" {
		o.Writable, args = append(o.Writable, args[0]), args[1:]
	}
	if len(args) < 2 {
		return errors.New("no command to run")
	}
	argv := args[1:]
	if _, err := Available(); err != nil {
		return err // fail closed: never run the command unrestricted
	}
	switch {
	case stage2:
		return execRestricted(o, argv)
	case o.OwnPIDNamespace: // the namespace ends the command's processes: no keeper
		if o.ReadOnlyDevices {
			if err := remountDevicesReadOnly(); err != nil {
				return err
			}
		}
		return execRestricted(o, argv)
	}
	return keep(o, argv, scopedKill)
}

// keep is the first stage (see the package doc): it runs the second stage
// and, when it ends or the keeper is told to stop, every process of the
// command's domain.
func keep(o Options, argv []string, scopedKill bool) error {
	// One OS thread, never unlocked, holds the scoped domain, forks the
	// second stage (so the command's domain nests in it) and sends the
	// kills. Only that thread is restricted: the command can signal and
	// trace none of this process's threads (each is outside its domain).
	runtime.LockOSThread()
	closeInherited()
	if o.ReadOnlyDevices {
		if err := remountDevicesReadOnly(); err != nil {
			return err
		}
	}
	if err := restrictThreadScoped(); err != nil {
		return err
	}
	// kill(-1) is safe only when the domain really scopes signals: then
	// the server (this process's parent, outside the domain) is out of
	// reach. Where the kernel cannot scope, kill(getppid(), 0) succeeds.
	scoped := scopedKill && errors.Is(unix.Kill(os.Getppid(), 0), unix.EPERM)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("cannot become the command's subreaper: %v", err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)

	stage := append([]string{Launcher, LauncherArg, flagStage2}, o.flags()...)
	stage = append(append(append(stage, o.Writable...), "--"), argv...)
	cmd := exec.Command(stage[0], stage[1:]...)
	cmd.Args[0] = "agentmcp-sandbox"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("cannot start the sandboxed command: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	stopped := false
	select {
	case <-done:
	case <-stop:
		stopped = true
		killDomain(scoped)
		<-done
	}
	killDomain(scoped)
	reapAll(scoped)
	st, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case stopped:
		dieOf(syscall.SIGKILL)
	case st.Signaled():
		dieOf(st.Signal())
	}
	os.Exit(st.ExitStatus())
	return nil
}

// restrictThreadScoped puts this OS thread (only) into a Landlock domain
// that scopes signals and abstract Unix sockets, where the kernel can.
func restrictThreadScoped() error {
	cfg := ll.V6
	cfg.HandledAccessFS, cfg.HandledAccessNet = 0, 0
	fd, flags, err := cfg.BestEffort().NewRulesetFD()
	if err != nil {
		return fmt.Errorf("cannot build the Landlock scopes: %v", err)
	}
	if fd < 0 {
		return nil // a kernel before ABI 6: nothing to scope (keep checks)
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("cannot set no_new_privs: %v", err)
	}
	if err := llsys.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("cannot apply the Landlock scopes: %v", err)
	}
	return nil
}

// killDomain sends SIGKILL to every process of the command: with scoped
// signals, kill(-1), which reaches this domain and the ones nested in it
// and nothing else (never this process); otherwise to each child.
func killDomain(scoped bool) {
	if scoped {
		unix.Kill(-1, unix.SIGKILL)
		return
	}
	for _, pid := range children() {
		unix.Kill(pid, unix.SIGKILL)
	}
}

// reapAll kills and waits for the command's processes until none is left:
// as a subreaper the keeper is the parent of every orphan of the command,
// so each round kills what the last one reparented to it.
func reapAll(scoped bool) {
	for {
		var ws unix.WaitStatus
		_, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.ECHILD) {
			return
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		killDomain(scoped)
	}
}

// children returns the process ids whose parent is this process, from
// /proc (a child is never reaped by anyone else, so its id cannot be
// reused before this process waits for it).
func children() []int {
	self := strconv.Itoa(os.Getpid())
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 {
			if f := strings.Fields(string(stat[i+1:])); len(f) > 1 && f[1] == self {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// dieOf ends this process with sig, as the command's shell ended, so its
// parent reads the same status.
func dieOf(sig syscall.Signal) {
	signal.Reset(sig)
	unix.Kill(os.Getpid(), sig)
	os.Exit(128 + int(sig)) // a signal whose default is not to terminate
}

// closeInherited marks every descriptor above stderr close-on-exec: what
// the server inherited without the flag (its terminal, a pipe of whoever
// started it) must not reach the command.
func closeInherited() {
	if unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) == nil {
		return
	}
	entries, _ := os.ReadDir("/proc/self/fd")
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}

// remountDevicesReadOnly remounts each of boundDevices that is a mount of
// its own read-only, its other mount attributes unchanged.
func remountDevicesReadOnly() error {
	for _, d := range boundDevices {
		var st unix.Statx_t
		if err := unix.Statx(unix.AT_FDCWD, d, unix.AT_SYMLINK_NOFOLLOW, 0, &st); err != nil ||
			st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT == 0 || st.Attributes&unix.STATX_ATTR_MOUNT_ROOT == 0 {
			continue // absent, or not a mount: nothing of the host's is there
		}
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		if err := unix.MountSetattr(unix.AT_FDCWD, d, unix.AT_SYMLINK_NOFOLLOW, &attr); err != nil {
			return fmt.Errorf("cannot remount %s read-only: %v", d, err)
		}
	}
	return nil
}

// execRestricted is the second stage: on this goroutine's OS thread, which
// stays locked (its credentials are the command's), it drops every
// capability, enters the command's Landlock domain and execs argv.
func execRestricted(o Options, argv []string) error {
	runtime.LockOSThread() // never unlocked: the thread is restricted
	cfg := ll.V11
	if o.Network {
		cfg.HandledAccessNet = 0
	}
	rw := ll.AccessFSSet(cfg.HandledAccessFS) &^ (llsys.AccessFSMakeChar | llsys.AccessFSMakeBlock)
	fd, flags, err := cfg.BestEffort().NewRulesetFD(
		ll.RODirs("/"),
		ll.PathAccess(rw, o.Writable...),
		ll.RWFiles(devices...).IgnoreIfMissing(),
	)
	if err != nil {
		return fmt.Errorf("cannot build the Landlock rules: %v", err)
	}
	if fd < 0 {
		return errors.New("Landlock is not available on this kernel")
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("cannot set no_new_privs: %v", err)
	}
	if err := llsys.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("cannot apply the Landlock rules: %v", err)
	}
	unix.Close(fd)
	closeInherited()
	return fmt.Errorf("cannot run %s: %v", argv[0], syscall.Exec(argv[0], argv, os.Environ()))
}

// dropCapabilities empties this thread's capability sets: the bounding set
// where it may (CAP_SETPCAP; without it the set gives nothing, as
// no_new_privs keeps exec from granting more than the thread has), the
// ambient set, and the effective, permitted and inheritable sets — so a
// command run as root has none.
func dropCapabilities() error {
	for c := uintptr(0); ; c++ {
		if _, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, c, 0, 0, 0); err != nil {
			break // past the last capability the kernel knows
		}
		unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0) // EPERM without CAP_SETPCAP
	}
	unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("cannot drop the capabilities: %v", err)
	}
	return nil
}
