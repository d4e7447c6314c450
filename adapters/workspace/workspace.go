// Package workspace is agentmcp's reference [ports.Session]: the session the
// CLI serves, over one directory (its root).
//
// It offers these runtime tools, in this order (docs/SPEC.md §2):
//
//   - list_dir {path}: the entries of one directory;
//   - read_file {path}: one file's content, at most [MaxReadBytes];
//   - search_text {pattern, path?}: lines matching a Go regular expression,
//     at most [MaxMatches];
//   - write_file {path, content}: replaces or creates one file, after asking
//     permission through the call's [ports.Caller];
//   - edit_file {path, old_text, new_text, replace_all?}: replaces exact
//     text in one file, after asking with a diff of the change;
//   - find_files {pattern, path?, include_ignored?}: files matching a **
//     glob, .gitignore honoured, at most [MaxFindResults];
//   - run_command {command, timeout_s?}: only with [Options.Commands]; one
//     shell command in the root, after asking (docs/SPEC.md §9 "Commands").
//
// list_dir, read_file, search_text and find_files are read-only and never
// ask. Every file access goes through
// an [os.Root] opened on the root directory, so an absolute path, a ".."
// component or a symbolic link cannot reach outside the root, not even when the
// tree changes during a call: each open is resolved relative to the root's open
// descriptor, one component at a time, never by checking a path and then
// opening it. Paths are slash-separated and relative to the root; absolute
// paths and paths whose ".." climbs above the root are refused before any
// access; links that stay inside the root are followed.
//
// Decisions where docs/SPEC.md is silent:
//
//   - read_file refuses a file over [MaxReadBytes] rather than truncating it,
//     so a model never mistakes a prefix for the file. Content that is not
//     valid UTF-8 comes back base64-encoded ("encoding":"base64").
//   - search_text takes a Go regular expression (RE2: linear time, the
//     factor bounded by [MaxPatternInsts]), matched line by line, at most
//     [MaxPatternBytes]. It checks for cancellation at least every
//     [CancelCheckBytes] of text matched, inside long lines too, so a
//     cancelled search ends within milliseconds whatever the pattern; every
//     line is still matched whole.
//     It walks in name order without following symbolic links or entering
//     .git, skips binary files (a NUL byte) and files over
//     [MaxSearchFileBytes], stops at [MaxMatches] with "truncated": true, and
//     reports progress every [ProgressEvery] files. Entries that vanish or
//     cannot be opened during the walk are skipped and counted, not fatal.
//   - write_file creates no directories, refuses to replace a directory or a
//     symbolic link, and writes atomically: a temporary file in the target's
//     directory, synced, then renamed over the target. Arguments are checked
//     and the target inspected before the permission prompt, so nobody is
//     asked to approve a write that cannot happen. The prompt carries facts
//     only (the path, and the content as a contents argument, which the
//     engine shows as size and SHA-256); a denied or cancelled prompt writes
//     nothing.
//   - write_file lands exactly at the path the person approved
//     (docs/SPEC.md §8). No directory on it may be a symbolic link, even
//     one that stays inside the root, and each one's identity is recorded
//     when it is checked. After the approval the path is walked again from
//     the root, each directory opened by its name in the one opened before
//     and required to be the very directory checked, named without a link;
//     the target must still be a regular file or absent; the temporary
//     file, the rename and the link are then made by single names relative
//     to the last directory opened, so nothing re-resolves the path. If
//     anything on it changed while permission was pending (a directory
//     removed, replaced by another or by a link, the target turned into a
//     link or a directory), the call fails with "<path> changed while
//     permission was pending (<what it is now>)" and writes nothing. A new
//     file is linked into place, never renamed, so a file that appeared
//     meanwhile is not replaced. Left open: a verified directory renamed
//     elsewhere in the microseconds between that walk and the write takes
//     the new file with it, as it would a moment later.
//   - Names that are not valid UTF-8 (a Latin-1 "caf\xe9.txt", say) are
//     never reported: JSON text is Unicode, and the lossy form (U+FFFD for
//     each stray byte) names nothing, or another file ("caf\uFFFD.txt" may
//     exist too). list_dir leaves such entries out and counts them in
//     "skipped"; search_text neither searches nor enters them and counts
//     each in filesSkipped. So every name a tool reports is one every path
//     argument accepts, naming that same entry. No escaped form is offered:
//     any escape syntax is also a possible real name, so real names holding
//     its escape character would have to be escaped too, and a model would
//     see names that differ from the ones in source text or a shell and
//     write them back either way; such names are rare (legacy archives) and
//     are for a person to rename.
//   - Files are opened non-blocking and checked to be regular files on the
//     open descriptor, so a FIFO or device in the tree cannot stall a call.
//   - edit_file checks everything it can before asking (the path as
//     write_file does, the sizes, that old_text occurs as required), shows
//     a unified diff built from the known replacements (no diff algorithm
//     is needed), and after the approval writes only onto the very file it
//     read, byte for byte, through write_file's verified-directory path.
//   - find_files reads .gitignore files itself on doublestar patterns: the
//     small libraries for it are unmaintained, and go-git's brings a
//     filesystem abstraction along; global excludes and .git/info/exclude
//     are not read.
//   - run_command's sandbox is a function the caller gives
//     ([Commands.Sandbox]; the CLI's is adapters/landlock's Wrap), so this
//     package depends on no sandbox.
//   - Cancelling a call's ctx ends it with a failed envelope
//     "<tool> was cancelled"; an unknown tool name is a failed envelope
//     "Unknown tool: <name>" (the engine normally refuses it first).
//
// Tool results are execution envelopes ([domain.Envelope]): success, toolName,
// result (the tool's JSON result, described on each tool), error (a
// client-visible message for a failed call: bad arguments, a path outside the
// root, a cap exceeded, permission denied, cancellation), duration in
// milliseconds and an executionId "exec-<n>", n counting calls from 1 per
// session. A failed tool call is a failed envelope, not an error; InvokeTool
// returns an error only for a refusal ([ErrClosed]).
//
// Concurrency: tool calls, write_file included, run concurrently with each
// other (a write replaces its file atomically, so readers see the old or the
// new content, never a mix).
//
// Submissions: the workspace is tools only. Every submission is refused
// with [ErrNoModel]; the CLI puts the agent loop (adapters/agent) in front
// of the workspace when a model is configured (docs/SPEC.md §9), and that
// loop owns the turn and busy rules.
package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"

	"github.com/agentmcp/agentmcp/internal/logs"
)

