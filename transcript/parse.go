package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// FormatVersion is the version of the transcript format this package reads
// and writes (docs/SPEC.md §11). A file may say which version it is written
// in with a "format: N" header; a file without one is read as this version.
// Additions that old files still parse under keep the version; a change in
// what an existing file means raises it.
const FormatVersion = 1

// File is one parsed transcript.
type File struct {
	Path     string
	Comment  string   // everything before the first section, verbatim
	Rows     []string // rows: header
	Ignore   []string // ignore: header
	Carriers []string // carriers: header; empty means all
	Bugs     []string // bug: header lines
	// AskClient is the ask-client: header: the carrier serves with asking
	// the client on (docs/SPEC.md §6). Off by default, like the option.
	AskClient bool
	// Conversations is the conversations: header: the built-in session
	// keeps named conversations (docs/SPEC.md §2, §9), so agent_submit
	// takes conversation and fork_from and answers structuredContent.
	Conversations bool
	// Features is the features: header: the built-in session also serves
	// the fixed resources, prompts and completion of internal/fake's
	// Features (docs/SPEC.md §2). Off by default: tools only.
	Features bool

	ClientText string // the client section, verbatim (kept by -update)
	Steps      []Step

	Server   []json.RawMessage // expected messages, as written
	Absent   []string          // #absent ids, compact JSON text
	Calls    []string          // #calls, sorted; meaningful when HasCalls
	HasCalls bool
}

// Step is one client step: bytes to send or a directive.
type Step struct {
	Line int    // 1-based line in the file
	Kind string // "send", "fill", "wait", "wait-idless", "wait-started", "wait-ended", "wait-request", "release", "set-tools", "answer", "answer-error", "close", "poll-task", "update"
	Data []byte // send: bytes; set-tools, answer, answer-error: JSON
	Arg  string // wait: compact id; wait-started/-ended: name; wait-request, answer, answer-error: method; fill: the byte; update: the URI
	N    int    // fill: size; wait-started/-ended: count; update: 1 for "unheld"
	// States are the {{state ID}} references of a send step, in order:
	// each is replaced by a requestState the server minted before sending.
	States []StateRef
}

// StateRef is one {{state ID}}, {{state ID tampered}}, {{task ID}} or
// {{task ID tampered}} in a client line.
type StateRef struct {
	Text     string // the reference as written, replaced when sending
	ID       string // compact JSON text of the id whose response minted it
	Tampered bool   // send the token with its first character changed
	// Member is the result member read: "requestState" ({{state}}) or
	// "taskId" ({{task}}, a CreateTaskResult's id, the same shape).
	Member string
}

