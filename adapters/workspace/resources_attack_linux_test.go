//go:build linux

package workspace_test

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentmcp/agentmcp/adapters/workspace"
)

// watchReads is an inotify instance that reports the opens and reads
// (read(2) is IN_ACCESS) of the files it watches.
type watchReads struct {
	fd    int
	fence int // the watch on the fence file
}

func newWatchReads(t *testing.T, fence string) *watchReads {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	w := &watchReads{fd: fd}
	w.fence = w.add(t, fence)
	return w
}

func (w *watchReads) add(t *testing.T, path string) int {
	t.Helper()
	wd, err := unix.InotifyAddWatch(w.fd, path, unix.IN_OPEN|unix.IN_ACCESS)
	if err != nil {
		t.Fatalf("inotify_add_watch %s: %v", path, err)
	}
	return wd
}

// events reads the fence file, then returns the mask of every event each
// watch had before the fence's IN_ACCESS: inotify queues events in order,
// so everything done before the fence is in, and nothing waits on time.
func (w *watchReads) events(t *testing.T, fence string) map[int]uint32 {
	t.Helper()
	if _, err := os.ReadFile(fence); err != nil {
		t.Fatal(err)
	}
	got := map[int]uint32{}
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(w.fd, buf)
		if err != nil {
			t.Fatalf("reading inotify events: %v", err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if int(ev.Wd) == w.fence && ev.Mask&unix.IN_ACCESS != 0 {
				return got
			}
			got[int(ev.Wd)] |= ev.Mask
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// TestResourceHugeFileNothingRead: a resource read of a sparse 1 GiB file
// is refused from its size with nothing read — the kernel saw the file
// opened (to measure it on the descriptor) and never read — while a read
// of a small file under the same watch is seen as read (so the watch would
// have told).
func TestResourceHugeFileNothingRead(t *testing.T) {
	s, root, prefix := resourceSession(t, workspace.FileURIs, map[string]string{"small": "small", "fence": "fence"})
	huge := filepath.Join(root, "huge")
	sparseFile(t, huge, 1<<30)
	fence := filepath.Join(root, "fence")
	w := newWatchReads(t, fence)
	hw, sw := w.add(t, huge), w.add(t, filepath.Join(root, "small"))

	refused(t, s, prefix+"huge", `"huge" is 1073741824 bytes`)
	if c, err := read(t, s, prefix+"small"); err != nil || c[0].Text != "small" {
		t.Fatalf("small: %v, %v", c, err)
	}
	ev := w.events(t, fence)
	if ev[hw]&unix.IN_OPEN == 0 {
		t.Fatalf("the huge file's watch saw %#x, no open: the check proves nothing", ev[hw])
	}
	if ev[hw]&unix.IN_ACCESS != 0 {
		t.Error("the refused read of the 1 GiB file read from it")
	}
	if ev[sw]&unix.IN_ACCESS == 0 {
		t.Errorf("the small file's read was not seen (%#x): the watch cannot tell a read", ev[sw])
	}
}
