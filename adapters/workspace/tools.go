package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// toolSpec is one runtime tool: what tools/list advertises and how it runs.
type toolSpec struct {
	name        string
	title       string
	annotations domain.ToolAnnotations
	description string
	schema      json.RawMessage
	params      []string // allowed argument names, for messages
	run         func(s *Session, ctx context.Context, args toolArgs, caller ports.Caller) (any, error)
}

// readOnly annotates the tools that only read the workspace: clients in a
// read-only mode may run them, and nothing outside the workspace is reached.
var readOnly = domain.ToolAnnotations{ReadOnlyHint: domain.Hint(true), OpenWorldHint: domain.Hint(false)}

// toolSpecs is the catalog, in the advertised order. Each schema is strict:
// root "type":"object", "required", "additionalProperties":false. The
// session checks the arguments itself as well; it never relies on a client
// having validated them.
var toolSpecs = []toolSpec{
	{
		name:        "list_dir",
		title:       "List a directory",
		annotations: readOnly,
		description: `List the entries of one directory of the workspace. path is relative to the workspace root ("." is the root). ` +
			`Returns {path, entries:[{name, type, size}], truncated, skipped}: type is "file", "dir", "symlink" or "other"; size (bytes) is given for files only. ` +
			`Entries are sorted by name, at most 1000; truncated is true when the directory holds more. Symbolic links are listed, not followed. ` +
			`Entries whose names are not valid UTF-8 cannot be named through this interface: they are left out and counted in skipped; every name listed can be passed back as a path.`,
		schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","minLength":1,"maxLength":4096,"description":"Directory to list, relative to the workspace root; \".\" is the root."}},"required":["path"],"additionalProperties":false}`),
		params: []string{"path"},
		run:    (*Session).listDir,
	},
	{
		name:        "read_file",
		title:       "Read a file",
		annotations: readOnly,
		description: `Read one file of the workspace. path is relative to the workspace root; symbolic links are followed only while they stay inside it. ` +
			`Returns {path, size, encoding, content}: content is the file's text when it is valid UTF-8 (encoding "utf-8"), else its bytes in base64 (encoding "base64"). ` +
			`Files over 1 MiB (1048576 bytes) are not read: the call fails and says so. Only regular files can be read.`,
		schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","minLength":1,"maxLength":4096,"description":"File to read, relative to the workspace root."}},"required":["path"],"additionalProperties":false}`),
		params: []string{"path"},
		run:    (*Session).readFile,
	},
	{
		name:        "search_text",
		title:       "Search text",
		annotations: readOnly,
		description: `Search the workspace's text files for lines matching a regular expression (Go RE2 syntax, case-sensitive unless it starts with (?i), at most 1024 bytes). ` +
			`path (optional, default the workspace root) is a directory searched recursively, or a single file. Symbolic links and .git directories are not entered; ` +
			`binary files (holding a NUL byte), files over 1 MiB, and files or directories whose names are not valid UTF-8 (they cannot be named through this interface) are skipped and counted in filesSkipped. ` +
			`Returns {pattern, path, matches:[{path, line, text, cut}], truncated, filesSearched, filesSkipped}: matches in path order then line order (lines count from 1), ` +
			`at most 1000 (truncated is true when there were more); text is the matching line, at most 256 bytes (cut is true when the line was longer). ` +
			`Reports progress every 100 files.`,
		schema: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string","minLength":1,"maxLength":1024,"description":"Go regular expression (RE2 syntax) matched against each line."},"path":{"type":"string","minLength":1,"maxLength":4096,"description":"Directory or file to search, relative to the workspace root; default the root."}},"required":["pattern"],"additionalProperties":false}`),
		params: []string{"pattern", "path"},
		run:    (*Session).searchText,
	},
	{
		name:  "write_file",
		title: "Write a file",
		// Destructive (it replaces a file), idempotent (the same content
		// written twice leaves the same file), closed-world (the workspace
		// only).
		annotations: domain.ToolAnnotations{ReadOnlyHint: domain.Hint(false), DestructiveHint: domain.Hint(true),
			IdempotentHint: domain.Hint(true), OpenWorldHint: domain.Hint(false)},
		description: `Write one file of the workspace, replacing it if it exists. Asks the user for permission first; a denied call writes nothing. ` +
			`path is relative to the workspace root; its directory must already exist (no directories are created), no directory on it may be a symbolic link, and an existing target must be a regular file. ` +
			`If the path changes while the user decides (a directory on it replaced, removed or turned into a link, the target turned into a link or a directory), nothing is written and the call fails saying the path changed while permission was pending. ` +
			`content is the whole new text, at most 1 MiB (1048576 bytes) of UTF-8. The file is replaced atomically (a temporary file in the same directory, then a rename); ` +
			`an existing file keeps its permission bits, a new one gets 0644 less the umask. Returns {path, bytes, created, sha256}.`,
		schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","minLength":1,"maxLength":4096,"description":"File to write, relative to the workspace root; its directory must exist."},"content":{"type":"string","description":"The complete new content of the file, at most 1 MiB of UTF-8."}},"required":["path","content"],"additionalProperties":false}`),
		params: []string{"path", "content"},
		run:    (*Session).writeFile,
	},
	{
		name:  "edit_file",
		title: "Edit a file",
		// Destructive (it changes a file), not idempotent (replace_all
		// applied twice may change more), closed-world.
		annotations: domain.ToolAnnotations{ReadOnlyHint: domain.Hint(false), DestructiveHint: domain.Hint(true),
			IdempotentHint: domain.Hint(false), OpenWorldHint: domain.Hint(false)},
		description: `Edit one file of the workspace by exact text replacement: old_text is replaced by new_text. Asks the user for permission first, showing the change as a diff; a denied call changes nothing. ` +
			`old_text must match the file exactly (whitespace and line ends included) and occur exactly once, unless replace_all is true, which replaces every occurrence; include enough surrounding lines to make it unique. ` +
			`The call fails, saying why, when old_text is not found, occurs more than once without replace_all, or equals new_text. ` +
			`Files of at most 1 MiB (1048576 bytes), before and after the edit. The same path rules as write_file: no symbolic links, on the path or as the target. ` +
			`If the file changes while the user decides, nothing is written and the call fails saying so. The file is replaced atomically and keeps its permission bits. Returns {path, replacements, bytes, sha256}.`,
		schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","minLength":1,"maxLength":4096,"description":"File to edit, relative to the workspace root."},"old_text":{"type":"string","minLength":1,"description":"The exact text to replace."},"new_text":{"type":"string","description":"The text to put in its place."},"replace_all":{"type":"boolean","description":"Replace every occurrence of old_text (default false: it must occur exactly once)."}},"required":["path","old_text","new_text"],"additionalProperties":false}`),
		params: []string{"path", "old_text", "new_text", "replace_all"},
		run:    (*Session).editFile,
	},
	{
		name:        "find_files",
		title:       "Find files",
		annotations: readOnly,
		description: `Find files of the workspace whose paths match a glob pattern: * matches within one path segment, ** any number of segments, ? one character, [abc] and {a,b} as in a shell (for example "**/*.go" or "cmd/*/main.go"). ` +
			`The pattern is matched against paths relative to path (optional, a directory; default the workspace root). Symbolic links are reported but not followed; .git is never entered; ` +
			`files and directories that the .gitignore files of the workspace ignore are skipped unless include_ignored is true. ` +
			`Returns {pattern, path, files, truncated, stopped, ignored, skipped}: files are paths relative to the workspace root, sorted, at most 1000; truncated is true when the search stopped early ` +
			`(stopped says why: "results", "entries" after 1000000 entries, or "time" after 20 s). Only files (not directories) are listed.`,
		schema: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string","minLength":1,"maxLength":1024,"description":"Glob pattern, for example \"**/*_test.go\"."},"path":{"type":"string","minLength":1,"maxLength":4096,"description":"Directory to search, relative to the workspace root; default the root."},"include_ignored":{"type":"boolean","description":"Also list what .gitignore files ignore (default false)."}},"required":["pattern"],"additionalProperties":false}`),
		params: []string{"pattern", "path", "include_ignored"},
		run:    (*Session).findFiles,
	},
	{
		name:  "run_command",
		title: "Run a shell command",
		// Destructive (a command can change anything it may write) and
		// open-world (it can reach the network and other programs).
		annotations: domain.ToolAnnotations{ReadOnlyHint: domain.Hint(false), DestructiveHint: domain.Hint(true),
			IdempotentHint: domain.Hint(false), OpenWorldHint: domain.Hint(true)},
		description: `Run a shell command (/bin/sh -c) in the workspace root and return its exit code and output. Asks the user for permission first, showing the exact command; a denied call runs nothing. ` +
			`Standard input is empty. The command runs at most timeout_s seconds (default 120, at most 600); then it and every process it started are killed (timedOut true). ` +
			`Output is stdout and stderr interleaved as written; when there is more than 64 KiB, the first and last 32 KiB are kept and outputCut is true. ` +
			`Environment variables whose names hold KEY, TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL are removed, and SSH_AUTH_SOCK and GPG_AGENT_INFO; TMPDIR is a private temporary directory. ` +
			`Where the server runs it sandboxed (sandboxed true), the command may write only under the workspace root and TMPDIR: point caches there (for example GOCACHE=$TMPDIR/go-build go vet ./...). ` +
			`Processes it leaves running in the background are killed when it exits. Returns {command, exitCode, signal, timedOut, output, outputBytes, outputCut, sandboxed}.`,
		schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","minLength":1,"maxLength":8192,"description":"The shell command."},"timeout_s":{"type":"integer","minimum":1,"maximum":600,"description":"Time limit in seconds (default 120)."}},"required":["command"],"additionalProperties":false}`),
		params: []string{"command", "timeout_s"},
		run:    (*Session).runCommand,
	},
}

