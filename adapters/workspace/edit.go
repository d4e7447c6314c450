package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// DiffContext is how many unchanged lines edit_file's diff shows around
// each change.
const DiffContext = 3

// MaxDiffLines bounds the diff edit_file builds for its prompt; the engine
// shows at most [domain.MaxLines] of them and counts the rest.
const MaxDiffLines = 1000

type editResult struct {
	Path         string `json:"path"`
	Replacements int    `json:"replacements"`
	Bytes        int    `json:"bytes"`
	SHA256       string `json:"sha256"` // hex, of the new content
}

// boolArg reads an optional boolean argument; absent or null is false.
func (a toolArgs) boolArg(name string) (bool, error) {
	raw, has := a[name]
	if !has || string(raw) == "null" {
		return false, nil
	}
	var v bool
	if json.Unmarshal(raw, &v) != nil {
		return false, invalidArgs(fmt.Sprintf("argument %q must be a boolean", name))
	}
	return v, nil
}

// editFile replaces exact text in one file. It checks everything it can
// before asking (the path as write_file does, the file's size, that
// old_text occurs as required and that the edit changes something), asks
// with a unified diff of the change, and after the approval writes only if
// the file is still the one read, byte for byte: otherwise the edit would
// land on content the person never saw.
func (s *Session) editFile(ctx context.Context, args toolArgs, caller ports.Caller) (any, error) {
	p, err := pathArg(args, true)
	if err != nil {
		return nil, err
	}
	oldText, _, err := args.str("old_text", true)
	if err != nil {
		return nil, err
	}
	newText, _, err := args.str("new_text", true)
	if err != nil {
		return nil, err
	}
	all, err := args.boolArg("replace_all")
	if err != nil {
		return nil, err
	}
	switch {
	case p.display == ".":
		return nil, errors.New(`"." is the workspace root, not a file`)
	case oldText == "":
		return nil, invalidArgs("old_text must not be empty")
	case oldText == newText:
		return nil, errors.New("old_text and new_text are the same: the edit would change nothing")
	}

	dirs, err := s.checkDirs(relPath{display: path.Dir(p.display)})
	if err != nil {
		return nil, err
	}
	st, err := s.root.Lstat(p.name)
	switch {
	case err != nil:
		return nil, fsError(p, err)
	case st.IsDir():
		return nil, fmt.Errorf("%q is a directory", p.display)
	case st.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("%q is a symbolic link: edit_file does not edit through links", p.display)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%q is not a regular file", p.display)
	case st.Size() > MaxWriteBytes:
		return nil, fmt.Errorf("%q is %d bytes: edit_file edits files of at most %d bytes (1 MiB)", p.display, st.Size(), MaxWriteBytes)
	}
	f, _, err := s.openRegular(p)
	if err != nil {
		return nil, err
	}
	data, ok, err := readCapped(f, MaxWriteBytes)
	f.Close()
	if err != nil {
		return nil, fsError(p, err)
	}
	if !ok {
		return nil, fmt.Errorf("%q grew past %d bytes (1 MiB) while it was read", p.display, MaxWriteBytes)
	}

	old, repl := []byte(oldText), []byte(newText)
	n := bytes.Count(data, old)
	switch {
	case n == 0:
		return nil, fmt.Errorf("old_text was not found in %q: it must match the file exactly, whitespace and line ends included (read the file again)", p.display)
	case n > 1 && !all:
		return nil, fmt.Errorf("old_text occurs %d times in %q: include more of the surrounding text to make it unique, or set replace_all to replace every occurrence", n, p.display)
	}
	edited := bytes.ReplaceAll(data, old, repl)
	if len(edited) > MaxWriteBytes {
		return nil, fmt.Errorf("the edited %q would be %d bytes: edit_file writes at most %d bytes (1 MiB)", p.display, len(edited), MaxWriteBytes)
	}
	if ctx.Err() != nil {
		return nil, cancelled("edit_file")
	}

	noun := "replacement"
	if n > 1 {
		noun = "replacements"
	}
	prompt := domain.PermissionPrompt{
		Tool:    "edit_file",
		Summary: fmt.Sprintf("Edit a file of %d bytes in the workspace: %d %s", len(data), n, noun),
		Arguments: []domain.Argument{
			{Name: "path", Value: p.display, Path: true},
			{Name: "diff", Value: unifiedDiff(p.display, data, old, repl), Lines: true},
		},
	}
	if caller.RequestPermission(ctx, prompt) != domain.AllowOnce {
		return nil, fmt.Errorf("Permission denied: editing %q was not allowed. %s", p.display, notApproved(caller))
	}
	if ctx.Err() != nil {
		return nil, cancelled("edit_file")
	}
	verify := func(dir *os.Root, base string) error {
		now, err := dir.Lstat(base)
		if err != nil || !os.SameFile(now, st) {
			return s.changed(p.display, false)
		}
		f, err := dir.OpenFile(base, os.O_RDONLY|openNonblock, 0)
		if err != nil {
			return s.changed(p.display, false)
		}
		cur, ok, err := readCapped(f, MaxWriteBytes)
		f.Close()
		if err != nil || !ok || !bytes.Equal(cur, data) {
			return fmt.Errorf("%q changed while permission was pending (its content is not what the diff was made from): nothing was written; read it and call edit_file again", p.display)
		}
		return nil
	}
	if err := s.replace(p, dirs, edited, st.Mode().Perm(), false, verify, nil); err != nil {
		return nil, err
	}
	ports.ReportChange(caller, ports.FileChange{Path: p.display, Before: data, After: edited})
	sum := sha256.Sum256(edited)
	return editResult{Path: p.display, Replacements: n, Bytes: len(edited), SHA256: hex.EncodeToString(sum[:])}, nil
}

