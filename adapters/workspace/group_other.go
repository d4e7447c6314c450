//go:build !unix

package workspace

import "os/exec"

// commandsSupported: run_command needs Unix process groups; New refuses
// Options.Commands elsewhere.
const commandsSupported = false

func ownGroup(*exec.Cmd) {}

func stopCommand(int) {}

func killProcessGroup(int) {}