func (s *Session) lookupTool(name string) *toolSpec {
	for i := range s.tools {
		if s.tools[i].name == name {
			return &s.tools[i]
		}
	}
	return nil
}

// toolArgs is one call's arguments, decoded strictly: a JSON object without
// duplicate or unknown members.
type toolArgs map[string]json.RawMessage

// parseArguments decodes raw (empty means {}) for tool, which takes params.
func parseArguments(tool string, params []string, raw json.RawMessage) (toolArgs, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return toolArgs{}, nil
	}
	if raw[0] != '{' {
		return nil, invalidArgs("arguments must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, invalidArgs("arguments must be a JSON object")
	}
	args := toolArgs{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, invalidArgs("arguments must be a JSON object")
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, invalidArgs("arguments must be a JSON object")
		}
		if _, dup := args[key]; dup {
			return nil, invalidArgs(fmt.Sprintf("duplicate argument %q", key))
		}
		known := false
		for _, p := range params {
			known = known || p == key
		}
		if !known {
			return nil, invalidArgs(fmt.Sprintf("unknown argument %q (%s takes %s)", key, tool, quoteList(params)))
		}
		args[key] = value
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, invalidArgs("arguments must be a JSON object")
	}
	if dec.More() {
		return nil, invalidArgs("arguments must be a single JSON object")
	}
	return args, nil
}