// Caps of the runtime tools. They are fixed (docs/SPEC.md §8), not options.
const (
	// MaxReadBytes is the largest file read_file returns; a bigger file is a
	// failed envelope that says so (no truncated reads).
	MaxReadBytes = 1 << 20

	// MaxWriteBytes is the largest content write_file accepts, in bytes of
	// its UTF-8 encoding.
	MaxWriteBytes = 1 << 20

	// MaxMatches is the most matches search_text reports; when there are more
	// it stops searching and reports "truncated": true.
	MaxMatches = 1000

	// MaxPatternBytes bounds the length of a search_text pattern.
	MaxPatternBytes = 1024
	// MaxPatternInsts bounds the compiled size of a search_text pattern,
	// which is what each searched byte costs. Within it the costliest
	// patterns known cost about 30 ms per KiB of text (see
	// [CancelCheckBytes]), so a 1 MiB file can take half a minute; the
	// search checks for cancellation every CancelCheckBytes bytes, so a
	// cancelled call ends within a fraction of a second.
	MaxPatternInsts = 1000

	// CancelCheckBytes bounds the text search_text matches between two
	// checks for cancellation (docs/SPEC.md §8): Go's regexp cannot be
	// interrupted, so this is what bounds how long a cancelled call, or
	// Stop, waits for a search. A line of at most CancelCheckBytes bytes is
	// matched in one piece; a longer one is fed to the matcher rune by rune
	// (regexp.MatchReader), which ends it early once the call's ctx is done,
	// checking every 256 bytes. Either way every line is
	// matched whole: nothing is cut or windowed, so a match anywhere in a
	// line, its very end included, is found, and ^, $ and \b mean what they
	// mean on the whole line.
	//
	// Measured on the 2-core development machine (shared, so noisy), on a
	// line of ASCII letters with no match: "(a|aa){0,120}b", "(?:a?){400}b"
	// and "(a*){200}b" cost 4-7 ms per KiB (5-7 s for a 1 MiB line); the
	// costliest patterns found within MaxPatternInsts, such as
	// "(?:(?:a|\pL)*){498}b" and "(?:\pL*\pL*){249}b" (999 instructions,
	// every one live on every byte, half of them large class lookups),
	// 15-30 ms per KiB (up to 30 s for 1 MiB). One unit of 1 KiB thus costs
	// at most about 30 ms (15 times that under the race detector).
	CancelCheckBytes = 1 << 10

	// MaxSearchFileBytes is the largest file search_text reads; bigger files
	// are skipped and counted in filesSkipped.
	MaxSearchFileBytes = 1 << 20

	// MaxMatchTextBytes bounds the text of one match: a longer line is cut
	// (on a UTF-8 boundary) and the match is marked "cut": true.
	MaxMatchTextBytes = 256

	// MaxListEntries is the most entries list_dir returns; when a directory
	// holds more, it returns the first MaxListEntries by name and reports
	// "truncated": true.
	MaxListEntries = 1000

	// MaxPathBytes bounds a path argument.
	MaxPathBytes = 4096

	// ProgressEvery is how many files search_text examines between two
	// progress reports through the Caller.
	ProgressEvery = 100
)

