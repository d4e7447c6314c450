package workspace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/agentmcp/agentmcp/ports"
)

// UpdateCoalesce is how long the changes of one subscribed file are
// gathered into one update (docs/SPEC.md §2): the first change starts the
// wait, every change within it is folded in, and then each subscription of
// the file is told once. A burst of writes (an editor saving, a build
// regenerating a file) is one notifications/resources/updated per client,
// and a file rewritten without pause is reported about ten times a second.
const UpdateCoalesce = 100 * time.Millisecond

// watchHub watches the files of resource subscriptions: one fsnotify
// watcher (on Linux one inotify instance, of which a user has about 128)
// for the whole process, created with the first subscription and closed
// with the last; one watch per directory holding a subscribed file,
// counted by the subscriptions in it and removed with the last; the
// subscriptions of each file, told of its changes after UpdateCoalesce.
// A directory is watched rather than the file, as fsnotify advises: an
// editor's or write_file's atomic save renames a new file over the old
// one, which a watch on the old file's inode would not see.
type watchHub struct {
	// after runs f once d has passed and returns its stop (time.AfterFunc;
	// a test's own clock).
	after func(d time.Duration, f func()) (stop func() bool)

	mu   sync.Mutex
	w    *fsnotify.Watcher // nil while nothing is watched
	done chan struct{}     // closed when w's event loop has ended
	dirs map[string]*watchedDir
}

// watchedDir is one watched directory: its subscribed files by name, and
// how many subscriptions hold it. gone: the directory was removed or moved
// away, so its watch has ended (its subscriptions stay held, told nothing
// more, until they are released).
type watchedDir struct {
	path  string
	files map[string]*watchedFile
	refs  int
	gone  bool
}

// watchedFile is one subscribed file: its subscriptions, and the stop of
// the pending update while changes are being gathered.
type watchedFile struct {
	subs    map[*fileSub]bool
	pending func() bool
}

type fileSub struct{ updated func() }

// processWatches is the process's one watchHub: every workspace session
// shares it.
var processWatches = newWatchHub(func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop })

func newWatchHub(after func(time.Duration, func()) func() bool) *watchHub {
	return &watchHub{after: after, dirs: make(map[string]*watchedDir)}
}

// errWatchLimit refuses a subscription once the system's watch limits are
// reached (inotify's fs.inotify.max_user_watches or max_user_instances).
var errWatchLimit = ports.Refused("the system's file-watch limit is reached (fs.inotify.max_user_watches or max_user_instances): no more files can be watched now")

// watch starts telling updated of the changes of the file name in the
// directory dir (an absolute path), and returns the subscription's
// cancel. same says whether what dir names now is the directory the
// caller checked (through the workspace's os.Root): it is asked once the
// directory is watched, so a directory swapped for a link out of the root
// meanwhile is refused and not watched.
func (h *watchHub) watch(dir, name string, same func(os.FileInfo) bool, updated func()) (func(), error) {
	h.mu.Lock()
	d := h.dirs[dir]
	if d == nil {
		if err := h.add(dir); err != nil {
			closing := h.idle()
			h.mu.Unlock()
			closing()
			return nil, err
		}
		d = &watchedDir{path: dir, files: make(map[string]*watchedFile)}
		h.dirs[dir] = d
	}
	d.refs++
	f := d.files[name]
	if f == nil {
		f = &watchedFile{subs: make(map[*fileSub]bool)}
		d.files[name] = f
	}
	sub := &fileSub{updated: updated}
	f.subs[sub] = true
	h.mu.Unlock()
	var once sync.Once
	cancel := func() { once.Do(func() { h.release(d, name, f, sub) }) }
	if st, err := os.Stat(dir); err != nil || !same(st) {
		cancel()
		return nil, ports.Refused("the file's directory changed while it was being subscribed to; subscribe again")
	}
	return cancel, nil
}

// add watches dir, starting the watcher when none runs; under h.mu.
func (h *watchHub) add(dir string) error {
	if h.w == nil {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return watchError(err)
		}
		h.w, h.done = w, make(chan struct{})
		go h.loop(w, h.done)
	}
	if err := h.w.Add(dir); err != nil {
		return watchError(err)
	}
	return nil
}