// unifiedDiff is the change replacing every old in data by repl makes, as
// a unified diff (hunks of DiffContext lines of context; overlapping hunks
// merged), at most MaxDiffLines lines. The change is known exactly, so no
// diff algorithm is needed: each hunk is the lines the occurrences touch,
// with the lines they leave alike at either end shown as context.
func unifiedDiff(name string, data, old, repl []byte) string {
	starts := lineStarts(data)
	lineOf := func(off int) int { // 0-based line holding byte off
		lo, hi := 0, len(starts)
		for hi-lo > 1 {
			mid := (lo + hi) / 2
			if starts[mid] <= off {
				lo = mid
			} else {
				hi = mid
			}
		}
		return lo
	}
	lineEnd := func(line int) int { // offset after the line's newline
		if line+1 < len(starts) {
			return starts[line+1]
		}
		return len(data)
	}

	// Group the occurrences into hunks: [first, last] lines they touch.
	type group struct{ first, last, count int }
	var groups []group
	for off := 0; ; {
		i := bytes.Index(data[off:], old)
		if i < 0 {
			break
		}
		at := off + i
		g := group{first: lineOf(at), last: lineOf(at + len(old) - 1), count: 1}
		if k := len(groups) - 1; k >= 0 && g.first-groups[k].last <= 2*DiffContext+1 {
			groups[k].last, groups[k].count = max(groups[k].last, g.last), groups[k].count+1
		} else {
			groups = append(groups, g)
		}
		off = at + len(old)
	}

	var b strings.Builder
	b.WriteString("--- a/" + name + "\n+++ b/" + name)
	lines, shift := 2, 0
	for _, g := range groups {
		a, z := max(0, g.first-DiffContext), min(len(starts)-1, g.last+DiffContext)
		before := data[starts[a]:lineEnd(z)]
		after := bytes.Replace(before, old, repl, g.count)
		ob, nb := splitLines(before), splitLines(after)
		// Lines alike at both ends are context; the middle changed.
		pre := 0
		for pre < len(ob) && pre < len(nb) && ob[pre] == nb[pre] {
			pre++
		}
		post := 0
		for post < len(ob)-pre && post < len(nb)-pre && ob[len(ob)-1-post] == nb[len(nb)-1-post] {
			post++
		}
		fmt.Fprintf(&b, "\n@@ -%s +%s @@", hunkRange(a, len(ob)), hunkRange(a+shift, len(nb)))
		emit := func(prefix string, ls []string) bool {
			for _, l := range ls {
				if lines == MaxDiffLines {
					b.WriteString("\n… (diff cut at " + strconv.Itoa(MaxDiffLines) + " lines)")
					return false
				}
				b.WriteString("\n" + prefix + l)
				lines++
			}
			return true
		}
		if !emit(" ", ob[:pre]) || !emit("-", ob[pre:len(ob)-post]) || !emit("+", nb[pre:len(nb)-post]) || !emit(" ", ob[len(ob)-post:]) {
			break
		}
		shift += len(nb) - len(ob)
	}
	return b.String()
}

// hunkRange is a unified diff range: 1-based start and count ("start,count";
// for an empty range the line before it).
func hunkRange(start0, count int) string {
	if count == 0 {
		return fmt.Sprintf("%d,0", start0)
	}
	return fmt.Sprintf("%d,%d", start0+1, count)
}

// lineStarts returns the offset of each line of data (at least one).
func lineStarts(data []byte) []int {
	starts := []int{0}
	for i, c := range data {
		if c == '\n' && i+1 < len(data) {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// splitLines splits text into lines without their "\n"; an empty text is
// no lines.
func splitLines(text []byte) []string {
	if len(text) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")
}
