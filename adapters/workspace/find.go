package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/agentmcp/agentmcp/ports"
)

// Bounds of find_files (docs/SPEC.md §8).
const (
	// MaxFindResults is the most paths find_files returns; when more match
	// it stops and reports "truncated": true.
	MaxFindResults = 1000

	// MaxFindEntries is the most directory entries one find_files call
	// looks at; past it the walk stops with "truncated": true.
	MaxFindEntries = 1_000_000

	// MaxFindDuration bounds one find_files walk; past it the walk stops
	// with "truncated": true. The call's ctx ends it sooner.
	MaxFindDuration = 20 * time.Second

	// MaxGitignoreBytes is the largest .gitignore find_files reads; a
	// bigger one is not read (nothing it names is skipped).
	MaxGitignoreBytes = 64 << 10
)

type findResult struct {
	Pattern   string   `json:"pattern"`
	Path      string   `json:"path"`
	Files     []string `json:"files"`
	Truncated bool     `json:"truncated"`
	// Stopped says why a truncated walk stopped: "results", "entries" or
	// "time".
	Stopped string `json:"stopped,omitempty"`
	Ignored int    `json:"ignored"` // entries skipped by .gitignore rules
	Skipped int    `json:"skipped"` // unreadable directories and names that are not UTF-8
}

// finder is one find_files walk.
type finder struct {
	s        *Session
	ctx      context.Context
	caller   ports.Caller
	pattern  string // relative to prefix
	prefix   string // the path argument, "." for the root
	ignore   bool   // honour .gitignore files
	deadline time.Time
	entries  int
	res      findResult
}

var errFindStop = errors.New("stop")

