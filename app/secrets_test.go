//go:build linux

package app_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/internal/chatscript"
)

// TestServeKeepsTheKeyOutOfItsEnvironment: a serve process started with
// OPENAI_API_KEY starts again without it in its environment (so no
// process of the user reads it from /proc/PID/environ), and still sends it
// to the model endpoint (docs/SPEC.md §9 "Secrets").
func TestServeKeepsTheKeyOutOfItsEnvironment(t *testing.T) {
	srv := chatscript.Script(t, chatscript.Reply{Text: "hello"})
	cmd := exec.Command(os.Args[0], "serve", "stdio", "--root", t.TempDir(), "--model", "m", "--model-url", srv.URL, "--ephemeral")
	cmd.Env = append(os.Environ(), serveEnv+"=1", "OPENAI_API_KEY="+fakeKey)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer in.Close()
	out := bufio.NewScanner(stdout)
	io.WriteString(in, initLine+"\n")
	if !out.Scan() {
		t.Fatalf("no answer to initialize: %s", stderr.String())
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(environ, []byte(fakeKey)) || bytes.Contains(environ, []byte("OPENAI_API_KEY=")) {
		t.Error("the server's /proc/PID/environ holds the API key")
	}
	io.WriteString(in, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"hi"}}}`+"\n")
	if !out.Scan() || !strings.Contains(out.Text(), "hello") {
		t.Fatalf("agent_submit: %s (stderr %s)", out.Text(), stderr.String())
	}
	if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer "+fakeKey {
		t.Errorf("the endpoint did not get the key: %d requests", len(reqs))
	}
}
