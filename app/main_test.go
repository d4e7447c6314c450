package app_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/landlock"
)

// TestMain lets this test binary act as run_command's sandbox launcher, as
// agentmcp's main does (landlock.Wrap re-executes the running binary, so
// landlock.Main comes first), and keeps the conversation stores of every
// test that serves the agent without --state-dir out of the home directory.
func TestMain(m *testing.M) {
	landlock.Main()
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