// str returns the string argument name. A required argument must be present;
// an optional absent one gives ok false. JSON null counts as absent.
func (a toolArgs) str(name string, required bool) (value string, ok bool, err error) {
	raw, has := a[name]
	if !has || string(raw) == "null" {
		if required {
			return "", false, invalidArgs(fmt.Sprintf("missing required argument %q", name))
		}
		return "", false, nil
	}
	if json.Unmarshal(raw, &value) != nil {
		return "", false, invalidArgs(fmt.Sprintf("argument %q must be a string", name))
	}
	return value, true, nil
}

func invalidArgs(msg string) error { return errors.New("invalid arguments: " + msg) }

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

// relPath is a path argument after lexical checks: display is the cleaned
// slash-separated form used in results and messages, name the form handed to
// the os.Root. The os.Root remains the authority on where a name leads.
type relPath struct {
	display string
	name    string
}

// cleanPath checks a path argument lexically: non-empty, bounded, no NUL, not
// absolute, not leaving the root through "..". Symbolic links are for the
// os.Root to refuse; a lexical check cannot see them.
func cleanPath(p string) (relPath, error) {
	switch {
	case p == "":
		return relPath{}, invalidArgs("path must not be empty")
	case len(p) > MaxPathBytes:
		return relPath{}, invalidArgs(fmt.Sprintf("path is longer than %d bytes", MaxPathBytes))
	case strings.IndexByte(p, 0) >= 0:
		return relPath{}, invalidArgs("path must not contain a NUL byte")
	case path.IsAbs(p) || filepath.IsAbs(p) || filepath.VolumeName(p) != "":
		return relPath{}, fmt.Errorf("path %q is absolute: paths are relative to the workspace root", p)
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return relPath{}, fmt.Errorf("path %q escapes the workspace root", p)
	}
	return relPath{display: c, name: filepath.FromSlash(c)}, nil
}

// fsError describes a file-system failure on p for a client: the path as the
// client gave it and the reason, never the root's location on the host.
func fsError(p relPath, err error) error {
	return &fsFailure{msg: fmt.Sprintf("%q: %s", p.display, fsReason(err)), cause: err}
}

// fsFailure is fsError's error: the client's message, with the cause kept
// for errors.Is (a resource read tells a missing file from a refusal).
type fsFailure struct {
	msg   string
	cause error
}

func (f *fsFailure) Error() string { return f.msg }
func (f *fsFailure) Unwrap() error { return f.cause }

func fsReason(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file or directory"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied by the file system"
	}
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	if err.Error() == "path escapes from parent" { // os.Root's refusal; its sentinel is unexported
		return "leads outside the workspace root"
	}
	return err.Error()
}

func cancelled(tool string) error { return fmt.Errorf("%s was cancelled", tool) }

// marshalResult encodes a tool result without HTML escaping: results carry
// source text, where \u003c would only hurt.
func marshalResult(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("cannot encode the result: %v", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
