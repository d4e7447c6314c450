// Package landlock runs a command under a Landlock sandbox
// (https://docs.kernel.org/userspace-api/landlock.html), on
// github.com/landlock-lsm/go-landlock: alone (agentmcp's --sandbox
// landlock) or as the second layer inside bubblewrap (the default,
// adapters/bubblewrap).
//
// Landlock restricts the calling thread and everything it executes
// afterwards, for good; a Go server cannot restrict only a child it forks,
// since Go offers no hook between fork and exec. So the sandbox is applied
// by a launcher: the running binary itself, re-executed (as
// /proc/self/exe, so always the very binary that serves, whatever has
// since been put at its path) with [LauncherArg] as its first argument.
// [Main], called first thing in main (and in TestMain of tests that run
// commands), recognises that argument. The launcher has two stages:
//
//   - the keeper restricts itself to a Landlock domain that only scopes
//     signals and abstract Unix sockets (ABI 6), becomes a child
//     subreaper, marks every inherited descriptor close-on-exec and starts
//     the second stage; when the command's shell exits, or the keeper is
//     asked to stop (SIGTERM, SIGHUP, or the server's death through the
//     parent-death signal the server sets), it kills every process of its
//     domain — kill(-1) from a scoped domain reaches that domain and those
//     nested in it, nothing else — and exits as the shell did. A process
//     the command detached (setsid, set -m, a double fork) is in the
//     domain wherever it went, so none outlives the call. Where the kernel
//     cannot scope signals (before ABI 6; checked, never assumed) it kills
//     its children instead, round after round, until none is left.
//     Inside a PID namespace of its own (Options.OwnPIDNamespace) the
//     namespace does this, and the launcher starts at the second stage.
//   - the second stage, on one locked OS thread, drops every capability,
//     sets no_new_privs, enters a nested domain with the command's rules
//     and execs the command from that thread. Nested, the command can
//     neither signal nor ptrace the keeper, which is outside its domain.
//
// The command's rules (docs/SPEC.md §9 "The sandbox"): reading and
// executing are allowed everywhere the user may; writing (creating,
// removing, renaming, truncating, linking — but never a block or character
// device node) only beneath the writable directories, plus the character
// devices /dev/null, /dev/zero and /dev/full; connect(2) to a pathname
// Unix socket only beneath the writable directories (ABI 9); no signal or
// abstract Unix socket outside the command's own processes (ABI 6); TCP
// (ABI 4) and UDP (ABI 10) refused unless [Options.Network]. Landlock
// restricts root as well, and the command has no capability even as root.
// The launcher asks for the newest ABI go-landlock knows and takes what
// the kernel offers (best effort), but refuses to run anything where the
// kernel offers no Landlock at all: [Available] is what a caller checks
// first.
package landlock

// LauncherArg is the first argument that makes [Main] act as the launcher.
// It is not a command of agentmcp's CLI and is never documented as one.
const LauncherArg = "__agentmcp-landlock-exec"

// ExitLaunchFailed is the launcher's exit status when it cannot restrict
// itself or exec the command (126 is the shell's "cannot execute").
const ExitLaunchFailed = 126

// Launcher is the program every launcher argument vector names: the
// running executable, by the link the kernel keeps to it, so that a file
// put at the executable's path later (a command can write there when the
// binary lies in its workspace) is never what runs.
const Launcher = "/proc/self/exe"

// Options say what one command may do beyond reading and executing.
type Options struct {
	// Writable are the absolute directories beneath which the command may
	// write (and connect to the Unix sockets it finds there).
	Writable []string
	// Network lets the command use TCP and UDP; otherwise Landlock refuses
	// them where the kernel can (TCP from ABI 4, UDP from ABI 10).
	Network bool
	// ReadOnlyDevices makes the launcher remount each device node that is
	// a mount of its own under /dev (bubblewrap binds the host's null,
	// zero, full, random, urandom and tty there) read-only before it
	// restricts itself, so that not even root can change their mode,
	// times or attributes: it needs CAP_SYS_ADMIN in the mount namespace's
	// user namespace (bubblewrap's --cap-add), which the command never
	// gets. Only for a launcher inside a mount namespace of its own.
	ReadOnlyDevices bool
	// OwnPIDNamespace says the command runs in a PID namespace of its own
	// whose end kills every process in it (bubblewrap's): the launcher
	// then goes straight to the second stage, without the keeper — one Go
	// program started instead of two.
	OwnPIDNamespace bool
}
