// Package landlock runs a command under a Landlock sandbox
// (https://docs.kernel.org/userspace-api/landlock.html) that lets it write
// only under given directories, on github.com/landlock-lsm/go-landlock.
//
// Landlock restricts the calling thread (go-landlock: every thread of the
// process) and everything it executes afterwards, for good; a Go server
// cannot restrict only a child it forks, since Go offers no hook between
// fork and exec. So the sandbox is applied by a launcher: the running
// binary itself, re-executed with [LauncherArg] as its first argument.
// [Main], called first thing in main (and in TestMain of tests that run
// commands), recognises that argument, restricts its own process and
// execs the command, which inherits the restriction; the server itself is
// never restricted.
//
// The rules (docs/SPEC.md §9 "Commands"): reading and executing are
// allowed everywhere the user may; writing (creating, removing, renaming,
// truncating, linking) only beneath the writable directories, plus the
// character devices /dev/null, /dev/zero and /dev/full. Landlock restricts
// root as well. The network is not restricted. The launcher asks for
// Landlock ABI 7 and takes what the kernel offers (best effort), but
// refuses to run anything where the kernel offers no Landlock at all:
// [Available] is what a caller checks first.
package landlock

// LauncherArg is the first argument that makes [Main] act as the launcher.
// It is not a command of agentmcp's CLI and is never documented as one.
const LauncherArg = "__agentmcp-landlock-exec"

// ExitLaunchFailed is the launcher's exit status when it cannot restrict
// itself or exec the command (126 is the shell's "cannot execute").
const ExitLaunchFailed = 126
