//go:build unix

package workspace_test

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/workspace"
)

// TestResourceFIFO: a FIFO is refused at once, never waited on.
func TestResourceFIFO(t *testing.T) {
	s, root, prefix := resourceSession(t, workspace.FileURIs, nil)
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	refused(t, s, prefix+"fifo", `"fifo" is not a regular file`)
	refused(t, s, prefix+"/dev/null", "absolute")
	for _, uri := range []string{prefix + "fifo", prefix + "/dev/null"} {
		if _, cancel, err := subscribe(t, s, uri); err == nil || cancel != nil {
			t.Fatalf("subscribe %s: %v, want a refusal", uri, err)
		}
	}
	expectIdle(t)
}
