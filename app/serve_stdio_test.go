package app_test

import (
	"strings"
	"testing"
)

// TestServeStdioLogsWhatItServes: "serving MCP on stdio" (with the root)
// is logged on every start, also when stdin ends before the first message
// (a client that went away at once: </dev/null), which ended start-up
// before the line was logged in most runs (issue 33's new-user trial: 12
// to 15 runs of 20). The race is the reader's end of input against the
// catalog's validation, so the test runs it 20 times.
func TestServeStdioLogsWhatItServes(t *testing.T) {
	root := t.TempDir()
	for i := range 20 {
		code, stdout, stderr := runCLI(t, "serve", "stdio", "--root", root)
		if code != 0 || stdout != "" {
			t.Fatalf("run %d: exit %d, stdout %q; want 0 and nothing", i, code, stdout)
		}
		if !strings.Contains(stderr, `msg="serving MCP on stdio" root=`+root) {
			t.Fatalf("run %d: the log does not say what was served:\n%s", i, stderr)
		}
	}
}

// TestServeStdioCatalogError: a catalog the engine refuses (a submission
// tool named like a workspace tool) fails start-up with exit 1 and one
// error, never after a line saying it serves.
func TestServeStdioCatalogError(t *testing.T) {
	code, stdout, stderr := runCLI(t, "serve", "stdio", "--root", t.TempDir(), "--submit-name", "read_file")
	if code != 1 || stdout != "" || strings.Contains(stderr, "serving MCP") || strings.Count(stderr, "level=ERROR") != 1 ||
		!strings.Contains(stderr, "read_file") {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant 1, one error naming read_file, no serving line", code, stdout, stderr)
	}
}