func (s *Session) findFiles(ctx context.Context, args toolArgs, caller ports.Caller) (any, error) {
	pattern, err := patternArg(args, "find_files")
	if err != nil {
		return nil, err
	}
	includeIgnored, err := args.boolArg("include_ignored")
	if err != nil {
		return nil, err
	}
	switch {
	case strings.HasPrefix(pattern, "/"):
		return nil, invalidArgs("pattern must be relative (to path, default the workspace root)")
	case !doublestar.ValidatePattern(pattern):
		return nil, invalidArgs(fmt.Sprintf("pattern %q is not a valid glob (unclosed [ or {, or a trailing \\)", pattern))
	}
	p, err := pathArg(args, false)
	if err != nil {
		return nil, err
	}
	// Start at the pattern's fixed directory prefix: "src/**/*.go" walks
	// src only. The pattern is matched against paths relative to p.
	base := p.display
	if fixed, _ := doublestar.SplitPattern(pattern); fixed != "." && !strings.ContainsAny(fixed, `*?[]{}\`) {
		bp, err := cleanPath(path.Join(p.display, fixed))
		if err != nil {
			return nil, err
		}
		base = bp.display
	}
	w := &finder{s: s, ctx: ctx, caller: caller, pattern: pattern, prefix: p.display, ignore: !includeIgnored,
		deadline: time.Now().Add(MaxFindDuration),
		res:      findResult{Pattern: pattern, Path: p.display, Files: []string{}}}
	if inGit(base) {
		return w.res, nil // .git is never entered, whatever the path or the pattern's fixed prefix
	}

	st, err := s.root.Stat(filepath.FromSlash(base))
	switch {
	case errors.Is(err, fs.ErrNotExist) && base != p.display:
		return w.res, nil // the fixed prefix names nothing: no match
	case err != nil:
		return nil, fsError(relPath{display: base}, err)
	case !st.IsDir() && base == p.display:
		return nil, fmt.Errorf("%q is not a directory", p.display)
	case !st.IsDir():
		if w.match(base) {
			w.res.Files = append(w.res.Files, base)
		}
		return w.res, nil
	}
	var rules []ignoreRules
	if w.ignore {
		// The .gitignore files of every directory above base apply too.
		rules = w.ancestorRules(base)
		if w.ignored(rules, base, true) {
			w.res.Ignored++
			return w.res, nil
		}
	}
	err = w.dir(base, rules)
	switch {
	case err == errFindStop:
	case err != nil:
		return nil, err
	}
	slices.Sort(w.res.Files)
	return w.res, nil
}

// inGit reports whether the slash-separated relative path rel is a .git
// directory or lies beneath one.
func inGit(rel string) bool {
	for seg := range strings.SplitSeq(rel, "/") {
		if seg == ".git" {
			return true
		}
	}
	return false
}

func (w *finder) stop(why string) error {
	w.res.Truncated, w.res.Stopped = true, why
	return errFindStop
}

// dir walks the directory rel in name order, without following symbolic
// links or entering .git.
func (w *finder) dir(rel string, rules []ignoreRules) error {
	w.s.beforeOpen(rel)
	if w.ctx.Err() != nil {
		return cancelled("find_files")
	}
	if time.Now().After(w.deadline) {
		return w.stop("time")
	}
	entries, err := w.s.readDirSorted(rel)
	if err != nil {
		w.res.Skipped++
		return nil
	}
	if w.ignore {
		if r, ok := w.readIgnore(rel); ok {
			rules = append(rules[:len(rules):len(rules)], r)
		}
	}
	for _, e := range entries {
		w.entries++
		if w.entries > MaxFindEntries {
			return w.stop("entries")
		}
		if w.ctx.Err() != nil {
			return cancelled("find_files")
		}
		if w.entries%(ProgressEvery*100) == 0 {
			w.caller.Progress(w.ctx, float64(w.entries), 0,
				fmt.Sprintf("looked at %d entries, %d matches so far", w.entries, len(w.res.Files)))
		}
		name := e.Name()
		child := name
		if rel != "." {
			child = rel + "/" + name
		}
		isDir := e.IsDir()
		switch {
		case !nameable(name):
			w.res.Skipped++
			continue
		case isDir && name == ".git":
			continue
		case w.ignore && w.ignored(rules, child, isDir):
			w.res.Ignored++
			continue
		case isDir:
			if err := w.dir(child, rules); err != nil {
				return err
			}
			continue
		}
		if w.match(child) {
			if len(w.res.Files) == MaxFindResults {
				return w.stop("results")
			}
			w.res.Files = append(w.res.Files, child)
		}
	}
	return nil
}

// match reports whether rel, from the root, matches the pattern.
func (w *finder) match(rel string) bool {
	if w.prefix != "." {
		var ok bool
		if rel, ok = strings.CutPrefix(rel, w.prefix+"/"); !ok {
			return false
		}
	}
	return doublestar.MatchUnvalidated(w.pattern, rel)
}

// ignoreRules are the rules of one .gitignore file, for the directory dir
// (slash-separated, from the root) that holds it.
type ignoreRules struct {
	dir   string
	rules []ignoreRule
}

// ignoreRule is one line of a .gitignore (https://git-scm.com/docs/gitignore):
// pattern is a doublestar glob matched against the path relative to the
// .gitignore's directory ("**/" prepended when the line had no slash but a
// trailing one, so it matches at any depth).
type ignoreRule struct {
	pattern string
	negate  bool
	dirOnly bool
}

// ancestorRules reads the .gitignore files of the root and of every
// directory above base, outermost first.
func (w *finder) ancestorRules(base string) []ignoreRules {
	var out []ignoreRules
	if base == "." {
		return out
	}
	dir := "."
	for _, part := range strings.Split(base, "/") {
		if r, ok := w.readIgnore(dir); ok {
			out = append(out, r)
		}
		dir = path.Join(dir, part)
	}
	return out
}

// readIgnore reads and parses dir's .gitignore, if it has one.
func (w *finder) readIgnore(dir string) (ignoreRules, bool) {
	p := relPath{display: path.Join(dir, ".gitignore"), name: filepath.FromSlash(path.Join(dir, ".gitignore"))}
	f, size, err := w.s.openRegular(p)
	if err != nil {
		return ignoreRules{}, false
	}
	defer f.Close()
	if size > MaxGitignoreBytes {
		return ignoreRules{}, false
	}
	data, ok, err := readCapped(f, MaxGitignoreBytes)
	if err != nil || !ok {
		return ignoreRules{}, false
	}
	rules := parseGitignore(string(data))
	return ignoreRules{dir: dir, rules: rules}, len(rules) > 0
}

// parseGitignore turns a .gitignore's text into rules: blank lines and
// comments are skipped, trailing unescaped spaces trimmed, "!" negates,
// a trailing "/" matches directories only, and a pattern with a slash
// elsewhere is anchored to the file's directory; one without matches a
// name at any depth.
func parseGitignore(text string) []ignoreRule {
	var rules []ignoreRule
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\r\n")
		for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, "\\ ") {
			line = line[:len(line)-1]
		}
		if line == "" || line[0] == '#' {
			continue
		}
		var r ignoreRule
		switch {
		case line[0] == '!':
			r.negate, line = true, line[1:]
		case strings.HasPrefix(line, `\#`), strings.HasPrefix(line, `\!`):
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly, line = true, strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		if strings.Contains(line, "/") {
			line = strings.TrimPrefix(line, "/")
		} else {
			line = "**/" + line
		}
		if !doublestar.ValidatePattern(line) {
			continue
		}
		r.pattern = line
		rules = append(rules, r)
	}
	return rules
}

// ignored reports whether rel (a directory when isDir) is ignored: the
// last rule that matches it, from the outermost .gitignore to the
// innermost, decides. A directory that is ignored is not entered, so
// nothing under it can be re-included (as in git).
func (w *finder) ignored(stack []ignoreRules, rel string, isDir bool) bool {
	ignored := false
	for _, rs := range stack {
		sub := rel
		if rs.dir != "." {
			var ok bool
			if sub, ok = strings.CutPrefix(rel, rs.dir+"/"); !ok {
				continue
			}
		}
		for _, r := range rs.rules {
			if r.dirOnly && !isDir {
				continue
			}
			if doublestar.MatchUnvalidated(r.pattern, sub) {
				ignored = !r.negate
			}
		}
	}
	return ignored
}
