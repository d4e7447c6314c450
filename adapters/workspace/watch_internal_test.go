package workspace

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// manualClock is a watchHub's after that runs nothing by itself: each
// pending update waits until the test fires it.
type manualClock struct {
	mu        sync.Mutex
	pending   []func()
	scheduled chan struct{} // one value per after
}

func newManualClock() *manualClock { return &manualClock{scheduled: make(chan struct{}, 64)} }

func (c *manualClock) after(_ time.Duration, f func()) func() bool {
	c.mu.Lock()
	c.pending = append(c.pending, f)
	c.mu.Unlock()
	c.scheduled <- struct{}{}
	return func() bool { return false }
}

// fire runs every pending update and returns how many there were.
func (c *manualClock) fire() int {
	c.mu.Lock()
	fs := c.pending
	c.pending = nil
	c.mu.Unlock()
	for _, f := range fs {
		f()
	}
	return len(fs)
}

func awaitScheduled(t *testing.T, c *manualClock) {
	t.Helper()
	select {
	case <-c.scheduled:
	case <-time.After(20 * time.Second):
		t.Fatal("no change was scheduled")
	}
}

func counter() (func(), func() int) {
	var mu sync.Mutex
	n := 0
	return func() { mu.Lock(); n++; mu.Unlock() }, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

func always(os.FileInfo) bool { return true }

// TestWatchCoalesce: a thousand writes of a file become one update. The
// writes are followed by one write of a second file of the directory:
// inotify reports a directory's events in order and the hub reads them on
// one goroutine, so once the second file's change is scheduled every
// write of the first has been seen, and only one update was scheduled for
// all of them.
func TestWatchCoalesce(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"target", "sentinel"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	clock := newManualClock()
	h := newWatchHub(clock.after)
	target, targetN := counter()
	sentinel, sentinelN := counter()
	cancelT, err := h.watch(dir, "target", always, target)
	if err != nil {
		t.Fatal(err)
	}
	cancelS, err := h.watch(dir, "sentinel", always, sentinel)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "target"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if _, err := f.WriteString(strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	if err := os.WriteFile(filepath.Join(dir, "sentinel"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	awaitScheduled(t, clock) // the target's
	awaitScheduled(t, clock) // the sentinel's: every write of the target was seen before it
	if n := clock.fire(); n != 2 {
		t.Fatalf("%d updates scheduled, want 2 (one per file)", n)
	}
	if targetN() != 1 || sentinelN() != 1 {
		t.Fatalf("told target %d times, sentinel %d times; want once each", targetN(), sentinelN())
	}
	cancelT()
	cancelS()
	if h.w != nil || len(h.dirs) != 0 {
		t.Fatalf("after the last cancel: watcher %v, %d directories", h.w, len(h.dirs))
	}
}

// TestWatchEvents: an attribute change is no update, and neither is a
// change of a file nobody subscribed to; a change of a subscribed file,
// and the removal of the watched directory itself, are; an update whose
// subscription was released before it ran tells nobody.
func TestWatchEvents(t *testing.T) {
	dir := t.TempDir()
	clock := newManualClock()
	h := newWatchHub(clock.after)
	told, toldN := counter()
	cancel, err := h.watch(dir, "f", always, told)
	if err != nil {
		t.Fatal(err)
	}
	w := h.w
	h.event(w, fsnotify.Event{Name: filepath.Join(dir, "f"), Op: fsnotify.Chmod})
	h.event(w, fsnotify.Event{Name: filepath.Join(dir, "other"), Op: fsnotify.Write})
	if n := clock.fire(); n != 0 {
		t.Fatalf("%d updates scheduled for a chmod and another file", n)
	}
	h.event(w, fsnotify.Event{Name: filepath.Join(dir, "f"), Op: fsnotify.Write})
	h.event(w, fsnotify.Event{Name: dir, Op: fsnotify.Remove})
	if n := clock.fire(); n != 1 || toldN() != 1 {
		t.Fatalf("%d updates scheduled, told %d times; want 1 and 1", n, toldN())
	}
	h.event(w, fsnotify.Event{Name: filepath.Join(dir, "f"), Op: fsnotify.Write}) // the directory's watch is gone
	if n := clock.fire(); n != 0 {
		t.Fatalf("%d updates after the directory went", n)
	}
	cancel()
	if h.w != nil || len(h.dirs) != 0 {
		t.Fatalf("after cancel: watcher %v, %d directories", h.w, len(h.dirs))
	}

	// Released before its update runs: nobody is told.
	cancel, err = h.watch(dir, "f", always, told)
	if err != nil {
		t.Fatal(err)
	}
	h.event(h.w, fsnotify.Event{Name: filepath.Join(dir, "f"), Op: fsnotify.Write})
	cancel()
	clock.fire()
	if toldN() != 1 {
		t.Fatalf("a released subscription was told (%d)", toldN())
	}
}

// TestWatchSwappedDirectory: when what the directory's path names is not
// the directory the workspace checked (swapped for a link meanwhile), the
// subscription is refused and nothing stays watched.
func TestWatchSwappedDirectory(t *testing.T) {
	h := newWatchHub(newManualClock().after)
	_, err := h.watch(t.TempDir(), "f", func(os.FileInfo) bool { return false }, func() {})
	if err == nil {
		t.Fatal("a swapped directory was watched")
	}
	if h.w != nil || len(h.dirs) != 0 {
		t.Fatalf("after the refusal: watcher %v, %d directories", h.w, len(h.dirs))
	}
}

// TestWatchErrorsWhileLocked: fsnotify's reader sends an error on
// Watcher.Errors holding its own lock (an IN_MOVE_SELF whose watch could
// not be removed), and Add and Remove, which the hub calls holding h.mu,
// need that lock; so the hub must take every error without waiting for
// h.mu, or a subscribe at that moment would deadlock the watcher. Here
// h.mu is held, as a subscribe holds it, while the reader's part is
// played by sending errors: each send must be taken, and an overflow then
// tells every subscribed file once h.mu is free.
func TestWatchErrorsWhileLocked(t *testing.T) {
	dir := t.TempDir()
	clock := newManualClock()
	h := newWatchHub(clock.after)
	told, toldN := counter()
	cancel, err := h.watch(dir, "f", always, told)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	h.mu.Lock()
	errs := h.w.Errors
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for range 3 {
			errs <- fsnotify.ErrEventOverflow
		}
	}()
	select {
	case <-sent:
	case <-time.After(20 * time.Second): // a hang guard: the sends cannot complete once the hub waits for h.mu
		h.mu.Unlock()
		t.Fatal("the watcher's errors were not taken while h.mu was held: fsnotify's reader would be stuck holding its lock")
	}
	h.mu.Unlock()
	awaitScheduled(t, clock) // the overflow's update of f, scheduled once h.mu is free
	clock.fire()
	if toldN() != 1 {
		t.Fatalf("told %d times after an overflow, want 1", toldN())
	}
}