func watchError(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EMFILE) {
		return errWatchLimit
	}
	return fmt.Errorf("the file cannot be watched: %w", err)
}

// idle detaches the watcher when nothing is watched any more and returns
// what closes it (waiting for its event loop to end), to run once h.mu is
// released; a no-op otherwise. Under h.mu.
func (h *watchHub) idle() func() {
	if len(h.dirs) > 0 || h.w == nil {
		return func() {}
	}
	w, done := h.w, h.done
	h.w, h.done = nil, nil
	return func() {
		_ = w.Close()
		<-done
	}
}

// release ends one subscription: the file's entry goes with its last
// subscription (its pending update stopped), the directory's watch with
// its last, and the watcher with the last directory.
func (h *watchHub) release(d *watchedDir, name string, f *watchedFile, sub *fileSub) {
	h.mu.Lock()
	delete(f.subs, sub)
	if len(f.subs) == 0 {
		if f.pending != nil {
			f.pending()
			f.pending = nil
		}
		if d.files[name] == f {
			delete(d.files, name)
		}
	}
	d.refs--
	if d.refs == 0 && h.dirs[d.path] == d {
		delete(h.dirs, d.path)
		if !d.gone && h.w != nil {
			_ = h.w.Remove(d.path) // gone already when the directory was removed meanwhile
		}
	}
	closing := h.idle()
	h.mu.Unlock()
	closing()
}

// loop reads w's events until w is closed, and its errors beside them.
//
// An error is taken at once, never behind h.mu: fsnotify's reader sends
// some errors (an IN_MOVE_SELF whose watch it could not remove) holding
// its own lock, which Add and Remove — called under h.mu by watch and
// release — need, so an error left waiting on h.mu would deadlock the
// two. An overflow (events were lost: any file may have changed) is then
// handled on a goroutine of its own. Events are sent without that lock
// and are handled here in order.
func (h *watchHub) loop(w *fsnotify.Watcher, done chan struct{}) {
	defer close(done)
	var overflows sync.WaitGroup
	errsDone := make(chan struct{})
	go func() {
		defer close(errsDone)
		for err := range w.Errors {
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				overflows.Go(func() { h.overflow(w) })
			}
		}
	}()
	for ev := range w.Events {
		h.event(w, ev)
	}
	<-errsDone
	overflows.Wait()
}

// changes are the operations that change what a read of a file returns:
// its content written, a file created or renamed onto its name (an atomic
// save), its removal or its renaming away. An attribute change (Chmod)
// is not one.
const changes = fsnotify.Write | fsnotify.Create | fsnotify.Remove | fsnotify.Rename

func (h *watchHub) event(w *fsnotify.Watcher, ev fsnotify.Event) {
	if !ev.Has(changes) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.w != w {
		return // a closed watcher's last events
	}
	if d := h.dirs[ev.Name]; d != nil && ev.Has(fsnotify.Remove|fsnotify.Rename) {
		// The watched directory itself went: its watch ended with it, and
		// every file in it changed (none is there any more).
		d.gone = true
		delete(h.dirs, ev.Name)
		for _, f := range d.files {
			h.schedule(f)
		}
		return
	}
	if d := h.dirs[filepath.Dir(ev.Name)]; d != nil {
		if f := d.files[filepath.Base(ev.Name)]; f != nil {
			h.schedule(f)
		}
	}
}

func (h *watchHub) overflow(w *fsnotify.Watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.w != w {
		return
	}
	for _, d := range h.dirs {
		for _, f := range d.files {
			h.schedule(f)
		}
	}
}

// schedule starts gathering f's changes, unless it is already; under
// h.mu.
func (h *watchHub) schedule(f *watchedFile) {
	if f.pending != nil {
		return
	}
	f.pending = h.after(UpdateCoalesce, func() { h.flush(f) })
}

// flush tells each of f's subscriptions of its changes; updated only
// marks a subscription pending (ports.ResourceSubscriber), so it runs
// under h.mu, and a subscription released before it runs is not told.
func (h *watchHub) flush(f *watchedFile) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f.pending = nil
	for sub := range f.subs {
		sub.updated()
	}
}
