// Package childpipe starts a child process on pipes of the OS, for the
// test kits and load drivers that speak to a server over its stdin and
// stdout.
package childpipe

import (
	"os"
	"os/exec"
)

// Start sets cmd's stdin and stdout to new OS pipes, starts cmd, and
// returns the parent's ends: stdin to write to the child, stdout to read
// from it. The child's ends are closed in the parent, so a reader sees
// io.EOF once the child (and whatever inherited its stdout) has ended, and
// cmd.Wait may run beside the reads — exec's StdinPipe and StdoutPipe
// allow neither (Wait closes them). cmd.Stderr is left as the caller set
// it. On an error (os.Pipe's or cmd.Start's) nothing is left open.
func Start(cmd *exec.Cmd) (stdin, stdout *os.File, err error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, nil, err
	}
	return inW, outR, nil
}
