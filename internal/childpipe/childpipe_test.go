package childpipe_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentmcp/agentmcp/internal/childpipe"
)

// TestMain lets the test binary serve as the child: with CHILDPIPE_ECHO set
// it copies its stdin to its stdout and exits.
func TestMain(m *testing.M) {
	if os.Getenv("CHILDPIPE_ECHO") != "" {
		io.Copy(os.Stdout, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestStart: what is written reaches the child, what it writes is read
// back, the read ends at the child's exit while Wait runs beside it.
func TestStart(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "CHILDPIPE_ECHO=1")
	stdin, stdout, err := childpipe.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	if _, err := stdin.WriteString("hello\n"); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	got, err := io.ReadAll(stdout)
	stdout.Close()
	if err != nil || string(got) != "hello\n" {
		t.Errorf("read %q (%v), want %q", got, err, "hello\n")
	}
	if err := <-waited; err != nil {
		t.Errorf("Wait: %v", err)
	}
}

// TestStartFails: a command that cannot start is an error, and no pipe is
// left for the caller.
func TestStartFails(t *testing.T) {
	stdin, stdout, err := childpipe.Start(exec.Command(filepath.Join(t.TempDir(), "missing")))
	if err == nil || stdin != nil || stdout != nil {
		t.Errorf("Start of a missing command: %v, %v, %v; want an error and no pipes", stdin, stdout, err)
	}
}
