package agent

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/agentmcp/agentmcp/ports"
)

// Bounds of a turn's stored changes (docs/SPEC.md §9 "Turn changes").
const (
	// MaxTurnDiffBytes bounds the text of one turn's diffs, all files
	// together; a diff past it is cut, and later ones dropped, each with a
	// note. Half the history budget bounds it too, so a turn's messages
	// always keep the other half.
	MaxTurnDiffBytes = 64 << 10

	// DiffContext is the unchanged lines a turn's diff shows around each
	// change.
	DiffContext = 3

	// maxHeldChangeBytes bounds the file contents a running turn holds to
	// diff when it ends (each write is at most 1 MiB before and after, and
	// each is approved by a person, but a turn may make 512 of them): a
	// file first changed past it keeps its path with a note instead of a
	// diff.
	maxHeldChangeBytes = 8 << 20
)

// changes are the files a running turn's tools changed, each with its
// content before its first change and after its last: what the turn's
// diffs are made of. The tools report through toolCaller.FileChanged.
type changes struct {
	mu    sync.Mutex
	files []*change // in the order first changed
	held  int       // bytes of content held
}

type change struct {
	path          string
	before, after []byte
	created       bool // it did not exist before the turn
	unread        bool // its content before was not read (too large)
	dropped       bool // past maxHeldChangeBytes: no content held
}

// add records c: a file changed again keeps its first before and takes the
// new after.
func (cs *changes) add(c ports.FileChange) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, f := range cs.files {
		if f.path == c.Path {
			if !f.dropped {
				cs.held += len(c.After) - len(f.after)
				f.after = c.After
			}
			return
		}
	}
	f := &change{path: c.Path, before: c.Before, after: c.After, created: c.Created, unread: c.BeforeUnread}
	if cs.held+len(c.Before)+len(c.After) > maxHeldChangeBytes {
		f.before, f.after, f.dropped = nil, nil, true
	}
	cs.held += len(f.before) + len(f.after)
	cs.files = append(cs.files, f)
}

// diffs returns the turn's changes as stored (each file's unified diff and
// its line counts; the diffs' text within budget bytes, cut with notes)
// and as reported. A file whose content ended as it began is left out.
func (cs *changes) diffs(budget int) ([]ports.FileDiff, []ports.ChangedFile) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	diffs := []ports.FileDiff{}
	for _, f := range cs.files {
		d, ok := f.diff()
		if ok {
			diffs = append(diffs, d)
		}
	}
	cutDiffs(diffs, budget)
	report := make([]ports.ChangedFile, len(diffs))
	for i, d := range diffs {
		report[i] = ports.ChangedFile{Path: d.Path, Added: d.Added, Removed: d.Removed}
	}
	return diffs, report
}

// diff is f's unified diff (DiffContext lines of context; a created file
// from /dev/null) with its line counts; false when nothing changed. A file
// that is not text (not UTF-8, or holding NUL) gets git's one line
// "Binary files … differ", a file not held or not read a note; neither
// counts lines.
func (f *change) diff() (ports.FileDiff, bool) {
	d := ports.FileDiff{Path: f.path}
	from, to := "a/"+f.path, "b/"+f.path
	if f.created {
		from = "/dev/null"
	}
	switch {
	case f.dropped:
		d.Diff = fmt.Sprintf("[agentmcp: %s changed; not diffed: the turn's changes passed %d bytes]\n", f.path, maxHeldChangeBytes)
		return d, true
	case f.unread:
		d.Diff = fmt.Sprintf("[agentmcp: %s was replaced; not diffed: its earlier content was not read (over 1 MiB)]\n", f.path)
		d.Added = lineCount(f.after)
		return d, true
	case bytes.Equal(f.before, f.after) && !f.created:
		return d, false
	case !isText(f.before) || !isText(f.after):
		d.Diff = fmt.Sprintf("Binary files %s and %s differ\n", from, to)
		return d, true
	}
	before, after := string(f.before), string(f.after)
	u, err := udiff.ToUnifiedDiff(from, to, before, udiff.Lines(before, after), DiffContext)
	if err != nil { // the library's edits are its own: cannot happen
		d.Diff = "[agentmcp: " + f.path + " changed; the diff could not be made]\n"
		return d, true
	}
	for _, h := range u.Hunks {
		for _, l := range h.Lines {
			switch l.Kind {
			case udiff.Insert:
				d.Added++
			case udiff.Delete:
				d.Removed++
			}
		}
	}
	d.Diff = u.String()
	if f.created && d.Diff == "" { // an empty new file: no hunk, but a change
		d.Diff = "--- /dev/null\n+++ " + to + "\n"
	}
	return d, true
}

// cutDiffs bounds the diffs' text to budget bytes in all, in order: the
// diff that passes it is cut at a line's end, and every later one is
// dropped, each with a one-line note; the line counts stay whole.
func cutDiffs(diffs []ports.FileDiff, budget int) {
	used := 0
	for i := range diffs {
		d := &diffs[i]
		if used+len(d.Diff) <= budget {
			used += len(d.Diff)
			continue
		}
		keep := max(budget-used, 0)
		if i := strings.LastIndexByte(d.Diff[:keep], '\n'); i >= 0 {
			keep = i + 1
		} else {
			keep = 0
		}
		if keep == 0 {
			d.Diff = fmt.Sprintf("[agentmcp: the diff of %s (%d bytes) was dropped: a turn keeps %d bytes of diffs]\n", d.Path, len(d.Diff), budget)
		} else {
			d.Diff = d.Diff[:keep] + fmt.Sprintf("[agentmcp: diff cut at %d of %d bytes: a turn keeps %d bytes of diffs]\n", keep, len(d.Diff), budget)
		}
		used = budget
	}
}

// diffSize is what a turn's diffs count against the history budget.
func diffSize(diffs []ports.FileDiff) int {
	n := 0
	for _, d := range diffs {
		n += len(d.Path) + len(d.Diff)
	}
	return n
}

func isText(b []byte) bool { return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 }

// lineCount counts b's lines, a last one without a newline included.
func lineCount(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}
