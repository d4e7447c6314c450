package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/secretenv"
	"github.com/agentmcp/agentmcp/ports"
)

// Bounds of run_command (docs/SPEC.md §9 "Commands").
const (
	// DefaultCommandTimeout is a command's time limit when the call gives
	// none.
	DefaultCommandTimeout = 2 * time.Minute
	// MaxCommandTimeout is the longest timeout_s a call may ask for.
	MaxCommandTimeout = 10 * time.Minute

	// MaxCommandBytes bounds the command text. It must also fit the
	// permission dialog whole (domain.Fits), so the person sees exactly
	// what runs.
	MaxCommandBytes = 8 << 10

	// MaxOutputBytes bounds the output run_command keeps: the first and
	// the last MaxOutputBytes/2 bytes; what lies between is counted and
	// dropped as it arrives, so a command that prints without end costs
	// no memory.
	MaxOutputBytes = 64 << 10

	// ExitGrace is how long run_command waits, once the shell has exited
	// and its process group was killed, for the output pipe to close: a
	// process that left the group (setsid) and keeps the pipe open is cut
	// off after it. It is also how long a command asked to stop (SIGTERM
	// to its first process: a sandbox's launcher, which then ends every
	// process of the command) has before its group is killed.
	ExitGrace = 2 * time.Second
)

// Shell is the interpreter of run_command: Shell -c command.
const Shell = "/bin/sh"

// Commands turns on run_command ([Options.Commands]).
type Commands struct {
	// Sandbox wraps the argument vector of a command ([Shell], "-c",
	// command) into one that runs it sandboxed, with writes allowed only
	// beneath writable: the workspace root (writable[0], the working
	// directory) and the session's private temporary directory
	// (writable[1]), both absolute. The CLI composes adapters/bubblewrap
	// around adapters/landlock's launcher, or the launcher alone
	// (docs/SPEC.md §9 "The sandbox"). The process it names is started in
	// a session of its own, with SIGTERM as its parent-death signal, and
	// stopped with SIGTERM, then its group with SIGKILL ExitGrace later.
	// Nil runs commands without a sandbox (--sandbox none).
	Sandbox func(argv, writable []string) ([]string, error)
	// Files are open files every sandboxed command's first process gets
	// as descriptors 3, 4, ... (the sandbox's own: bubblewrap's launcher
	// executable); they stay the caller's to close.
	Files []*os.File
	// Name names the sandbox in each result ("sandbox"); empty means
	// "none" without a Sandbox and "sandboxed" with one.
	Name string
	// Reach is what the approval dialog says a sandboxed command can and
	// cannot reach: lines of at most domain.MaxExcerpt characters, shown
	// as the prompt's "sandbox" argument; empty shows none.
	Reach string
}

// commandEnv is the environment of a command: the server's, less every
// variable that holds a secret by its name or its value (secretenv.IsSecret:
// OPENAI_API_KEY, GITHUB_PAT, DATABASE_URL, a URL with a password) and less
// SSH_AUTH_SOCK and GPG_AGENT_INFO (an agent's socket signs with the user's
// keys), with TMPDIR, TMP and TEMP set to the private temporary directory.
func commandEnv(tmp string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(name) {
		case "TMPDIR", "TMP", "TEMP": // replaced below
			continue
		case "SSH_AUTH_SOCK", "GPG_AGENT_INFO": // they hand out the user's keys
			continue
		}
		if !secretenv.IsSecret(name, value) {
			env = append(env, kv)
		}
	}
	return append(env, "TMPDIR="+tmp, "TMP="+tmp, "TEMP="+tmp)
}

type commandResult struct {
	Command  string `json:"command"`
	ExitCode int    `json:"exitCode"`         // -1 when ended by a signal
	Signal   string `json:"signal,omitempty"` // the signal that ended it
	TimedOut bool   `json:"timedOut,omitempty"`
	Output   string `json:"output"` // stdout and stderr, interleaved as written
	// OutputBytes is how much the command wrote; when it exceeds
	// MaxOutputBytes, Output holds the head and the tail with a marker
	// between them and OutputCut is true.
	OutputBytes int64  `json:"outputBytes"`
	OutputCut   bool   `json:"outputCut,omitempty"`
	Sandboxed   bool   `json:"sandboxed"`
	Sandbox     string `json:"sandbox"` // its name: "bubblewrap", "landlock", "none"
}

