//go:build unix

package workspace_test

import (
	"path/filepath"
	"syscall"
	"testing"
)

// TestReadFileFIFO checks that a FIFO is refused at once: opening it for
// reading must not wait for a writer.
func TestReadFileFIFO(t *testing.T) {
	s, root := newSession(t, map[string]string{"a/x.txt": "needle"})
	if err := syscall.Mkfifo(filepath.Join(root, "a", "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	fail(t, invoke(t, s, "read_file", `{"path":"a/fifo"}`, nil), `"a/fifo" is not a regular file`)

	var res searchResult
	succeed(t, invoke(t, s, "search_text", `{"pattern":"needle"}`, nil), &res)
	if res.FilesSearched != 1 || len(res.Matches) != 1 {
		t.Errorf("search beside a FIFO = %+v", res)
	}
	var list listResult
	succeed(t, invoke(t, s, "list_dir", `{"path":"a"}`, nil), &list)
	if len(list.Entries) != 2 || list.Entries[0].Type != "other" {
		t.Errorf("list_dir beside a FIFO = %+v", list)
	}
}
