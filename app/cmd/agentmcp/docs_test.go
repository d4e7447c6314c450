package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/internal/syncbuf"
)

// The docs tests keep README.md and the guides under docs/ (every
// docs/*.md) true of the binary they describe (issue 33):
//
//   - TestDocsCommandLines: every agentmcp command line they show — in a
//     code block, in an inline code span, or as a client configuration's
//     "command" and "args" — names a command the binary has and only flags
//     that command has; one without placeholders (DIR, N, …, [...]) is also
//     parsed by the binary itself (run with --help appended), so a bad value
//     fails too. Hosted-model commands are checked this way only. Shown
//     output is not checked, nor a runnable block whose output is shown:
//     running it checks it (it may show a usage error on purpose).
//   - TestDocsJSON: every ```json block parses.
//   - TestDocsTools: a list of tools marked <!-- tools: ARGS --> (the next
//     table's first column, or the next code block's first word per line)
//     is, in order, what tools/list answers for "agentmcp serve stdio
//     ARGS"; and every "N tools" in the prose is followed, in its sentence,
//     by N back-quoted names of real tools.
//   - TestDocsLinks: every relative link names a file of the repository,
//     and a #fragment a heading of that file.
//   - TestDocsRunnable: every block marked runnable runs, in the order
//     given, as a newcomer would paste it (see runDoc).
//   - TestDocsBinarySize: the stripped command's size stated in README.md
//     and docs/operating.md is one number, within 5% of a build now.
//   - TestREADMEIsShort: README.md has at most 250 lines.
//
// The markers are HTML comments on the line just before a block, invisible
// once rendered:
//
//	<!-- runnable -->             run the next code block with bash -e -o pipefail
//	<!-- runnable: background --> start it, wait for its first line on stdout
//	                              (a serve command prints its URL, socket or
//	                              address once ready), keep it running until the
//	                              file's last block has run, then SIGTERM it
//	<!-- output -->               the next block is what the runnable block
//	                              before it prints on stdout: the same lines, in
//	                              any order (answers come as calls finish), "…"
//	                              standing for any text within a line
//	<!-- tools: ARGS -->          the next table or block lists tools/list's tools
//
// A runnable block writes only under ~ (a temporary HOME) and never needs
// a person: it is what a newcomer pastes, so it names the files it reads
// (creating them first), and a server runs in a background block of its
// own.

var (
	docsOnce  sync.Once
	docsBin   string
	docsBinOK error
)

// agentmcpBinary builds the command once for the package's tests.
func agentmcpBinary(t *testing.T) string {
	t.Helper()
	docsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "agentmcp-bin")
		if err != nil {
			docsBinOK = err
			return
		}
		docsBin = filepath.Join(dir, "agentmcp")
		if out, err := exec.Command("go", "build", "-o", docsBin, ".").CombinedOutput(); err != nil {
			docsBinOK = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if docsBinOK != nil {
		t.Fatal(docsBinOK)
	}
	return docsBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if docsBin != "" {
		os.RemoveAll(filepath.Dir(docsBin))
	}
	os.Exit(code)
}

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../../.."

// doc is one Markdown file: README.md or a guide.
type doc struct {
	name   string // relative to the repository root: "docs/http.md"
	lines  []string
	blocks []block
	prose  []proseLine // the lines outside code blocks
}

type proseLine struct {
	n    int
	text string
}

// block is one fenced code block.
type block struct {
	line   int    // of the opening fence, 1-based
	lang   string // its info string's first word
	text   string
	marker string // the <!-- … --> just before the fence, without the comment marks
}

func (b block) where(d *doc) string { return fmt.Sprintf("%s:%d", d.name, b.line) }

var (
	fenceRe  = regexp.MustCompile("^\\s*(```+|~~~+)\\s*([\\w+-]*)")
	markerRe = regexp.MustCompile(`^<!--\s*(.*?)\s*-->$`)
)

