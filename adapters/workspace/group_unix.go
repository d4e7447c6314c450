//go:build unix

package workspace

import (
	"os/exec"
	"syscall"
)

// commandsSupported: run_command needs process groups.
const commandsSupported = true

// ownGroup makes cmd the leader of a new process group, whose id is its
// process id.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killProcessGroup kills every process of the group pgid.
func killProcessGroup(pgid int) { syscall.Kill(-pgid, syscall.SIGKILL) }
