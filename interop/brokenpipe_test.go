package interop

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestClosedStdoutIsACarrierFailure: when the client closes the server's
// stdout, the next answer fails with EPIPE and the server exits 1 with the
// failure on stderr (docs/SPEC.md §5.1: Wait returns the carrier failure), instead
// of the runtime killing it with SIGPIPE.
func TestClosedStdoutIsACarrierFailure(t *testing.T) {
	ws := newWorkspace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := serverCommand(ctx, ws)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	logStderrOnFailure(t, &stderr)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdout.(io.Closer).Close() // the client stops reading: the pipe breaks
	if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait() // the answer to the ping is the first write to the broken pipe
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("server ended with %v, want exit status 1 (not a signal)", err)
	}
	if !strings.Contains(stderr.String(), "broken pipe") {
		t.Errorf("stderr does not report the broken output")
	}
}
