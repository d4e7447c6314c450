package app_test

import (
	"os"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/landlock"
)

// TestMain lets this test binary act as run_command's sandbox launcher, as
// agentmcp's main does: landlock.Wrap re-executes the running binary.
func TestMain(m *testing.M) {
	landlock.Main()
	os.Exit(m.Run())
}