// docs reads README.md and docs/*.md.
func docs(t *testing.T) []*doc {
	t.Helper()
	names := []string{"README.md"}
	guides, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range guides {
		names = append(names, filepath.ToSlash(strings.TrimPrefix(g, repoRoot+string(filepath.Separator))))
	}
	var out []*doc
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, parseDoc(name, string(b)))
	}
	if len(out) < 3 {
		t.Fatalf("read %d documents: is the repository's root %s?", len(out), repoRoot)
	}
	return out
}

func parseDoc(name, text string) *doc {
	d := &doc{name: name, lines: strings.Split(text, "\n")}
	var cur *block
	var fence string
	var body []string
	for i, line := range d.lines {
		if cur != nil {
			if t := strings.TrimSpace(line); strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				cur.text = strings.Join(body, "\n") + "\n"
				d.blocks = append(d.blocks, *cur)
				cur, body = nil, nil
				continue
			}
			body = append(body, line)
			continue
		}
		if m := fenceRe.FindStringSubmatch(line); m != nil {
			cur, fence = &block{line: i + 1, lang: m[2]}, m[1]
			if i > 0 {
				if mk := markerRe.FindStringSubmatch(strings.TrimSpace(d.lines[i-1])); mk != nil {
					cur.marker = mk[1]
				}
			}
			continue
		}
		d.prose = append(d.prose, proseLine{i + 1, line})
	}
	return d
}

// ---- command lines ----

// commandLine is one agentmcp command line the docs show: the words after
// the program's name.
type commandLine struct {
	where string
	words []string
}

// shellWords splits one shell command line into words and operators
// ("|", "&&", ">", …), keeping quotes, $(…) and ${…} inside a word as
// written, without expanding anything. A # at the start of a word ends the
// line.
func shellWords(line string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			flush()
		case c == '#' && !inWord:
			return words
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(line) && line[j] != c {
				if c == '"' && line[j] == '\\' {
					j++
				}
				j++
			}
			w.WriteString(unquoteShell(line[i:min(j+1, len(line))]))
			inWord, i = true, j
		case c == '\\' && i+1 < len(line):
			w.WriteByte(line[i+1])
			inWord, i = true, i+1
		case c == '$' && i+1 < len(line) && (line[i+1] == '(' || line[i+1] == '{'):
			open, closer, depth, j := line[i+1], byte(')'), 0, i+1
			if open == '{' {
				closer = '}'
			}
			for ; j < len(line); j++ {
				if line[j] == open {
					depth++
				} else if line[j] == closer {
					if depth--; depth == 0 {
						break
					}
				}
			}
			w.WriteString(line[i:min(j+1, len(line))])
			inWord, i = true, j
		case strings.IndexByte("|&;<>()", c) >= 0:
			op := string(c)
			if fd := w.String(); inWord && (c == '<' || c == '>') && strings.Trim(fd, "0123456789") == "" {
				op = fd + op // 2>/dev/null: the digits name a descriptor
				w.Reset()
				inWord = false
			}
			flush()
			for i+1 < len(line) && strings.IndexByte("|&>", line[i+1]) >= 0 {
				i++
				op += string(line[i])
			}
			words = append(words, op)
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words
}