// Refusals. Their messages are client-visible and single-line; both wrap
// [ports.ErrRefused].
var (
	// ErrNoModel refuses every submission: the workspace runs no turns of
	// its own. Its message says how to configure a model.
	ErrNoModel = ports.Refused("submissions are not available: no model is configured; start agentmcp with --model NAME (and --model-url URL for a local or other OpenAI-compatible endpoint)")

	// ErrClosed refuses every call after [Session.Close].
	ErrClosed = ports.Refused("workspace session is closed")
)

// Options configures a [Session].
type Options struct {
	// Root is the directory the session serves; required. It is opened once,
	// by New, following symbolic links in the name itself; what it names
	// later (a rename, a replaced link) does not change the session's root.
	Root string

	// Commands, when set, adds run_command (docs/SPEC.md §9 "Commands"):
	// New then also creates the session's private temporary directory,
	// which Close removes.
	Commands *Commands

	// Resources, when not NoResources, serves every file under the root as
	// an MCP resource through one URI template (docs/SPEC.md §2): FileURIs
	// on the local carriers, WorkspaceURIs on serve remote.
	Resources ResourceURIs

	// Logger receives one debug record per tool call (tool, executionId,
	// success, duration; never arguments or contents). Nil discards.
	Logger *slog.Logger
}

// Session is the reference workspace session. It is safe for concurrent use.
// Create it with [New] and release it with [Session.Close].
type Session struct {
	root  *os.Root
	log   *slog.Logger
	tools []toolSpec // the catalog: toolSpecs, less run_command unless enabled

	// run_command: nil cmds when it is off. rootPath is the root's
	// absolute path with links resolved (a command's working directory and
	// a writable tree of its sandbox); tmpDir the private temporary
	// directory; closing ends with Close, which kills the commands' groups
	// and waits for them (cmdWG, counted in under cmdMu).
	cmds      *Commands
	rootPath  string
	tmpDir    string
	closing   context.Context
	closeCmds context.CancelFunc
	cmdMu     sync.Mutex
	cmdWG     sync.WaitGroup

	res *resources // nil: no resources ([Options.Resources])
	// watches watch the files of resource subscriptions: the process's
	// one watchHub (watch.go).
	watches *watchHub

	closed atomic.Bool
	seq    atomic.Uint64 // execution ids

	// hooks are test seams; the zero value does nothing.
	hooks hooks

	closeOnce sync.Once
	closeErr  error
}

// hooks lets tests act at precise points of a call (no sleeps).
type hooks struct {
	// beforeOpen runs before search_text opens a directory or file (its
	// slash-separated path relative to the root).
	beforeOpen func(rel string)

	// beforeMatch runs before search_text matches one line of the file rel
	// (its number, from 1).
	beforeMatch func(rel string, line int)

	// lineCheck runs at each cancellation check while a line longer than
	// CancelCheckBytes is matched, with the bytes handed to the matcher so
	// far, before the check.
	lineCheck func(off int)
}

// Interface guards.
var (
	_ ports.Session            = (*Session)(nil)
	_ ports.ServerFeatures     = (*Session)(nil)
	_ ports.Resources          = (*resources)(nil)
	_ ports.ResourceSubscriber = (*resources)(nil)
)

// New opens opts.Root and returns a session over it. It fails when Root is
// empty or cannot be opened as a directory.
func New(opts Options) (*Session, error) {
	if opts.Root == "" {
		return nil, errors.New("workspace: Root is required")
	}
	root, err := os.OpenRoot(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("workspace: open root: %w", err)
	}
	log := logs.OrDiscard(opts.Logger)
	s := &Session{root: root, log: log, cmds: opts.Commands, watches: processWatches}
	s.closing, s.closeCmds = context.WithCancel(context.Background())
	for _, t := range toolSpecs {
		if t.name != "run_command" || s.cmds != nil {
			s.tools = append(s.tools, t)
		}
	}
	if opts.Resources != NoResources {
		abs, err := resolvedRoot(opts.Root)
		if err != nil {
			root.Close()
			return nil, fmt.Errorf("workspace: resolve root: %w", err)
		}
		s.res = newResources(s, opts.Resources, abs)
	}
	if s.cmds != nil {
		if !commandsSupported {
			root.Close()
			return nil, errors.New("workspace: run_command needs a Unix system (process groups)")
		}
		if err := s.prepareCommands(opts.Root); err != nil {
			root.Close()
			return nil, err
		}
	}
	return s, nil
}

