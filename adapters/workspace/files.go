package workspace

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// pathArg reads and checks a path argument; absent optional ones are ".".
func pathArg(args toolArgs, required bool) (relPath, error) {
	p, ok, err := args.str("path", required)
	if err != nil {
		return relPath{}, err
	}
	if !ok {
		return relPath{display: ".", name: "."}, nil
	}
	return cleanPath(p)
}

// openRegular opens name in the root for reading and returns it with its
// size, or an error if it is not a regular file. The type is checked on the
// open descriptor, so what is read is what was checked.
func (s *Session) openRegular(p relPath) (*os.File, int64, error) {
	f, err := s.root.OpenFile(p.name, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, 0, fsError(p, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fsError(p, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		if st.IsDir() {
			return nil, 0, fmt.Errorf("%q is a directory", p.display)
		}
		return nil, 0, fmt.Errorf("%q is not a regular file", p.display)
	}
	return f, st.Size(), nil
}

// readCapped reads f, at most max bytes; ok is false when f holds more (it
// may have grown since it was measured).
func readCapped(f *os.File, max int64) (data []byte, ok bool, err error) {
	data, err = io.ReadAll(io.LimitReader(f, max+1))
	return data, int64(len(data)) <= max, err
}

// listEntry is one entry of a list_dir result.
type listEntry struct {
	Name string `json:"name"`
	Type string `json:"type"`           // file, dir, symlink or other
	Size *int64 `json:"size,omitempty"` // bytes; files only
}

type listResult struct {
	Path      string      `json:"path"`
	Entries   []listEntry `json:"entries"`
	Truncated bool        `json:"truncated"`
	Skipped   int         `json:"skipped"` // entries whose names are not UTF-8
}

func (s *Session) listDir(ctx context.Context, args toolArgs, _ ports.Caller) (any, error) {
	p, err := pathArg(args, true)
	if err != nil {
		return nil, err
	}
	d, err := s.root.OpenFile(p.name, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, fsError(p, err)
	}
	defer d.Close()
	if st, err := d.Stat(); err != nil {
		return nil, fsError(p, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%q is not a directory", p.display)
	}

	res := listResult{Path: p.display, Entries: []listEntry{}}
	// Keep the first MaxListEntries names in order without holding the whole
	// directory: trim whenever twice the cap has accumulated.
	trim := func() {
		slices.SortFunc(res.Entries, func(a, b listEntry) int { return strings.Compare(a.Name, b.Name) })
		if len(res.Entries) > MaxListEntries {
			res.Entries = res.Entries[:MaxListEntries]
			res.Truncated = true
		}
	}
	for {
		if ctx.Err() != nil {
			return nil, cancelled("list_dir")
		}
		batch, err := d.ReadDir(256)
		for _, e := range batch {
			if !nameable(e.Name()) {
				res.Skipped++
				continue
			}
			res.Entries = append(res.Entries, describeEntry(e))
		}
		if len(res.Entries) > 2*MaxListEntries {
			trim()
		}
		if errors.Is(err, io.EOF) || (err == nil && len(batch) == 0) {
			break
		}
		if err != nil {
			return nil, fsError(p, err)
		}
	}
	trim()
	return res, nil
}

// nameable reports whether a directory entry's name can be reported to a
// client and handed back: JSON text is Unicode, so a name that is not valid
// UTF-8 would come out with U+FFFD in place of its stray bytes, naming
// nothing or, worse, another file. Such entries are left out and counted
// (the package doc says why no escaped form is offered instead).
func nameable(name string) bool { return utf8.ValidString(name) }

func describeEntry(e fs.DirEntry) listEntry {
	le := listEntry{Name: e.Name()}
	switch t := e.Type(); {
	case t.IsDir():
		le.Type = "dir"
	case t&fs.ModeSymlink != 0:
		le.Type = "symlink"
	case t.IsRegular():
		le.Type = "file"
		if info, err := e.Info(); err == nil { // an os.Root listing stats each entry relative to the directory
			size := info.Size()
			le.Size = &size
		}
	default:
		le.Type = "other"
	}
	return le
}

type readResult struct {
	Path     string `json:"path"`
	Size     int    `json:"size"`     // bytes
	Encoding string `json:"encoding"` // utf-8 or base64
	Content  string `json:"content"`
}

func (s *Session) readFile(ctx context.Context, args toolArgs, _ ports.Caller) (any, error) {
	p, err := pathArg(args, true)
	if err != nil {
		return nil, err
	}
	data, err := s.readRegular(ctx, p, "read_file")
	if err != nil {
		return nil, err
	}
	res := readResult{Path: p.display, Size: len(data), Encoding: "utf-8", Content: string(data)}
	if !utf8.Valid(data) {
		res.Encoding, res.Content = "base64", base64.StdEncoding.EncodeToString(data)
	}
	return res, nil
}

// readRegular reads the regular file p, at most [MaxReadBytes]: the one
// reader of read_file and of resources/read (docs/SPEC.md §8). A bigger
// file is refused before anything is read, as is the root, a directory,
// a FIFO or device, a path that leads outside the root; who names the
// reader ("read_file") in its messages.
func (s *Session) readRegular(ctx context.Context, p relPath, who string) ([]byte, error) {
	f, err := s.openReadable(p, who)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if ctx.Err() != nil {
		return nil, cancelled(who)
	}
	data, ok, err := readCapped(f, MaxReadBytes)
	if err != nil {
		return nil, fsError(p, err)
	}
	if !ok {
		return nil, tooBig(p, int64(len(data)), who)
	}
	return data, nil
}

// openReadable opens p as readRegular reads it, with its refusals: not the
// root, a regular file (openRegular), at most MaxReadBytes by its size;
// who names the reader in the refusal ("read_file", "a resource read").
func (s *Session) openReadable(p relPath, who string) (*os.File, error) {
	if p.display == "." {
		return nil, errors.New(`"." is the workspace root, not a file`)
	}
	f, size, err := s.openRegular(p)
	if err != nil {
		return nil, err
	}
	if size > MaxReadBytes {
		f.Close()
		return nil, tooBig(p, size, who)
	}
	return f, nil
}

func tooBig(p relPath, n int64, who string) error {
	return fmt.Errorf("%q is %d bytes: %s reads files of at most %d bytes (1 MiB)", p.display, n, who, MaxReadBytes)
}

type searchMatch struct {
	Path string `json:"path"`
	Line int    `json:"line"` // from 1
	Text string `json:"text"`
	Cut  bool   `json:"cut,omitempty"`
}

type searchResult struct {
	Pattern       string        `json:"pattern"`
	Path          string        `json:"path"`
	Matches       []searchMatch `json:"matches"`
	Truncated     bool          `json:"truncated"`
	FilesSearched int           `json:"filesSearched"`
	FilesSkipped  int           `json:"filesSkipped"`
}

// errStop ends a walk that has found more than MaxMatches.
var errStop = errors.New("stop")

// programSize is the number of instructions pattern compiles to. Go's
// regexp runs in time linear in the input, but the factor is the program's
// size: a short pattern of nested repetitions ("(.*){1000}") compiles to
// thousands of instructions and makes each byte cost as many steps.
func programSize(pattern string) int {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0
	}
	return len(prog.Inst)
}

// searcher is one search_text walk.
type searcher struct {
	s        *Session
	ctx      context.Context
	caller   ports.Caller
	re       *regexp.Regexp
	res      searchResult
	examined int        // files looked at, searched or skipped
	long     lineReader // feeds lines over CancelCheckBytes to the matcher
}

// lineCheckBytes is how often lineReader checks for cancellation: finer
// than CancelCheckBytes, since a check costs nothing next to a rune's
// matching, so that a cancelled match ends well within one unit.
const lineCheckBytes = 256

// lineReader hands one line to regexp.MatchReader a rune at a time, decoded
// as regexp decodes a []byte (an invalid byte is U+FFFD, one byte wide), and
// reports the end of the line early once ctx is done: Go's regexp offers no
// other way to stop a match, and one line can cost seconds.
type lineReader struct {
	ctx     context.Context
	line    []byte
	off     int       // bytes handed out
	check   int       // offset of the next cancellation check
	onCheck func(int) // the hooks' lineCheck; nil outside tests
}

func (r *lineReader) reset(ctx context.Context, line []byte, onCheck func(int)) {
	*r = lineReader{ctx: ctx, line: line, onCheck: onCheck}
}

func (r *lineReader) ReadRune() (rune, int, error) {
	if r.off >= r.check {
		if r.onCheck != nil {
			r.onCheck(r.off)
		}
		if err := r.ctx.Err(); err != nil {
			return 0, 0, err
		}
		r.check = r.off + lineCheckBytes
	}
	if r.off >= len(r.line) {
		return 0, 0, io.EOF
	}
	c, size := rune(r.line[r.off]), 1
	if c >= utf8.RuneSelf {
		c, size = utf8.DecodeRune(r.line[r.off:])
	}
	r.off += size
	return c, size, nil
}

// match reports whether line matches, matching at most CancelCheckBytes
// bytes between two checks for cancellation. When w.ctx ends meanwhile the
// answer means nothing: the caller checks w.ctx after it.
func (w *searcher) match(line []byte) bool {
	if len(line) <= CancelCheckBytes {
		return w.re.Match(line) // in one piece: keeps regexp's fast paths (literal prefixes, backtracking)
	}
	w.long.reset(w.ctx, line, w.s.hooks.lineCheck)
	//lint:ignore SA1012 a nil context is reset's "no call": the reader keeps none between lines
	defer w.long.reset(nil, nil, nil)
	return w.re.MatchReader(&w.long)
}

// patternArg reads tool's required "pattern" argument: a string of 1 to
// MaxPatternBytes bytes (a glob for find_files, a regular expression for
// search_text; each tool checks its own syntax after).
func patternArg(args toolArgs, tool string) (string, error) {
	pattern, _, err := args.str("pattern", true)
	if err != nil {
		return "", err
	}
	switch {
	case pattern == "":
		return "", invalidArgs("pattern must not be empty")
	case len(pattern) > MaxPatternBytes:
		return "", invalidArgs(fmt.Sprintf("pattern is %d bytes; %s takes at most %d", len(pattern), tool, MaxPatternBytes))
	}
	return pattern, nil
}

func (s *Session) searchText(ctx context.Context, args toolArgs, caller ports.Caller) (any, error) {
	pattern, err := patternArg(args, "search_text")
	if err != nil {
		return nil, err
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("invalid pattern: %v (search_text takes a Go regular expression; escape metacharacters with \\)", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	if n := programSize(pattern); n > MaxPatternInsts {
		return nil, invalidArgs(fmt.Sprintf("pattern is too complex (%d instructions compiled; search_text takes at most %d): nested or large repetitions cost time on every byte searched", n, MaxPatternInsts))
	}
	p, err := pathArg(args, false)
	if err != nil {
		return nil, err
	}
	w := &searcher{s: s, ctx: ctx, caller: caller, re: re,
		res: searchResult{Pattern: pattern, Path: p.display, Matches: []searchMatch{}}}

	st, err := s.root.Stat(p.name) // follows a link named by the client, inside the root only
	if err != nil {
		return nil, fsError(p, err)
	}
	switch {
	case st.IsDir():
		err = w.dir(p.display)
	case st.Mode().IsRegular():
		err = w.file(p.display)
	default:
		return nil, fmt.Errorf("%q is neither a directory nor a regular file", p.display)
	}
	if err != nil && err != errStop {
		return nil, err
	}
	return w.res, nil
}

func (s *Session) beforeOpen(rel string) {
	if s.hooks.beforeOpen != nil {
		s.hooks.beforeOpen(rel)
	}
}

// dir searches the directory rel (slash-separated, relative to the root),
// entries in name order. Symbolic links and .git directories are not entered.
// A directory that cannot be read counts as one skipped file, as does a file
// or directory whose name is not UTF-8 (it is neither searched nor entered).
func (w *searcher) dir(rel string) error {
	if w.ctx.Err() != nil {
		return cancelled("search_text")
	}
	w.s.beforeOpen(rel)
	entries, err := w.s.readDirSorted(rel)
	if err != nil {
		w.res.FilesSkipped++
		return nil
	}
	for _, e := range entries {
		child := path.Join(rel, e.Name())
		switch t := e.Type(); {
		case !nameable(e.Name()):
			if t.IsDir() || t.IsRegular() { // what would have been searched
				w.res.FilesSkipped++
			}
		case t.IsDir() && e.Name() != ".git":
			err = w.dir(child)
		case t.IsRegular():
			err = w.file(child)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// readDirSorted returns the entries of the directory rel (slash-separated,
// from the root), sorted by name.
func (s *Session) readDirSorted(rel string) ([]fs.DirEntry, error) {
	d, err := s.root.OpenFile(filepath.FromSlash(rel), os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, err
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}

// file searches one file and reports progress every ProgressEvery files.
func (w *searcher) file(rel string) error {
	if w.ctx.Err() != nil {
		return cancelled("search_text")
	}
	err := w.search(rel)
	w.examined++
	if w.examined%ProgressEvery == 0 {
		w.caller.Progress(w.ctx, float64(w.examined), 0,
			fmt.Sprintf("searched %d files, %d matches so far", w.examined, len(w.res.Matches)))
	}
	return err
}

func (w *searcher) search(rel string) error {
	w.s.beforeOpen(rel)
	p := relPath{display: rel, name: filepath.FromSlash(rel)}
	f, size, err := w.s.openRegular(p)
	if err != nil {
		w.res.FilesSkipped++
		return nil
	}
	defer f.Close()
	if size > MaxSearchFileBytes {
		w.res.FilesSkipped++
		return nil
	}
	data, ok, err := readCapped(f, MaxSearchFileBytes)
	if err != nil || !ok || bytes.IndexByte(data, 0) >= 0 {
		w.res.FilesSkipped++
		return nil
	}
	w.res.FilesSearched++
	n := 0
	for line := range bytes.Lines(data) {
		if w.ctx.Err() != nil {
			return cancelled("search_text")
		}
		n++
		line = bytes.TrimRight(line, "\r\n")
		if w.s.hooks.beforeMatch != nil {
			w.s.hooks.beforeMatch(rel, n)
		}
		matched := w.match(line)
		if w.ctx.Err() != nil { // possibly during the match, which then ended early
			return cancelled("search_text")
		}
		if !matched {
			continue
		}
		if len(w.res.Matches) == MaxMatches {
			w.res.Truncated = true
			return errStop
		}
		text, cut := cutUTF8(line, MaxMatchTextBytes)
		w.res.Matches = append(w.res.Matches, searchMatch{Path: rel, Line: n, Text: string(text), Cut: cut})
	}
	return nil
}

// cutUTF8 returns b cut to at most max bytes on a rune boundary.
func cutUTF8(b []byte, max int) ([]byte, bool) {
	if len(b) <= max {
		return b, false
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return b[:cut], true
}

type writeResult struct {
	Path    string `json:"path"`
	Bytes   int    `json:"bytes,omitempty"`
	Created bool   `json:"created"`
	Kept    bool   `json:"kept,omitempty"`   // the existing file was kept, nothing written
	SHA256  string `json:"sha256,omitempty"` // hex
}

// The choices write_file offers when its target exists.
const (
	OverwriteAnswer = "overwrite"
	KeepAnswer      = "keep"
)

// NotApprovedHint ends the refusal of a write (write_file, edit_file) or a
// command (run_command) that nobody approved, for a caller that does not
// say where its prompts go (docs/SPEC.md §6: a closed Caller — asking off,
// or a client that cannot be asked — denies at once, and from inside the
// session that looks like a denial). [notApproved] says more when the
// caller does.
const NotApprovedHint = "Nobody approved it: the person declined, or nobody could be asked. " +
	"It goes through only when the server asks the client (agentmcp --ask-client) and the client can answer: " +
	clientsThatCanBeAsked

const clientsThatCanBeAsked = "a 2026-07-28 client on any carrier, or a client with form elicitation over stdio or a Unix socket; " +
	"2025-era clients over HTTP cannot be asked."

// notApproved ends the refusal of a call caller did not approve, saying
// why (ports.AskingOf): the model and the person read what would let it
// through, and a person who declined is not advised to turn asking on.
func notApproved(caller ports.Caller) string {
	switch ports.AskingOf(caller) {
	case ports.AskingClient:
		return "The person declined it (or did not answer in time)."
	case ports.AskingOff:
		return "Nobody could be asked: this server does not ask its clients. " +
			"It goes through only when the server is started with --ask-client and the client can answer: " + clientsThatCanBeAsked
	case ports.AskingUnable:
		return "Nobody could be asked: this client cannot be asked (it declared no form elicitation, or it is a 2025-era client over HTTP). " +
			"It goes through with " + clientsThatCanBeAsked
	}
	return NotApprovedHint
}

func (s *Session) writeFile(ctx context.Context, args toolArgs, caller ports.Caller) (any, error) {
	p, err := pathArg(args, true)
	if err != nil {
		return nil, err
	}
	content, _, err := args.str("content", true)
	if err != nil {
		return nil, err
	}
	if p.display == "." {
		return nil, errors.New(`"." is the workspace root, not a file`)
	}
	if len(content) > MaxWriteBytes {
		return nil, fmt.Errorf("content is %d bytes: write_file writes at most %d bytes (1 MiB)", len(content), MaxWriteBytes)
	}

	// Checks before asking, so that nobody is asked to approve a write that
	// cannot happen. They also record what was checked: the write itself
	// walks the path again and fails if any of it changed meanwhile.
	dirs, err := s.checkDirs(relPath{display: path.Dir(p.display)})
	if err != nil {
		return nil, err
	}
	created, perm, existing := true, fs.FileMode(0o644), int64(0)
	switch st, err := s.root.Lstat(p.name); {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fsError(p, err)
	case st.IsDir():
		return nil, fmt.Errorf("%q is a directory", p.display)
	case st.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("%q is a symbolic link: write_file does not replace links", p.display)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%q is not a regular file", p.display)
	default:
		created, perm, existing = false, st.Mode().Perm(), st.Size()
	}

	// The session gives facts; the engine renders them (the path quoted and
	// escaped, the content as size and SHA-256 only, docs/SPEC.md §6).
	summary := "Create a file in the workspace"
	if !created {
		summary = fmt.Sprintf("Replace a file of %d bytes in the workspace", existing)
	}
	prompt := domain.PermissionPrompt{
		Tool:    "write_file",
		Summary: summary,
		Arguments: []domain.Argument{
			{Name: "path", Value: p.display, Path: true},
			{Name: "content", Value: content, Contents: true},
		},
	}
	if caller.RequestPermission(ctx, prompt) != domain.AllowOnce {
		return nil, fmt.Errorf("Permission denied: writing %q was not allowed. %s", p.display, notApproved(caller))
	}
	if ctx.Err() != nil {
		return nil, cancelled("write_file")
	}
	if !created {
		// An existing file: the one who approved the write also chooses
		// whether it replaces the file (docs/SPEC.md §6: an ask with choices).
		ans := caller.Ask(ctx, domain.AskPrompt{
			Question: "A file already exists at " + p.display + ". Overwrite it or keep it?",
			Options:  []string{OverwriteAnswer, KeepAnswer},
		})
		switch {
		case ctx.Err() != nil:
			return nil, cancelled("write_file")
		case ans.Answered && ans.Text == KeepAnswer:
			return writeResult{Path: p.display, Kept: true}, nil
		case !ans.Answered || ans.Text != OverwriteAnswer:
			return nil, fmt.Errorf("%q was not overwritten: no answer whether to overwrite it or keep it", p.display)
		}
	}
	// A caller that keeps changes (the agent, for its turn's diffs) gets
	// the file's old content, read at write time from the very file
	// replaced (at most MaxWriteBytes: a larger one is reported unread).
	var read func(dir *os.Root, base string)
	var old []byte
	unread := false
	if !created && ports.WantsChanges(caller) {
		read = func(dir *os.Root, base string) {
			f, err := dir.OpenFile(base, os.O_RDONLY|openNonblock, 0)
			if err != nil {
				unread = true
				return
			}
			data, ok, err := readCapped(f, MaxWriteBytes)
			f.Close()
			old, unread = data, err != nil || !ok
			if unread {
				old = nil
			}
		}
	}
	if err := s.replace(p, dirs, []byte(content), perm, created, nil, read); err != nil {
		return nil, err
	}
	ports.ReportChange(caller, ports.FileChange{Path: p.display, Before: old, After: []byte(content), Created: created, BeforeUnread: unread})
	sum := sha256.Sum256([]byte(content))
	return writeResult{Path: p.display, Bytes: len(content), Created: created, SHA256: hex.EncodeToString(sum[:])}, nil
}

// checkedDir is one directory on a write's path as write_file checked it
// before asking: a real directory, not a symbolic link.
type checkedDir struct {
	display string      // slash-separated, from the root, for messages
	name    string      // its name in its parent
	info    fs.FileInfo // its identity (os.SameFile) when checked
}

// checkDirs checks, before asking, every directory on the path from the
// root to parent (the root itself excluded): each must exist and be a
// directory, not a symbolic link. The dialog shows the path as given, so it
// must be where the write lands: a link inside the root (say notes ->
// .git/hooks) would make an approved "notes/x" write somewhere else. It
// returns them in order, for openDirs to verify at write time.
func (s *Session) checkDirs(parent relPath) ([]checkedDir, error) {
	if parent.display == "." {
		return nil, nil
	}
	var dirs []checkedDir
	display := ""
	for name := range strings.SplitSeq(parent.display, "/") {
		display = path.Join(display, name)
		st, err := s.root.Lstat(filepath.FromSlash(display))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("directory %s (write_file creates no directories)", fsError(parent, err))
		case err != nil:
			return nil, fmt.Errorf("directory %s", fsError(relPath{display: display}, err))
		case st.Mode()&fs.ModeSymlink != 0:
			return nil, fmt.Errorf("%q is a symbolic link: write_file does not write through links", display)
		case !st.IsDir():
			return nil, fmt.Errorf("%q is not a directory", display)
		}
		dirs = append(dirs, checkedDir{display: display, name: name, info: st})
	}
	return dirs, nil
}

// openDirs walks dirs again at write time, from the root, opening each
// directory by its name in the one opened before (never by a path), and
// returns the last one (the root when dirs is empty) with a function that
// closes it. Each must still be the very directory checked (os.SameFile)
// and be reached by its name without a link: OpenRoot follows a link that
// stays inside the root, so after the open the name is looked at again
// without following it and must be that same directory. Whatever comes next
// is done relative to the returned directory: no path is resolved again.
func (s *Session) openDirs(dirs []checkedDir) (*os.Root, func(), error) {
	dir := s.root
	for _, d := range dirs {
		sub, err := dir.OpenRoot(d.name)
		if err == nil {
			err = sameDir(dir, sub, d)
		}
		if dir != s.root {
			dir.Close()
		}
		if err != nil {
			if sub != nil {
				sub.Close()
			}
			return nil, nil, s.changed(d.display, true)
		}
		dir = sub
	}
	if dir == s.root {
		return dir, func() {}, nil
	}
	return dir, func() { dir.Close() }, nil
}

// errNotSame marks a directory that is not the one checked.
var errNotSame = errors.New("not the directory checked")

// sameDir reports whether sub, opened as d.name in parent, is the directory
// d recorded and is what d.name names in parent, not through a link.
func sameDir(parent, sub *os.Root, d checkedDir) error {
	now, err := sub.Stat(".")
	if err != nil {
		return err
	}
	named, err := parent.Lstat(d.name)
	if err != nil {
		return err
	}
	if !os.SameFile(now, d.info) || !os.SameFile(named, now) {
		return errNotSame
	}
	return nil
}

// changed is the failure of a write whose path changed while the person
// was deciding: display, a directory on it (isDir) or the target, is no
// longer what was checked. The reason is looked up for the message only;
// the decision was taken on open descriptors.
func (s *Session) changed(display string, isDir bool) error {
	why := "it is no longer what was checked"
	name := filepath.FromSlash(display)
	switch st, err := s.root.Lstat(name); {
	case errors.Is(err, fs.ErrNotExist):
		why = "it no longer exists"
	case err != nil:
		why = fsReason(err)
	case st.Mode()&fs.ModeSymlink != 0:
		why = "it is now a symbolic link"
		if _, err := s.root.Stat(name); err != nil && fsReason(err) == "leads outside the workspace root" {
			why += " that leads outside the workspace root"
		}
	case isDir && st.IsDir():
		why = "it is another directory than the one checked"
	case isDir:
		why = "it is no longer a directory"
	case st.IsDir():
		why = "it is now a directory"
	case !st.Mode().IsRegular():
		why = "it is now neither a file nor a directory"
	}
	return fmt.Errorf("%q changed while permission was pending (%s): nothing was written; call the tool again to be asked about the path as it is now", display, why)
}

// replace writes data at p, in the directory dirs leads to, once openDirs
// has verified that path: to a fresh temporary file there, then renamed
// over p's name (an approved overwrite: p holds the old or the new content,
// never a mix) or, for a new file, linked to it, which fails rather than
// replace a file that appeared meanwhile. All of it is relative to the
// verified directory's descriptor, by single names.
//
// verify, when not nil, is called with the verified directory and p's name
// in it once the target has been found to be a regular file: edit_file
// checks there that the file is still the one it read. read, when not nil,
// is called the same way when the target is a regular file (write_file
// reads the content it replaces there, for a caller that keeps changes).
func (s *Session) replace(p relPath, dirs []checkedDir, data []byte, perm fs.FileMode, created bool,
	verify func(dir *os.Root, base string) error, read func(dir *os.Root, base string)) error {
	dir, closeDir, err := s.openDirs(dirs)
	if err != nil {
		return err
	}
	defer closeDir()
	base := path.Base(p.display)
	switch st, err := dir.Lstat(base); {
	case errors.Is(err, fs.ErrNotExist):
		if verify != nil {
			return s.changed(p.display, false)
		}
	case err != nil:
		return fsError(p, err)
	case !st.Mode().IsRegular(): // a link, a directory or stranger: not what was approved
		return s.changed(p.display, false)
	case created:
		return appeared(p)
	}
	if verify != nil {
		if err := verify(dir, base); err != nil {
			return err
		}
	}
	if read != nil && !created {
		if st, err := dir.Lstat(base); err == nil && st.Mode().IsRegular() {
			read(dir, base)
		}
	}

	var nonce [6]byte
	rand.Read(nonce[:])
	tmp := ".agentmcp-" + hex.EncodeToString(nonce[:]) + ".tmp"
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("cannot write next to %s", fsError(p, err))
	}
	fail := func(err error) error {
		f.Close()
		dir.Remove(tmp)
		return fsError(p, err)
	}
	if !created { // OpenFile's mode went through the umask; keep the old bits exactly
		if err := f.Chmod(perm); err != nil {
			return fail(err)
		}
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		dir.Remove(tmp)
		return fsError(p, err)
	}
	if created {
		// A new file must not replace one that appeared after the checks
		// (the approval said "create"): a hard link fails if the name
		// exists, where a rename would silently replace it.
		err := dir.Link(tmp, base)
		dir.Remove(tmp)
		if errors.Is(err, fs.ErrExist) {
			return appeared(p)
		}
		if err != nil {
			return fsError(p, err)
		}
		return nil
	}
	if err := dir.Rename(tmp, base); err != nil {
		dir.Remove(tmp)
		return fsError(p, err)
	}
	return nil
}

func appeared(p relPath) error {
	return fmt.Errorf("%q appeared after write_file checked it and was not overwritten; call write_file again to be asked about replacing it", p.display)
}