// unquoteShell is a quoted shell word's text: '…' as is, "…" with its
// backslash escapes undone.
func unquoteShell(q string) string {
	if len(q) < 2 {
		return q
	}
	inner := q[1 : len(q)-1]
	if q[0] == '"' {
		inner = strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\$`, `$`).Replace(inner)
	}
	return inner
}

var operatorRe = regexp.MustCompile(`^(\d?[<>].*|\|\|?|&&?|;|\(|\))$`)

// agentmcpCommands finds the agentmcp command lines in one shell line:
// a word whose base name is agentmcp (or agentmcp-otel, the same command
// line) followed by one of its top-level commands.
func agentmcpCommands(where string, line string, top map[string]bool) []commandLine {
	words := shellWords(line)
	var out []commandLine
	for i := 0; i < len(words); i++ {
		base := words[i][strings.LastIndex(words[i], "/")+1:]
		if (base != "agentmcp" && base != "agentmcp-otel") || i+1 >= len(words) || !top[words[i+1]] {
			continue
		}
		var args []string
		for j := i + 1; j < len(words); j++ {
			if operatorRe.MatchString(words[j]) {
				break
			}
			args = append(args, words[j])
		}
		out = append(out, commandLine{where, args})
	}
	return out
}

// logicalLines joins a code block's lines continued with a backslash.
func logicalLines(text string) []string {
	var out []string
	cur := ""
	for _, l := range strings.Split(text, "\n") {
		if s, ok := strings.CutSuffix(l, "\\"); ok {
			cur += s + " "
			continue
		}
		out = append(out, cur+l)
		cur = ""
	}
	return out
}

var inlineCodeRe = regexp.MustCompile("`([^`]+)`")

// docCommandLines is every agentmcp command line d shows.
func docCommandLines(d *doc, top map[string]bool) []commandLine {
	var out []commandLine
	for i, b := range d.blocks {
		// Shown output is no command line; a runnable block whose output
		// is shown is checked by running it (a usage error on purpose).
		if b.marker == "output" || (strings.HasPrefix(b.marker, "runnable") && i+1 < len(d.blocks) && d.blocks[i+1].marker == "output") {
			continue
		}
		if b.lang == "json" {
			var v any
			if json.Unmarshal([]byte(b.text), &v) == nil {
				out = append(out, configCommands(b.where(d), v)...)
			}
			continue
		}
		for _, l := range logicalLines(b.text) {
			out = append(out, agentmcpCommands(b.where(d), strings.TrimPrefix(strings.TrimSpace(l), "$ "), top)...)
		}
	}
	for _, p := range d.prose {
		for _, m := range inlineCodeRe.FindAllStringSubmatch(p.text, -1) {
			out = append(out, agentmcpCommands(fmt.Sprintf("%s:%d", d.name, p.n), m[1], top)...)
		}
		if m := markerRe.FindStringSubmatch(strings.TrimSpace(p.text)); m != nil {
			if args, ok := strings.CutPrefix(m[1], "tools:"); ok {
				out = append(out, commandLine{fmt.Sprintf("%s:%d", d.name, p.n), append([]string{"serve", "stdio"}, strings.Fields(args)...)})
			}
		}
	}
	return out
}

// configCommands finds the agentmcp command lines of an MCP client
// configuration: objects with a "command" whose base name is agentmcp and
// string "args" (including, after "--", the server agentmcp record runs).
func configCommands(where string, v any) []commandLine {
	var out []commandLine
	switch v := v.(type) {
	case map[string]any:
		if cmd, ok := v["command"].(string); ok {
			var words []string
			if args, ok := v["args"].([]any); ok {
				for _, a := range args {
					if s, ok := a.(string); ok {
						words = append(words, s)
					}
				}
			}
			for i, w := range append([]string{cmd}, words...) {
				if base := w[strings.LastIndex(w, "/")+1:]; base == "agentmcp" && i < len(words) {
					out = append(out, commandLine{where, words[i:]})
				}
			}
		}
		for _, c := range v {
			out = append(out, configCommands(where, c)...)
		}
	case []any:
		for _, c := range v {
			out = append(out, configCommands(where, c)...)
		}
	}
	return out
}

// cli answers what the binary's command table has, from its help.
type cli struct {
	bin   string
	flags map[string]map[string]bool // by command path: "serve http"
	subs  map[string][]string        // a group's commands, by its path ("" for the top level)
}

var (
	helpFlagRe = regexp.MustCompile(`^  (?:-h, )?--([a-z0-9-]+)`)
	helpCmdRe  = regexp.MustCompile(`^  ([a-z][a-z ]*?)\s{2,}\S`)
)

func newCLI(t *testing.T, bin string) *cli {
	c := &cli{bin: bin, flags: map[string]map[string]bool{}, subs: map[string][]string{}}
	out, err := exec.Command(bin, "help").Output()
	if err != nil {
		t.Fatalf("agentmcp help: %v", err)
	}
	inCommands := false
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case l == "Commands:":
			inCommands = true
			continue
		case l == "":
			inCommands = false
		}
		if m := helpCmdRe.FindStringSubmatch(l); inCommands && m != nil {
			path := m[1]
			words := strings.Fields(path)
			for i := range words {
				group := strings.Join(words[:i], " ")
				if !slices.Contains(c.subs[group], words[i]) {
					c.subs[group] = append(c.subs[group], words[i])
				}
			}
			c.flags[path] = c.helpFlags(t, path)
		}
	}
	if len(c.flags) < 8 || c.flags["serve http"]["port"] != true {
		t.Fatalf("read %d commands from agentmcp help, serve http without --port:\n%s", len(c.flags), out)
	}
	return c
}

func (c *cli) helpFlags(t *testing.T, path string) map[string]bool {
	out, err := exec.Command(c.bin, append(strings.Fields(path), "--help")...).Output()
	if err != nil {
		t.Fatalf("agentmcp %s --help: %v", path, err)
	}
	flags := map[string]bool{"help": true, "h": true}
	for _, l := range strings.Split(string(out), "\n") {
		if m := helpFlagRe.FindStringSubmatch(l); m != nil {
			flags[m[1]] = true
		}
	}
	return flags
}

func (c *cli) top() map[string]bool {
	top := map[string]bool{}
	for _, s := range c.subs[""] {
		top[s] = true
	}
	return top
}

var placeholderRe = regexp.MustCompile(`^[A-Z][A-Z_:]*$|[\[\]<>…]|\.\.\.`)

// check returns what is wrong with one command line, or "".
func (c *cli) check(words []string) string {
	path := ""
	i := 0
	for ; i < len(words); i++ {
		subs, group := c.subs[path]
		if !group || !slices.Contains(subs, words[i]) {
			break
		}
		path = strings.TrimSpace(path + " " + words[i])
	}
	flags, leaf := c.flags[path]
	if _, group := c.subs[path]; !leaf && !group {
		return fmt.Sprintf("agentmcp %q is not a command", strings.Join(words[:max(i, 1)], " "))
	}
	if path == "help" || path == "version" {
		if out, err := exec.Command(c.bin, words...).CombinedOutput(); err != nil {
			return fmt.Sprintf("agentmcp %s: %v\n%s", strings.Join(words, " "), err, out)
		}
		return ""
	}
	rest := words[i:]
	if k := slices.Index(rest, "--"); k >= 0 {
		rest = rest[:k]
	}
	placeholders := false
	for _, w := range rest {
		placeholders = placeholders || placeholderRe.MatchString(w)
		if !strings.HasPrefix(w, "-") || w == "-" {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
		name = strings.TrimRight(name, "]),.")
		if leaf && !flags[name] {
			return fmt.Sprintf("agentmcp %s has no flag --%s", path, name)
		}
	}
	if placeholders {
		return ""
	}
	args := append(append(strings.Fields(path), rest...), "--help")
	cmd := exec.Command(c.bin, args...)
	cmd.Dir = os.TempDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Sprintf("agentmcp %s does not parse: %v\n%s", strings.Join(args, " "), err, out)
	}
	return ""
}

func TestDocsCommandLines(t *testing.T) {
	c := newCLI(t, agentmcpBinary(t))
	seen := 0
	for _, d := range docs(t) {
		for _, cl := range docCommandLines(d, c.top()) {
			seen++
			if msg := c.check(cl.words); msg != "" {
				t.Errorf("%s: %s", cl.where, msg)
			}
		}
	}
	if seen < 20 {
		t.Errorf("found %d agentmcp command lines in the docs: is the scan broken?", seen)
	}
}

func TestDocsJSON(t *testing.T) {
	for _, d := range docs(t) {
		for _, b := range d.blocks {
			if b.lang != "json" {
				continue
			}
			var v any
			if err := json.Unmarshal([]byte(b.text), &v); err != nil {
				t.Errorf("%s: a json block that does not parse: %v", b.where(d), err)
			}
		}
	}
}

// ---- tools ----

// toolsList returns the names tools/list answers for "agentmcp serve stdio
// --root <empty dir> ARGS", in order.
func toolsList(t *testing.T, bin string, args ...string) []string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "stdio", "--root", t.TempDir()}, args...)...)
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"docs","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("serve stdio %q: %v", args, err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m struct {
			ID     int `json:"id"`
			Result struct {
				Tools []struct{ Name string } `json:"tools"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.ID == 2 {
			var names []string
			for _, tool := range m.Result.Tools {
				names = append(names, tool.Name)
			}
			return names
		}
	}
	t.Fatalf("no tools/list answer from serve stdio %q:\n%s", args, out)
	return nil
}

var (
	numberWords  = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}
	toolCountRe  = regexp.MustCompile(`(?i)\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\d+) tools\b`)
	sentenceEnd  = regexp.MustCompile(`[.!?](\s|$)`)
	tableCellRe  = regexp.MustCompile("^\\|\\s*`([a-z_]+)`")
	firstFieldRe = regexp.MustCompile(`^\s*([a-z_]+)\b`)
)

func TestDocsTools(t *testing.T) {
	bin := agentmcpBinary(t)
	all := map[string]bool{}
	for _, n := range toolsList(t, bin, "--allow-commands", "--no-sandbox") {
		all[n] = true
	}
	marked := 0
	for _, d := range docs(t) {
		// Marked lists: a table or a block after <!-- tools: ARGS -->.
		for i, line := range d.lines {
			m := markerRe.FindStringSubmatch(strings.TrimSpace(line))
			if m == nil || !strings.HasPrefix(m[1], "tools:") {
				continue
			}
			marked++
			want := toolsList(t, bin, strings.Fields(strings.TrimPrefix(m[1], "tools:"))...)
			var shown []string
			if i+1 < len(d.lines) && fenceRe.MatchString(d.lines[i+1]) {
				for _, b := range d.blocks {
					if b.line == i+2 {
						for _, l := range strings.Split(strings.TrimSpace(b.text), "\n") {
							if f := firstFieldRe.FindStringSubmatch(l); f != nil {
								shown = append(shown, f[1])
							}
						}
					}
				}
			} else {
				for _, l := range d.lines[i+1:] {
					if !strings.HasPrefix(l, "|") {
						break
					}
					if c := tableCellRe.FindStringSubmatch(l); c != nil {
						shown = append(shown, c[1])
					}
				}
			}
			if !slices.Equal(shown, want) {
				t.Errorf("%s:%d: the tools shown are %q; tools/list of serve stdio %s answers %q", d.name, i+1, shown, strings.TrimPrefix(m[1], "tools:"), want)
			}
		}
		// Counts in the prose, paragraph by paragraph.
		var para []string
		start := 0
		flush := func() {
			text := strings.Join(para, " ")
			for _, m := range toolCountRe.FindAllStringSubmatchIndex(text, -1) {
				if m[1] < len(text) && text[m[1]] == '/' {
					continue // "One tools/call"
				}
				word := strings.ToLower(text[m[2]:m[3]])
				n, ok := numberWords[word]
				if !ok {
					n, _ = strconv.Atoi(word)
				}
				rest := text[m[1]:]
				if e := sentenceEnd.FindStringIndex(rest); e != nil {
					rest = rest[:e[0]]
				}
				names := map[string]bool{}
				for _, c := range inlineCodeRe.FindAllStringSubmatch(rest, -1) {
					if all[c[1]] {
						names[c[1]] = true
					}
				}
				if len(names) != n {
					t.Errorf("%s:%d: %q is followed by %d tool names in its sentence, want %d of %q", d.name, start, text[m[0]:m[1]], len(names), n, slices.Sorted(mapKeys(all)))
				}
			}
			para = nil
		}
		for _, p := range d.prose {
			if strings.TrimSpace(p.text) == "" {
				flush()
				continue
			}
			if len(para) == 0 {
				start = p.n
			}
			para = append(para, p.text)
		}
		flush()
	}
	if marked == 0 {
		t.Error("no <!-- tools: … --> list in the docs: README.md lists the tools")
	}
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// ---- links ----

var linkRe = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)

// slug is GitHub's anchor for a heading: lower case, punctuation other
// than "-" and "_" dropped, spaces as "-".
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func anchors(d *doc) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, p := range d.prose {
		h, ok := strings.CutPrefix(p.text, "#")
		if !ok {
			continue
		}
		s := slug(strings.TrimLeft(h, "#"))
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func TestDocsLinks(t *testing.T) {
	all := docs(t)
	byName := map[string]*doc{}
	for _, d := range all {
		byName[d.name] = d
	}
	for _, d := range all {
		for _, p := range d.prose {
			text := inlineCodeRe.ReplaceAllString(p.text, "")
			for _, m := range linkRe.FindAllStringSubmatch(text, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				name := d.name
				if file != "" {
					name = filepath.ToSlash(filepath.Join(filepath.Dir(d.name), file))
					if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(name))); err != nil {
						t.Errorf("%s:%d: a link to %s, which does not exist", d.name, p.n, target)
						continue
					}
				}
				if frag == "" {
					continue
				}
				td, ok := byName[name]
				if !ok && strings.HasSuffix(name, ".md") {
					b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(name)))
					if err != nil {
						t.Errorf("%s:%d: %v", d.name, p.n, err)
						continue
					}
					td = parseDoc(name, string(b))
				}
				if td != nil && !anchors(td)[frag] {
					t.Errorf("%s:%d: a link to %s, whose file has no heading #%s", d.name, p.n, target, frag)
				}
			}
		}
	}
}

// ---- runnable blocks ----

// docsModel is the scripted model the runnable blocks' agent talks to, in
// place of the Ollama server the docs name: asked about a file (a word
// like notes.txt), it reads it with read_file and answers with what it
// says; asked anything else, it answers with the prompt.
func docsModel(r *chatscript.Request) chatscript.Reply {
	last := r.Messages[len(r.Messages)-1]
	if last.Role == "tool" {
		var env struct {
			Result struct{ Path, Content string } `json:"result"`
			Error  string                         `json:"error"`
		}
		if json.Unmarshal([]byte(last.Content), &env) == nil && env.Error == "" {
			return chatscript.Reply{Text: env.Result.Path + " says: " + strings.TrimSpace(env.Result.Content)}
		}
		return chatscript.Reply{Text: "I could not read it: " + env.Error}
	}
	if f := regexp.MustCompile(`\b[\w./-]+\.(txt|md|go)\b`).FindString(r.LastUser()); f != "" {
		return chatscript.Reply{Calls: []chatscript.Call{{ID: "call-1", Name: "read_file", Arguments: `{"path":` + strconv.Quote(f) + `}`}}}
	}
	return chatscript.Reply{Text: "You asked: " + r.LastUser()}
}

// runDoc runs d's runnable blocks in order, as a newcomer pasting them:
// bash in the repository's root (where the README says to paste), with a
// temporary HOME holding the test's agentmcp in ~/go/bin (where go install
// puts it; first on PATH), a private XDG_RUNTIME_DIR, no OPENAI_* variables,
// and Go's caches as they are (so go install and go run reuse the build).
// Two things differ from a newcomer's machine, both as text replaced in
// each block and back in its output: the Ollama base URL the docs name,
// http://127.0.0.1:11434/v1, is the scripted model endpoint's
// (internal/chatscript, answering with docsModel); port 8931 is a free
// port, since other tests share the machine.
func runDoc(t *testing.T, bin string, d *doc) {
	tmp := t.TempDir()
	home, run := filepath.Join(tmp, "home"), filepath.Join(tmp, "run")
	for _, dir := range []string{filepath.Join(home, "go", "bin"), run} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "go", "bin", "agentmcp"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	model := chatscript.New(t, docsModel)
	port := strings.TrimPrefix(freeAddr(t), "127.0.0.1:")
	in := strings.NewReplacer("http://127.0.0.1:11434/v1", model.URL, "8931", port)
	back := strings.NewReplacer(model.URL, "http://127.0.0.1:11434/v1", "127.0.0.1:"+port, "127.0.0.1:8931")

	goEnv := func(name string) string {
		out, _ := exec.Command("go", "env", name).Output()
		return strings.TrimSpace(string(out))
	}
	env := []string{"HOME=" + home, "XDG_RUNTIME_DIR=" + run, "PATH=" + filepath.Join(home, "go", "bin") + ":" + os.Getenv("PATH"),
		"GOCACHE=" + goEnv("GOCACHE"), "GOMODCACHE=" + goEnv("GOMODCACHE"), "GOTOOLCHAIN=local", "GOFLAGS=-buildvcs=false"}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "HOME" || name == "PATH" || name == "GOPATH" || name == "GOBIN" || name == "GOFLAGS" || name == "GOCACHE" || name == "GOMODCACHE" ||
			strings.HasPrefix(name, "XDG_") || strings.HasPrefix(name, "OPENAI_") || strings.HasPrefix(name, "OTEL_") {
			continue
		}
		env = append(env, kv)
	}

	var servers []*exec.Cmd
	t.Cleanup(func() {
		for _, s := range servers {
			_ = syscall.Kill(-s.Process.Pid, syscall.SIGTERM)
		}
		for _, s := range servers {
			done := make(chan struct{})
			go func() { _ = s.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				_ = syscall.Kill(-s.Process.Pid, syscall.SIGKILL)
				<-done
			}
		}
	})
	for i, bl := range d.blocks {
		if bl.marker != "runnable" && bl.marker != "runnable: background" {
			continue
		}
		script := filepath.Join(tmp, fmt.Sprintf("block-%d.sh", bl.line))
		if err := os.WriteFile(script, []byte(in.Replace(bl.text)), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc", "-e", "-o", "pipefail", script)
		cmd.Dir, cmd.Env = repoRoot, env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var stdout string
		stderr := &syncbuf.Buffer{}
		cmd.Stderr = stderr
		if bl.marker == "runnable: background" {
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			servers = append(servers, cmd)
			line := make(chan string, 1)
			r := bufio.NewReader(out)
			go func() {
				l, _ := r.ReadString('\n')
				line <- l
				_, _ = io.Copy(io.Discard, r)
			}()
			select {
			case stdout = <-line:
			case <-ctx.Done():
			}
			cancel()
			if stdout == "" {
				t.Fatalf("%s: the background block printed no line on stdout; stderr:\n%s", bl.where(d), stderr)
			}
		} else {
			var out bytes.Buffer
			cmd.Stdout = &out
			err := cmd.Run()
			cancel()
			stdout = out.String()
			if err != nil {
				t.Fatalf("%s: the runnable block failed (%v):\n%s\n--- stdout\n%s--- stderr\n%s", bl.where(d), err, bl.text, stdout, stderr)
			}
		}
		if i+1 < len(d.blocks) && d.blocks[i+1].marker == "output" {
			if msg := matchOutput(d.blocks[i+1].text, back.Replace(stdout)); msg != "" {
				t.Errorf("%s: the output shown at %s is not what the block printed: %s\n--- printed\n%s--- stderr\n%s",
					bl.where(d), d.blocks[i+1].where(d), msg, back.Replace(stdout), stderr)
			}
		}
	}
}

// matchOutput compares a shown output with the printed one: the same
// non-empty lines in any order, "…" in a shown line standing for any text.
func matchOutput(shown, printed string) string {
	lines := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if strings.TrimSpace(l) != "" {
				out = append(out, strings.TrimRight(l, " "))
			}
		}
		return out
	}
	want, got := lines(shown), lines(printed)
	if len(want) != len(got) {
		return fmt.Sprintf("%d lines shown, %d printed", len(want), len(got))
	}
	used := make([]bool, len(got))
	for _, w := range want {
		parts := strings.Split(w, "…")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		re := regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
		found := false
		for j, g := range got {
			if !used[j] && re.MatchString(g) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			return fmt.Sprintf("no printed line matches %q", w)
		}
	}
	return ""
}

func TestDocsRunnable(t *testing.T) {
	bin := agentmcpBinary(t)
	for _, d := range docs(t) {
		runnable := false
		var needs []string
		for _, b := range d.blocks {
			if strings.HasPrefix(b.marker, "runnable") {
				runnable = true
				for _, tool := range []string{"curl", "socat", "jq"} {
					if regexp.MustCompile(`\b`+tool+`\b`).MatchString(b.text) && !slices.Contains(needs, tool) {
						needs = append(needs, tool)
					}
				}
			}
		}
		if !runnable {
			continue
		}
		t.Run(strings.TrimSuffix(filepath.Base(d.name), ".md"), func(t *testing.T) {
			for _, tool := range needs {
				if _, err := exec.LookPath(tool); err != nil {
					if os.Getenv("CI") == "true" {
						t.Fatalf("%s not on PATH in CI: scripts/test.sh installs it", tool)
					}
					t.Skipf("%s not on PATH (scripts/test.sh installs it); %s's runnable blocks need it", tool, d.name)
				}
			}
			runDoc(t, bin, d)
		})
	}
}

// TestDocsBinarySize: the stripped command's size is one number wherever
// the docs state it — README.md's dependency paragraph and
// docs/operating.md's otel section (operating.md once kept an old one) —
// and the command built the same way now (go build -ldflags='-s -w') is
// within sizeSlack of it: a change that grows it more (a new dependency)
// measures it again and writes it in both.
func TestDocsBinarySize(t *testing.T) {
	const sizeSlack = 0.05
	stated := []struct {
		doc string
		re  *regexp.Regexp
	}{
		{"README.md", regexp.MustCompile("the stripped command \\(`go build -ldflags='-s -w' \\./app/cmd/agentmcp`\\) is ([0-9,]+) bytes")},
		{"docs/operating.md", regexp.MustCompile("Stripped \\(`go build -ldflags='-s -w'`, [^)]*\\), [^:]*: `agentmcp` is ([0-9,]+) bytes")},
	}
	var size int64
	for _, d := range docs(t) {
		for _, st := range stated {
			if d.name != st.doc {
				continue
			}
			var prose []string
			for _, l := range d.prose {
				prose = append(prose, l.text)
			}
			m := st.re.FindStringSubmatch(strings.Join(strings.Fields(strings.Join(prose, " ")), " "))
			if m == nil {
				t.Errorf("%s: no sentence matches %s: say the stripped command's size as the test reads it", d.name, st.re)
				continue
			}
			n, err := strconv.ParseInt(strings.ReplaceAll(m[1], ",", ""), 10, 64)
			switch {
			case err != nil:
				t.Errorf("%s: %q: %v", d.name, m[1], err)
			case size == 0:
				size = n
			case n != size:
				t.Errorf("%s says the stripped command is %s bytes, %s %d: one measurement, written in both", d.name, m[1], stated[0].doc, size)
			}
		}
	}
	if size == 0 {
		return
	}
	bin := filepath.Join(t.TempDir(), "agentmcp")
	if out, err := exec.Command("go", "build", "-ldflags=-s -w", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if diff := float64(fi.Size()-size) / float64(size); diff > sizeSlack || diff < -sizeSlack {
		t.Errorf("the stripped command is %d bytes, %+.1f%% from the %d the docs state: measure it again (go build -ldflags='-s -w' ./app/cmd/agentmcp) "+
			"and write it in README.md and docs/operating.md", fi.Size(), 100*diff, size)
	}
}

// TestREADMEIsShort: the README is a front door a person reads in five
// minutes (issue 33); the rest belongs in a guide under docs/.
func TestREADMEIsShort(t *testing.T) {
	const maxLines = 250
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > maxLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail into a guide under docs/", n, maxLines)
	}
}
