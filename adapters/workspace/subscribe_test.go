package workspace_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
	"github.com/agentmcp/agentmcp/ports"
)

// subscribe subscribes to uri on s; each update is a value on the
// returned channel (never blocking the watcher: one pending at most).
func subscribe(t *testing.T, s *workspace.Session, uri string) (<-chan struct{}, func(), error) {
	t.Helper()
	updates := make(chan struct{}, 1)
	cancel, err := s.Features().Subscriber.SubscribeResource(t.Context(), uri, ports.Principal{}, func() {
		select {
		case updates <- struct{}{}:
		default:
		}
	})
	return updates, cancel, err
}

// awaitUpdate waits for one update (the bound only guards a hang).
func awaitUpdate(t *testing.T, updates <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-updates:
	case <-time.After(20 * time.Second):
		t.Fatalf("no update after %s", what)
	}
}

// expectIdle fails t unless the process's watcher holds nothing and is
// closed, as the kernel sees it too: no inotify instance open, no watch.
func expectIdle(t *testing.T) {
	t.Helper()
	if dirs, open := workspace.Watching(); dirs != 0 || open {
		t.Fatalf("the watcher holds %d directories (open: %v), want none and closed", dirs, open)
	}
	if instances, watches := kernelWatches(t); instances != 0 || watches != 0 {
		t.Fatalf("the process has %d inotify instances with %d watches, want none", instances, watches)
	}
}

// kernelWatches counts this process's inotify instances and the watches
// they hold, as /proc shows them (Linux): the kernel's own account, which
// no bookkeeping of the hub's can hide a leak from.
func kernelWatches(t *testing.T) (instances, watches int) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || target != "anon_inode:inotify" {
			continue // closed meanwhile (ReadDir's own descriptor), or no inotify instance
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		instances++
		for line := range strings.Lines(string(info)) {
			if strings.HasPrefix(line, "inotify wd:") {
				watches++
			}
		}
	}
	return instances, watches
}

// TestSubscribeChanges: a subscription to a file is told when it is
// written, replaced by an atomic save (a file renamed over it), removed,
// and created again; after cancel nothing is watched and the watcher is
// closed, its goroutines gone.
func TestSubscribeChanges(t *testing.T) {
	leakcheck.Check(t)
	for _, kind := range []workspace.ResourceURIs{workspace.FileURIs, workspace.WorkspaceURIs} {
		s, root, prefix := resourceSession(t, kind, map[string]string{"sub/a.txt": "a", "b.txt": "b"})
		updates, cancel, err := subscribe(t, s, prefix+"sub/a.txt")
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(root, "sub", "a.txt")
		if err := os.WriteFile(file, []byte("written"), 0o644); err != nil {
			t.Fatal(err)
		}
		awaitUpdate(t, updates, "a write")
		tmp := filepath.Join(root, "sub", ".a.txt.tmp")
		if err := os.WriteFile(tmp, []byte("saved"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
		awaitUpdate(t, updates, "a rename over the file")
		if err := os.Remove(file); err != nil {
			t.Fatal(err)
		}
		awaitUpdate(t, updates, "the removal")
		if err := os.WriteFile(file, []byte("again"), 0o644); err != nil {
			t.Fatal(err)
		}
		awaitUpdate(t, updates, "the file created again")
		if err := os.Rename(file, filepath.Join(root, "moved.txt")); err != nil {
			t.Fatal(err)
		}
		awaitUpdate(t, updates, "a rename away")
		if err := os.Rename(filepath.Join(root, "moved.txt"), file); err != nil {
			t.Fatal(err)
		}
		awaitUpdate(t, updates, "a rename back onto the file")
		// Another file in the same directory is another subscription's.
		other, cancelOther, err := subscribe(t, s, prefix+"b.txt")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "b.txt"), []byte("b2"), 0o644); err != nil {
			t.Fatal(err)
		}
		awaitUpdate(t, other, "a write of b.txt")
		if instances, watches := kernelWatches(t); instances != 1 || watches != 2 {
			t.Fatalf("%d inotify instances with %d watches for two directories, want 1 with 2", instances, watches)
		}
		cancel()
		cancel() // idempotent
		if instances, watches := kernelWatches(t); instances != 1 || watches != 1 {
			t.Fatalf("after one directory's last cancel: %d inotify instances with %d watches, want 1 with 1", instances, watches)
		}
		cancelOther()
		expectIdle(t)
	}
}

// TestSubscribeDirectoryRemoved: removing the directory of a subscribed
// file tells its subscription (the file is gone), and ends the
// directory's watch in the kernel; the subscription stays held until its
// cancel, which closes the watcher; the directory made again is
// subscribed to anew.
func TestSubscribeDirectoryRemoved(t *testing.T) {
	leakcheck.Check(t)
	s, root, prefix := resourceSession(t, workspace.FileURIs, map[string]string{"sub/a.txt": "a"})
	updates, cancel, err := subscribe(t, s, prefix+"sub/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(root, "sub")); err != nil {
		t.Fatal(err)
	}
	awaitUpdate(t, updates, "the directory's removal")
	if dirs, open := workspace.Watching(); dirs != 0 || !open {
		t.Fatalf("after the directory went: %d directories watched (open %v), want none, the watcher still open for the held subscription", dirs, open)
	}
	cancel()
	expectIdle(t)

	writeTree(t, root, map[string]string{"sub/a.txt": "b"})
	updates, cancel, err = subscribe(t, s, prefix+"sub/a.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sub", "a.txt"), []byte("c"), 0o644); err != nil {
		t.Fatal(err)
	}
	awaitUpdate(t, updates, "a write in the directory made again")
	cancel()
	expectIdle(t)
}

// TestSubscribeRefusals: a subscription to anything a read refuses —
// every spelling of a way out of the root, a directory, a missing file, a
// link out of the root, a file over the read bound — is refused the same
// way and holds nothing; a link inside the root is refused too (its
// target's changes would not be seen).
func TestSubscribeRefusals(t *testing.T) {
	for _, kind := range []workspace.ResourceURIs{workspace.FileURIs, workspace.WorkspaceURIs} {
		s, root, prefix := resourceSession(t, kind, map[string]string{"sub/a.txt": "a", "in.txt": "in"})
		if err := os.Symlink(filepath.Join(filepath.Dir(root), "secret"), filepath.Join(root, "out")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("in.txt", filepath.Join(root, "alias")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Dir(root), filepath.Join(root, "up")); err != nil {
			t.Fatal(err)
		}
		sparseFile(t, filepath.Join(root, "huge"), 1<<30)
		cases := append(traversals(prefix, root),
			struct{ uri, want string }{prefix + "out", "leads outside the workspace root"},
			struct{ uri, want string }{prefix + "up/secret", "leads outside the workspace root"},
			struct{ uri, want string }{prefix + "alias", `"alias" is a symbolic link`},
			struct{ uri, want string }{prefix + "huge", "1073741824 bytes"},
		)
		for _, tc := range cases {
			_, cancel, err := subscribe(t, s, tc.uri)
			if err == nil || cancel != nil || !(errors.Is(err, ports.ErrRefused) || errors.Is(err, ports.ErrResourceNotFound)) {
				t.Fatalf("subscribe %q = %v; want a refusal", tc.uri, err)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "SECRET") {
				t.Errorf("subscribe %q: %q, want it to say %q", tc.uri, err, tc.want)
			}
		}
		expectIdle(t)
	}
}
