//go:build unix

package workspace

import (
	"os/exec"
	"syscall"
)

// commandsSupported: run_command needs process groups.
const commandsSupported = true

// ownGroup makes cmd the leader of a new session, so of a new process
// group whose id is its process id, without a controlling terminal (a
// command could otherwise type into the person's terminal with TIOCSTI),
// and asks the kernel to send it SIGTERM if the server dies first (Linux).
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	setDeathSignal(cmd.SysProcAttr)
}

// stopCommand asks the command's first process to end (SIGTERM): a
// sandbox's launcher then ends everything the command started.
func stopCommand(pid int) { syscall.Kill(pid, syscall.SIGTERM) }

// killProcessGroup kills every process of the group pgid.
func killProcessGroup(pgid int) { syscall.Kill(-pgid, syscall.SIGKILL) }