// sandboxName is what results call the sandbox.
func (c *Commands) sandboxName() string {
	switch {
	case c.Name != "":
		return c.Name
	case c.Sandbox == nil:
		return "none"
	}
	return "sandboxed"
}

// failedWith is a tool failure that still carries a result: the envelope
// says success false with the error, and holds the result too (a command
// that ran past its timeout, with the output it wrote).
type failedWith struct {
	err    error
	result any
}

func (f *failedWith) Error() string { return f.err.Error() }

func (s *Session) runCommand(ctx context.Context, args toolArgs, caller ports.Caller) (any, error) {
	if s.cmds == nil {
		return nil, errors.New(domain.UnknownToolMessage("run_command"))
	}
	command, _, err := args.str("command", true)
	if err != nil {
		return nil, err
	}
	timeout := DefaultCommandTimeout
	if raw, ok := args["timeout_s"]; ok && string(raw) != "null" {
		n, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || n <= 0 || n > MaxCommandTimeout.Seconds() || n != float64(int(n)) {
			return nil, invalidArgs(fmt.Sprintf("timeout_s must be a whole number of seconds from 1 to %d", int(MaxCommandTimeout.Seconds())))
		}
		timeout = time.Duration(n) * time.Second
	}
	switch {
	case strings.TrimSpace(command) == "":
		return nil, invalidArgs("command must not be empty")
	case len(command) > MaxCommandBytes:
		return nil, invalidArgs(fmt.Sprintf("command is %d bytes; run_command takes at most %d", len(command), MaxCommandBytes))
	case strings.IndexByte(command, 0) >= 0:
		return nil, invalidArgs("command must not contain a NUL byte")
	case !utf8.ValidString(command):
		return nil, invalidArgs("command must be valid UTF-8")
	case !domain.Fits(command):
		return nil, invalidArgs(fmt.Sprintf("command does not fit the approval dialog whole (at most %d lines of at most %d characters): split it, or write a script file and run that", domain.MaxLines, domain.MaxExcerpt))
	}

	summary := "Run a shell command in the workspace, sandboxed: it may write only under the workspace root and a private temporary directory"
	switch {
	case s.cmds.Sandbox == nil:
		summary = "Run a shell command in the workspace WITHOUT a sandbox: it can do whatever your user account can"
	case s.cmds.Name != "":
		summary = "Run a shell command in the workspace, sandboxed with " + s.cmds.Name
	}
	prompt := domain.PermissionPrompt{
		Tool:    "run_command",
		Summary: summary,
		Arguments: []domain.Argument{
			{Name: "command", Value: command, Lines: true},
			{Name: "working directory", Value: s.rootPath, Path: true},
			{Name: "timeout", Value: timeout.String()},
		},
	}
	if s.cmds.Sandbox != nil && s.cmds.Reach != "" {
		prompt.Arguments = append(prompt.Arguments, domain.Argument{Name: "sandbox", Value: s.cmds.Reach, Lines: true})
	}
	if caller.RequestPermission(ctx, prompt) != domain.AllowOnce {
		return nil, errors.New("Permission denied: running the command was not allowed. " + notApproved(caller))
	}
	if ctx.Err() != nil {
		return nil, cancelled("run_command")
	}
	return s.execute(ctx, command, timeout)
}