// Load parses every *.txt file under dir, sorted by name.
func Load(dir string) ([]*File, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("transcript: no *.txt files in %s", dir)
	}
	sort.Strings(paths)
	var files []*File
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		f, err := Parse(p, data)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// Parse parses one transcript; path is used in errors.
func Parse(path string, data []byte) (*File, error) {
	f := &File{Path: path}
	errorf := func(line int, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", path, line, fmt.Sprintf(format, args...))
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	if strings.Contains(text, "\r") {
		return nil, errorf(1, "carriage return in a transcript: use #raw to send one")
	}
	lines := strings.Split(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	type section struct {
		name  string
		start int // index of its first line
		lines []string
	}
	var comment []string
	var sections []*section
	for i, l := range lines {
		if name, ok := marker(l); ok {
			for _, s := range sections {
				if s.name == name {
					return nil, errorf(i+1, "duplicate section %q", name)
				}
			}
			if name != "client" && name != "server" {
				return nil, errorf(i+1, "unknown section %q (want client, server)", name)
			}
			if name == "server" && len(sections) == 0 {
				return nil, errorf(i+1, "the server section must follow the client section")
			}
			sections = append(sections, &section{name: name, start: i + 1})
			continue
		}
		if len(sections) == 0 {
			comment = append(comment, l)
		} else {
			s := sections[len(sections)-1]
			s.lines = append(s.lines, l)
		}
	}
	if len(sections) != 2 {
		return nil, errorf(1, "want a client and a server section")
	}
	f.Comment = strings.Join(comment, "\n")
	if len(comment) > 0 {
		f.Comment += "\n"
	}
	for i, l := range comment {
		key, val, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch key {
		case "rows":
			f.Rows = append(f.Rows, strings.Fields(val)...)
		case "ignore":
			f.Ignore = append(f.Ignore, strings.Fields(val)...)
		case "carriers":
			f.Carriers = append(f.Carriers, strings.Fields(val)...)
		case "bug":
			if b := strings.TrimSpace(val); b != "" {
				f.Bugs = append(f.Bugs, b)
			} else {
				return nil, errorf(i+1, "empty bug: header")
			}
		case "format":
			if v := strings.TrimSpace(val); v != strconv.Itoa(FormatVersion) {
				return nil, errorf(i+1, "format: %q is not a version this runner reads (it reads %d)", v, FormatVersion)
			}
		case "ask-client", "conversations", "features":
			on := strings.TrimSpace(val)
			if on != "on" && on != "off" {
				return nil, errorf(i+1, "%s: wants on or off, got %q", key, on)
			}
			switch key {
			case "ask-client":
				f.AskClient = on == "on"
			case "conversations":
				f.Conversations = on == "on"
			default:
				f.Features = on == "on"
			}
		}
	}
	if strings.TrimSpace(f.Comment) == "" {
		return nil, errorf(1, "a transcript starts with a comment saying what it pins")
	}

	client, server := sections[0], sections[1]
	f.ClientText = strings.Join(client.lines, "\n")
	if len(client.lines) > 0 {
		f.ClientText += "\n"
	}
	for j, l := range client.lines {
		steps, err := parseStep(l, client.start+j+1)
		if err != nil {
			return nil, errorf(client.start+j+1, "%v", err)
		}
		f.Steps = append(f.Steps, steps...)
	}
	waited := map[string]bool{}
	for _, st := range f.Steps {
		for _, r := range st.States {
			if !waited[r.ID] {
				return nil, errorf(st.Line, "%s needs a #wait %s before it (the response that minted the token)", r.Text, r.ID)
			}
		}
		if st.Kind == "wait" {
			waited[st.Arg] = true
		}
	}

	var buf bytes.Buffer
	for j, l := range server.lines {
		lineNo := server.start + j + 1
		t := strings.TrimSpace(l)
		if !strings.HasPrefix(t, "#") {
			buf.WriteString(l)
			buf.WriteByte('\n')
			continue
		}
		if isComment(t) {
			continue
		}
		name, rest, _ := strings.Cut(t[1:], " ")
		rest = strings.TrimSpace(rest)
		switch name {
		case "absent":
			id, err := compactID(rest)
			if err != nil {
				return nil, errorf(lineNo, "#absent: %v", err)
			}
			f.Absent = append(f.Absent, id)
		case "calls":
			if f.HasCalls {
				return nil, errorf(lineNo, "a second #calls")
			}
			f.HasCalls = true
			f.Calls = strings.Fields(rest)
			sort.Strings(f.Calls)
		default:
			return nil, errorf(lineNo, "unknown server directive #%s", name)
		}
	}
	dec := json.NewDecoder(&buf)
	for {
		var m json.RawMessage
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: server section: %v", path, err)
		}
		f.Server = append(f.Server, m)
	}
	return f, nil
}

func marker(l string) (string, bool) {
	if strings.HasPrefix(l, "-- ") && strings.HasSuffix(l, " --") && len(l) > 6 {
		name := strings.TrimSpace(l[3 : len(l)-3])
		if name != "" && !strings.ContainsAny(name, " \t") {
			return name, true
		}
	}
	return "", false
}

func isComment(t string) bool { return t == "#" || strings.HasPrefix(t, "# ") }

// parseStep parses one line of the client section into zero or more steps.
func parseStep(l string, lineNo int) ([]Step, error) {
	if strings.TrimSpace(l) == "" {
		return nil, nil
	}
	if !strings.HasPrefix(l, "#") {
		refs, err := stateRefs(l)
		if err != nil {
			return nil, err
		}
		return []Step{{Line: lineNo, Kind: "send", Data: []byte(l + "\n"), States: refs}}, nil
	}
	if isComment(l) {
		return nil, nil
	}
	name, rest, _ := strings.Cut(l[1:], " ")
	rest = strings.TrimSpace(rest)
	st := Step{Line: lineNo, Kind: name}
	switch name {
	case "poll-task":
		id, status, ok := strings.Cut(rest, " ")
		if !ok || status == "" || strings.Contains(status, " ") {
			return nil, errors.New("#poll-task wants an id and a status")
		}
		cid, err := compactID(id)
		if err != nil {
			return nil, fmt.Errorf("#poll-task: %v", err)
		}
		st.Arg = status
		st.States = []StateRef{{Text: "{{task " + id + "}}", ID: cid, Member: "taskId"}}
		return []Step{st}, nil
	case "raw":
		s, err := strconv.Unquote(rest)
		if err != nil {
			return nil, fmt.Errorf("#raw wants a Go-quoted string: %v", err)
		}
		st.Kind, st.Data = "send", []byte(s)
	case "fill":
		size, char, ok := strings.Cut(rest, " ")
		n, err := parseSize(size)
		if !ok || err != nil || len(char) != 1 || char == "\n" {
			return nil, fmt.Errorf("#fill wants SIZE CHAR (e.g. #fill 64MiB a): %q", rest)
		}
		st.N, st.Arg = n, char
	case "repeat":
		count, line, ok := strings.Cut(rest, " ")
		n, err := strconv.Atoi(count)
		if !ok || err != nil || n < 1 || n > 10000 {
			return nil, fmt.Errorf("#repeat wants N LINE with 1 <= N <= 10000: %q", rest)
		}
		var steps []Step
		for i := 1; i <= n; i++ {
			s, err := parseStep(strings.ReplaceAll(line, "{{n}}", strconv.Itoa(i)), lineNo)
			if err != nil {
				return nil, err
			}
			steps = append(steps, s...)
		}
		return steps, nil
	case "wait":
		id, err := compactID(rest)
		if err != nil {
			return nil, fmt.Errorf("#wait: %v", err)
		}
		st.Arg = id
	case "wait-request":
		if rest == "" || strings.ContainsAny(rest, " \t") {
			return nil, fmt.Errorf("#wait-request wants METHOD")
		}
		st.Arg = rest
	case "wait-idless", "release", "close":
		if rest != "" {
			return nil, fmt.Errorf("#%s takes no argument", name)
		}
	case "wait-started", "wait-ended":
		f := strings.Fields(rest)
		st.N = 1
		switch {
		case len(f) == 2:
			n, err := strconv.Atoi(f[1])
			if err != nil || n < 1 {
				return nil, fmt.Errorf("#%s NAME [N]: bad count %q", name, f[1])
			}
			st.N = n
		case len(f) != 1:
			return nil, fmt.Errorf("#%s wants NAME [N]", name)
		}
		st.Arg = f[0]
	case "update":
		f := strings.Fields(rest)
		switch {
		case len(f) == 2 && f[1] == "unheld":
			st.N = 1
		case len(f) != 1:
			return nil, fmt.Errorf("#update wants URI [unheld]")
		}
		st.Arg = f[0]
	case "set-tools":
		if !json.Valid([]byte(rest)) || !strings.HasPrefix(rest, "[") {
			return nil, fmt.Errorf("#set-tools wants a JSON array")
		}
		st.Data = []byte(rest)
	case "answer":
		method, result, ok := strings.Cut(rest, " ")
		if !ok || !json.Valid([]byte(result)) {
			return nil, fmt.Errorf("#answer wants METHOD JSON")
		}
		st.Arg, st.Data = method, []byte(result)
	case "answer-error":
		method, e, ok := strings.Cut(rest, " ")
		e = strings.TrimSpace(e)
		if !ok || !json.Valid([]byte(e)) || !strings.HasPrefix(e, "{") {
			return nil, fmt.Errorf("#answer-error wants METHOD JSON-OBJECT (the error member)")
		}
		st.Arg, st.Data = method, []byte(e)
	default:
		return nil, fmt.Errorf("unknown client directive #%s (to send a line starting with '#', use #raw)", name)
	}
	return []Step{st}, nil
}

// stateRefRE matches one {{state ID}} or {{task ID}}, optionally
// " tampered"; the id is JSON text without spaces or braces.
var stateRefRE = regexp.MustCompile(`\{\{(state|task) ([^ {}]+)( tampered)?\}\}`)

// stateRefs finds the {{state ...}} and {{task ...}} references of a client
// line.
func stateRefs(l string) ([]StateRef, error) {
	if !strings.Contains(l, "{{state") && !strings.Contains(l, "{{task ") {
		return nil, nil
	}
	var refs []StateRef
	for _, m := range stateRefRE.FindAllStringSubmatch(l, -1) {
		id, err := compactID(m[2])
		if err != nil {
			return nil, fmt.Errorf("%s: %v", m[0], err)
		}
		member := "requestState"
		if m[1] == "task" {
			member = "taskId"
		}
		refs = append(refs, StateRef{Text: m[0], ID: id, Tampered: m[3] != "", Member: member})
	}
	if strings.Count(l, "{{state")+strings.Count(l, "{{task ") != len(refs) {
		return nil, fmt.Errorf("a malformed {{state ID}} or {{state ID tampered}} in %q", l)
	}
	return refs, nil
}

// parseSize parses N, NKiB, NMiB with an optional +N or -N.
func parseSize(s string) (int, error) {
	adj := 0
	if i := strings.LastIndexAny(s, "+-"); i > 0 {
		a, err := strconv.Atoi(s[i+1:])
		if err != nil {
			return 0, err
		}
		if s[i] == '-' {
			a = -a
		}
		adj, s = a, s[:i]
	}
	mult := 1
	switch {
	case strings.HasSuffix(s, "MiB"):
		mult, s = 1<<20, strings.TrimSuffix(s, "MiB")
	case strings.HasSuffix(s, "KiB"):
		mult, s = 1<<10, strings.TrimSuffix(s, "KiB")
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, err
	}
	n = n*mult + adj
	if n < 0 || n > 1<<30 {
		return 0, fmt.Errorf("size %d out of range", n)
	}
	return n, nil
}

// compactID validates an id written in a directive and returns its compact
// JSON text.
func compactID(s string) (string, error) {
	if s == "" || !json.Valid([]byte(s)) {
		return "", fmt.Errorf("want an id as JSON text, got %q", s)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Format renders f with server as its server section (the -update output):
// comment and client section verbatim, then the #absent lines, the messages
// one per line and the #calls line when the transcript had one.
func Format(f *File, server []json.RawMessage, calls []string) []byte {
	var b bytes.Buffer
	b.WriteString(f.Comment)
	b.WriteString("-- client --\n")
	b.WriteString(f.ClientText)
	b.WriteString("-- server --\n")
	for _, id := range f.Absent {
		fmt.Fprintf(&b, "#absent %s\n", id)
	}
	for _, m := range server {
		b.Write(m)
		b.WriteByte('\n')
	}
	if f.HasCalls {
		b.WriteString("#calls")
		c := append([]string(nil), calls...)
		sort.Strings(c)
		for _, name := range c {
			b.WriteString(" " + name)
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}
