package app_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/landlock"
	"github.com/agentmcp/agentmcp/app"
)

// TestMain lets this test binary act as run_command's sandbox launcher, as
// agentmcp's main does (landlock.Wrap re-executes the running binary, so
// landlock.Main comes first), and keeps the conversation stores of every
// test that serves the agent without --state-dir out of the home directory.
func TestMain(m *testing.M) {
	landlock.Main()
	probeMain() // a sandboxed command's probe (sandboxprobe_test.go)
	// serveEnv makes this test binary run app.Main with its arguments
	// instead of the tests (record_test.go: the stdio server agentmcp
	// record starts and the replays run, without building the command).
	if os.Getenv(serveEnv) == "1" {
		app.KeepSecretsOutOfEnvironment(os.Args[1:]) // as agentmcp's main does
		os.Exit(app.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	// Keep the tests' conversation stores out of the home directory.
	dir, err := os.MkdirTemp("", "agentmcp-app-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_STATE_HOME", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