// prepareCommands resolves the root's path and creates the private
// temporary directory.
func (s *Session) prepareCommands(root string) error {
	abs, err := resolvedRoot(root)
	if err != nil {
		return fmt.Errorf("workspace: resolve root: %w", err)
	}
	s.rootPath = abs
	if s.tmpDir, err = os.MkdirTemp("", "agentmcp-cmd-"); err != nil {
		return fmt.Errorf("workspace: create the commands' temporary directory: %w", err)
	}
	if s.tmpDir, err = filepath.EvalSymlinks(s.tmpDir); err != nil {
		os.RemoveAll(s.tmpDir)
		return fmt.Errorf("workspace: create the commands' temporary directory: %w", err)
	}
	return nil
}

// Close refuses new calls with [ErrClosed] and closes the root. Calls in
// flight fail their next file access. Close is safe to repeat; every call
// returns the first call's result.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.cmdMu.Lock()
		s.closeCmds() // kills every running command's process group
		s.cmdMu.Unlock()
		s.cmdWG.Wait()
		if s.tmpDir != "" {
			os.RemoveAll(s.tmpDir)
		}
		s.closeErr = s.root.Close()
	})
	return s.closeErr
}

// RuntimeTools returns list_dir, read_file, search_text and write_file, in
// that order, every time, each with a title and annotations (docs/SPEC.md
// §2): the first three read-only and closed-world, write_file destructive,
// idempotent and closed-world. The slice and the schemas are fresh copies.
func (s *Session) RuntimeTools(ctx context.Context) ([]domain.Tool, error) {
	out := make([]domain.Tool, len(s.tools))
	for i, spec := range s.tools {
		out[i] = domain.Tool{
			Name:        spec.name,
			Title:       spec.title,
			Description: spec.description,
			InputSchema: append(json.RawMessage(nil), spec.schema...),
			Annotations: spec.annotations.Clone(),
		}
	}
	return out, nil
}

// InvokeTool runs one runtime tool and returns its envelope. Tool failures
// (bad arguments, file-system errors, caps, permission denied, cancellation of
// ctx) are failed envelopes with a nil error; a name that is not a runtime
// tool is a failed envelope "Unknown tool: <name>". The error is non-nil only
// for a refusal: [ErrClosed] after Close.
func (s *Session) InvokeTool(ctx context.Context, name string, arguments json.RawMessage, caller ports.Caller) (domain.Envelope, error) {
	if s.closed.Load() {
		return domain.Envelope{}, ErrClosed
	}
	if caller == nil {
		caller = ports.ClosedCaller{}
	}

	start := time.Now()
	id := fmt.Sprintf("exec-%d", s.seq.Add(1))
	var (
		result any
		err    error
	)
	switch spec := s.lookupTool(name); {
	case spec == nil:
		err = errors.New(domain.UnknownToolMessage(name))
	case ctx.Err() != nil:
		err = cancelled(name)
	default:
		var args toolArgs
		if args, err = parseArguments(name, spec.params, arguments); err == nil {
			result, err = spec.run(s, ctx, args, caller)
		}
	}
	env := domain.Envelope{Success: err == nil, ToolName: name, ExecutionID: id}
	if f := (*failedWith)(nil); errors.As(err, &f) {
		env.Result, _ = marshalResult(f.result)
	}
	if err == nil {
		env.Result, err = marshalResult(result)
		env.Success = err == nil
	}
	if err != nil {
		env.Error = err.Error()
	}
	ms := float64(time.Since(start)) / float64(time.Millisecond)
	env.Duration = &ms
	s.log.Debug("tool call", "tool", name, "executionId", id, "success", env.Success, "durationMs", ms)
	return env, nil
}

// Submit refuses every submission: with [ErrNoModel], or [ErrClosed] after
// Close. Turns are the agent loop's (adapters/agent), which wraps this
// session when a model is configured.
func (s *Session) Submit(ctx context.Context, _ ports.Submission, caller ports.Caller) (ports.TurnResult, error) {
	if s.closed.Load() {
		return ports.TurnResult{}, ErrClosed
	}
	return ports.TurnResult{}, ErrNoModel
}
