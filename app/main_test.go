package app_test

import (
	"context"
	"os"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/landlock"
	"github.com/agentmcp/agentmcp/app"
)

// TestMain lets this test binary act as run_command's sandbox launcher, as
// agentmcp's main does: landlock.Wrap re-executes the running binary.
func TestMain(m *testing.M) {
	landlock.Main()
	// serveEnv makes this test binary run app.Main with its arguments
	// instead of the tests (record_test.go: the stdio server agentmcp
	// record starts and the replays run, without building the command).
	if os.Getenv(serveEnv) == "1" {
		os.Exit(app.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