// execute runs command under Shell in the root, in a process group of its
// own, and returns its result. The group is killed when the shell exits
// (so nothing it left behind outlives it), when ctx ends, when the timeout
// passes and when the session closes.
func (s *Session) execute(ctx context.Context, command string, timeout time.Duration) (any, error) {
	if !s.startCommand() {
		return nil, ErrClosed
	}
	defer s.cmdWG.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.closing, cancel)
	defer stop()
	tctx, tcancel := context.WithTimeout(ctx, timeout)
	defer tcancel()

	argv := []string{Shell, "-c", command}
	if s.cmds.Sandbox != nil {
		var err error
		if argv, err = s.cmds.Sandbox(argv, []string{s.rootPath, s.tmpDir}); err != nil {
			return nil, err
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("cannot run the command: %v", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = s.rootPath
	cmd.Env = commandEnv(s.tmpDir)
	cmd.Stdout, cmd.Stderr = w, w // one pipe: the output interleaved as written
	if s.cmds.Sandbox != nil {
		cmd.ExtraFiles = s.cmds.Files
	}
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("cannot run the command: %v", err)
	}
	w.Close()
	pgid := cmd.Process.Pid
	killGroup := func() { killProcessGroup(pgid) }

	out := &headTail{}
	read := make(chan struct{})
	go func() {
		defer close(read)
		io.Copy(out, r)
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	var werr error
	select {
	case werr = <-waited:
	case <-tctx.Done():
		werr = stopGracefully(cmd.Process.Pid, waited, killGroup)
	}
	killGroup() // whatever the shell left behind
	grace := time.NewTimer(ExitGrace)
	select {
	case <-read:
	case <-grace.C:
	}
	grace.Stop()
	r.Close() // ends a copy still blocked by an escaped process
	<-read

	if ctx.Err() != nil {
		return nil, cancelled("run_command")
	}
	res := commandResult{Command: command, Sandboxed: s.cmds.Sandbox != nil, Sandbox: s.cmds.sandboxName()}
	res.Output, res.OutputBytes, res.OutputCut = out.text()
	res.TimedOut = tctx.Err() != nil
	var ee *exec.ExitError
	switch {
	case werr == nil:
	case errors.As(werr, &ee):
		res.ExitCode = ee.ExitCode()
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			res.ExitCode, res.Signal = -1, st.Signal().String()
		}
	default:
		return nil, fmt.Errorf("the command failed to run: %v", werr)
	}
	if res.TimedOut {
		return nil, &failedWith{result: res, err: fmt.Errorf("the command did not finish within its timeout of %v and was killed, "+
			"with everything it started (its output so far is in the result)", timeout)}
	}
	return res, nil
}

// stopGracefully asks the command's first process to end and waits for it at most
// ExitGrace, then kills the group; it returns the process's wait error.
func stopGracefully(pid int, waited <-chan error, killGroup func()) error {
	stopCommand(pid)
	grace := time.NewTimer(ExitGrace)
	defer grace.Stop()
	select {
	case err := <-waited:
		return err
	case <-grace.C:
		killGroup()
		return <-waited
	}
}

// startCommand counts a command in, unless the session is closing.
func (s *Session) startCommand() bool {
	s.cmdMu.Lock()
	defer s.cmdMu.Unlock()
	if s.closing.Err() != nil {
		return false
	}
	s.cmdWG.Add(1)
	return true
}

// headTail keeps the first and the last MaxOutputBytes/2 bytes written to
// it and counts the rest.
type headTail struct {
	mu    sync.Mutex
	head  []byte
	tail  []byte // a ring once full
	next  int    // where the ring writes next
	total int64
}

func (h *headTail) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(p)
	h.total += int64(n)
	const half = MaxOutputBytes / 2
	if room := half - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	if len(p) >= half {
		p = p[len(p)-half:]
	}
	for len(p) > 0 {
		if len(h.tail) < half {
			k := min(half-len(h.tail), len(p))
			h.tail = append(h.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := copy(h.tail[h.next:], p)
		h.next = (h.next + k) % half
		p = p[k:]
	}
	return n, nil
}

// text returns the kept output as text (invalid UTF-8 replaced by U+FFFD),
// the total written and whether anything was dropped.
func (h *headTail) text() (string, int64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	tail := append(append([]byte(nil), h.tail[h.next:]...), h.tail[:h.next]...)
	kept := int64(len(h.head) + len(tail))
	if kept == h.total {
		return strings.ToValidUTF8(string(h.head)+string(tail), "\uFFFD"), h.total, false
	}
	// Cut on rune boundaries where the dropped part begins and ends.
	head := h.head
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	marker := fmt.Sprintf("\n… [%d bytes of output left out] …\n", h.total-int64(len(head)+len(tail)))
	return strings.ToValidUTF8(string(head), "\uFFFD") + marker + strings.ToValidUTF8(string(tail), "\uFFFD"), h.total, true
}
