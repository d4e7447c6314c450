package workspace_test

import (
	"os"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/landlock"
)

// TestMain lets this test binary act as run_command's sandbox launcher:
// landlock.Wrap re-executes the running binary, here the test binary.
func TestMain(m *testing.M) {
	landlock.Main()
	os.Exit(m.Run())
}
