//go:build linux

package workspace_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentmcp/agentmcp/adapters/landlock"
	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports/porttest"
)

type commandResult struct {
	Command     string `json:"command"`
	ExitCode    int    `json:"exitCode"`
	Signal      string `json:"signal"`
	TimedOut    bool   `json:"timedOut"`
	Output      string `json:"output"`
	OutputBytes int64  `json:"outputBytes"`
	OutputCut   bool   `json:"outputCut"`
	Sandboxed   bool   `json:"sandboxed"`
}

// commandSession opens a session with run_command over a fresh directory,
// sandboxed with Landlock (the test is skipped where the kernel has none)
// or not.
func commandSession(t *testing.T, sandboxed bool, files map[string]string) (*workspace.Session, string) {
	t.Helper()
	cmds := &workspace.Commands{}
	if sandboxed {
		if _, err := landlock.Available(); err != nil {
			t.Skip(err)
		}
		cmds.Sandbox = func(argv, writable []string) ([]string, error) {
			return landlock.Wrap(argv, landlock.Options{Writable: writable})
		}
	}
	root := t.TempDir()
	writeTree(t, root, files)
	s, err := workspace.New(workspace.Options{Root: root, Commands: cmds})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, root
}

func run(t *testing.T, s *workspace.Session, command string) commandResult {
	t.Helper()
	var res commandResult
	succeed(t, invoke(t, s, "run_command", `{"command":`+quote(command)+`}`, &porttest.Recorder{Allow: true}), &res)
	return res
}

func TestRunCommand(t *testing.T) {
	s, root := commandSession(t, true, map[string]string{"a.txt": "hello\n"})
	c := &porttest.Recorder{Allow: true}
	var res commandResult
	succeed(t, invoke(t, s, "run_command", `{"command":"cat a.txt; echo err >&2; echo out; exit 3","timeout_s":30}`, c), &res)
	if res.ExitCode != 3 || res.Output != "hello\nerr\nout\n" || !res.Sandboxed || res.OutputCut || res.OutputBytes != 14 {
		t.Errorf("result %+v", res)
	}
	perms, _ := c.Requests()
	if len(perms) != 1 {
		t.Fatalf("%d permission prompts, want 1", len(perms))
	}
	msg := domain.PermissionForm(perms[0]).Message
	for _, want := range []string{`"cat a.txt; echo err >&2; echo out; exit 3"`, quote(root), "sandboxed", `"30s"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("prompt lacks %s:\n%s", want, msg)
		}
	}
	// Writes inside the root and the private TMPDIR are allowed.
	if res := run(t, s, `echo made > made.txt && echo tmp > "$TMPDIR/t" && cat "$TMPDIR/t"`); res.ExitCode != 0 || res.Output != "tmp\n" {
		t.Errorf("writing inside: %+v", res)
	}
	if data, _ := os.ReadFile(filepath.Join(root, "made.txt")); string(data) != "made\n" {
		t.Errorf("made.txt = %q", data)
	}
}

func TestRunCommandRefusals(t *testing.T) {
	s, root := commandSession(t, false, nil)
	for _, c := range []*porttest.Recorder{{}, {Allow: false}} {
		fail(t, invoke(t, s, "run_command", `{"command":"touch ran"}`, c), "Permission denied")
	}
	fail(t, invoke(t, s, "run_command", `{"command":"touch ran"}`, nil), "Permission denied") // no asking client
	if _, err := os.Stat(filepath.Join(root, "ran")); err == nil {
		t.Error("a refused command ran")
	}
	allow := &porttest.Recorder{Allow: true}
	for _, tc := range []struct{ args, want string }{
		{`{"command":""}`, "command must not be empty"},
		{`{"command":"true","timeout_s":0}`, "timeout_s must be"},
		{`{"command":"true","timeout_s":601}`, "timeout_s must be"},
		{`{"command":"true","timeout_s":1.5}`, "timeout_s must be"},
		{`{"command":` + quote(strings.Repeat("x", 300)) + `}`, "does not fit the approval dialog"},
		{`{"command":` + quote(strings.Repeat("true\n", 100)) + `}`, "does not fit the approval dialog"},
	} {
		fail(t, invoke(t, s, "run_command", tc.args, allow), tc.want)
	}
	if perms, _ := allow.Requests(); len(perms) != 0 {
		t.Errorf("asked %d times about commands that cannot run", len(perms))
	}
	// Without Commands there is no run_command.
	plain, _ := newSession(t, nil)
	fail(t, invoke(t, plain, "run_command", `{"command":"true"}`, allow), "Unknown tool: run_command")
	tools, _ := plain.RuntimeTools(t.Context())
	for _, tool := range tools {
		if tool.Name == "run_command" {
			t.Error("run_command advertised without Commands")
		}
	}
	tools, _ = s.RuntimeTools(t.Context())
	last := tools[len(tools)-1]
	if a, _ := json.Marshal(last.Annotations); last.Name != "run_command" || string(a) != `{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":true}` {
		t.Errorf("last tool %s annotated %s", last.Name, a)
	}
}

// TestRunCommandSandbox: a command cannot write outside the root and its
// TMPDIR, whatever the route: an absolute path, "..", a symbolic link in
// the root that leads out. It can still read outside.
func TestRunCommandSandbox(t *testing.T) {
	outside := t.TempDir()
	s, root := commandSession(t, true, nil)
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	parent := filepath.Dir(root)
	for _, cmd := range []string{
		"touch " + filepath.Join(outside, "abs"),
		"echo x > ../escaped-" + filepath.Base(root),
		"echo x > out/via-link",
		"mkdir out/dir",
		"rm -f " + filepath.Join(outside, "keep"),
		"ln -s /etc/passwd " + filepath.Join(outside, "ln"),
	} {
		if err := os.WriteFile(filepath.Join(outside, "keep"), []byte("k"), 0o644); err != nil {
			t.Fatal(err)
		}
		res := run(t, s, cmd)
		if res.ExitCode == 0 {
			t.Errorf("%q succeeded under the sandbox: %+v", cmd, res)
		}
		if !strings.Contains(res.Output, "ermission denied") && !strings.Contains(res.Output, "not permitted") {
			t.Errorf("%q: output %q, want a permission error", cmd, res.Output)
		}
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 || entries[0].Name() != "keep" {
		t.Errorf("outside holds %v, want only keep", entries)
	}
	if _, err := os.Stat(filepath.Join(parent, "escaped-"+filepath.Base(root))); err == nil {
		t.Error("a file was written above the root")
	}
	if res := run(t, s, "cat "+filepath.Join(outside, "keep")); res.ExitCode != 0 || res.Output != "k" {
		t.Errorf("reading outside: %+v", res)
	}
}

// TestRunCommandUnsandboxedWritesOutside shows the sandbox test can fail:
// the same command without the sandbox writes outside the root.
func TestRunCommandUnsandboxedWritesOutside(t *testing.T) {
	outside := t.TempDir()
	s, _ := commandSession(t, false, nil)
	res := run(t, s, "touch "+filepath.Join(outside, "abs"))
	if res.ExitCode != 0 || res.Sandboxed {
		t.Fatalf("%+v", res)
	}
	if _, err := os.Stat(filepath.Join(outside, "abs")); err != nil {
		t.Errorf("without the sandbox the command did not write outside: %v", err)
	}
}

// TestRunCommandEnvironment: no variable whose name says key, token,
// secret, password or personal access token, no DATABASE_URL and no URL
// with a password reaches the command; the rest does.
func TestRunCommandEnvironment(t *testing.T) {
	for _, kv := range [][2]string{
		{"OPENAI_API_KEY", "sk-test-openai"}, {"GITHUB_TOKEN", "ghp-test"}, {"my_secret", "s3"},
		{"DB_PASSWORD", "pw"}, {"AWS_SECRET_ACCESS_KEY", "aws"}, {"SSH_AUTH_SOCK", "/run/agent.sock"}, {"AGENTMCP_VISIBLE", "shown"},
		{"GITHUB_PAT", "ghpat-test"}, {"SECRET_KEY_BASE", "rails-base"}, {"PGPASSWORD", "pg-test"},
		{"DATABASE_URL", "postgres://app@db/x"}, {"HTTPS_PROXY", "http://u:proxy-pw@proxy:3128"},
	} {
		t.Setenv(kv[0], kv[1])
	}
	s, _ := commandSession(t, true, nil)
	res := run(t, s, "env; cat /proc/self/environ")
	for _, secret := range []string{"sk-test-openai", "ghp-test", "s3", "=pw", "aws", "OPENAI_API_KEY", "agent.sock",
		"ghpat-test", "rails-base", "pg-test", "postgres://", "proxy-pw"} {
		if strings.Contains(res.Output, secret) {
			t.Errorf("the command saw %q", secret)
		}
	}
	if !strings.Contains(res.Output, "AGENTMCP_VISIBLE=shown") || !strings.Contains(res.Output, "PATH=") {
		t.Errorf("the kept variables are missing:\n%s", res.Output)
	}
}

// TestRunCommandKillsBackgroundChildren: a process the command leaves
// running is killed with its group when the command exits.
func TestRunCommandKillsBackgroundChildren(t *testing.T) {
	s, _ := commandSession(t, true, nil)
	res := run(t, s, `sleep 1000 >/dev/null 2>&1 & echo $!`)
	pid, err := strconv.Atoi(strings.TrimSpace(res.Output))
	if err != nil {
		t.Fatalf("output %q", res.Output)
	}
	assertGone(t, pid)
}

// assertGone checks that pid ends (it was sent SIGKILL; a process takes a
// moment to die): it waits on a pidfd, which becomes readable when the
// process exits, for at most patience.
func assertGone(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return // already gone and reaped
	}
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(patience/time.Millisecond))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		if n == 0 {
			data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			t.Errorf("process %d still runs after %v: %s", pid, patience, data)
		}
		return
	}
}

// TestRunCommandOutputBound: endless and 1 GiB outputs keep the head and
// the tail within the bound; what the server holds stays within it too.
func TestRunCommandOutputBound(t *testing.T) {
	s, _ := commandSession(t, true, nil)
	var res commandResult
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	succeed(t, invoke(t, s, "run_command", `{"command":"echo first; head -c 1073741824 /dev/zero | tr '\\0' x; echo; echo last","timeout_s":120}`, &porttest.Recorder{Allow: true}), &res)
	runtime.ReadMemStats(&after)
	// 1 GiB went through; what was allocated meanwhile is a few buffers.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("%d bytes allocated while 1 GiB of output streamed through", grew)
	}
	if !res.OutputCut || res.OutputBytes != int64(1<<30+len("first\n\nlast\n")) {
		t.Errorf("outputBytes %d, cut %v", res.OutputBytes, res.OutputCut)
	}
	if len(res.Output) > workspace.MaxOutputBytes+100 || !strings.HasPrefix(res.Output, "first\nxxx") || !strings.HasSuffix(res.Output, "xxx\nlast\n") {
		t.Errorf("output of %d bytes: %.40q … %q", len(res.Output), res.Output, res.Output[max(0, len(res.Output)-40):])
	}
	// yes runs until its timeout; its output stays bounded.
	res = timedOut(t, invoke(t, s, "run_command", `{"command":"yes","timeout_s":1}`, &porttest.Recorder{Allow: true}))
	if !res.TimedOut || res.Signal != "killed" || !res.OutputCut || len(res.Output) > workspace.MaxOutputBytes+100 {
		t.Errorf("yes: timedOut %v, signal %q, cut %v, %d bytes kept", res.TimedOut, res.Signal, res.OutputCut, len(res.Output))
	}
}

// timedOut checks that env is a command past its timeout: a tool error
// (docs/SPEC.md §9) saying so, which still holds the command's result.
func timedOut(t *testing.T, env domain.Envelope) commandResult {
	t.Helper()
	var res commandResult
	if env.Success || !strings.Contains(env.Error, "did not finish within its timeout of 1s") {
		t.Errorf("a command past its timeout: success %v, error %q", env.Success, env.Error)
	}
	if err := json.Unmarshal(env.Result, &res); err != nil {
		t.Fatalf("a command past its timeout carries no result (%s): %v", env.Result, err)
	}
	return res
}

// TestRunCommandTimeoutIsAToolError: a command that runs past its timeout
// is a failed call (isError: true), with the output it wrote and
// "timedOut": true in the result — not a success (issue 32).
func TestRunCommandTimeoutIsAToolError(t *testing.T) {
	for _, sandboxed := range []bool{false, true} {
		s, _ := commandSession(t, sandboxed, nil)
		res := timedOut(t, invoke(t, s, "run_command", `{"command":"echo started; sleep 1000","timeout_s":1}`, &porttest.Recorder{Allow: true}))
		if !res.TimedOut || res.Output != "started\n" || res.Signal == "" {
			t.Errorf("sandboxed %v: result %+v", sandboxed, res)
		}
	}
}

// TestRunCommandCancellation: cancelling the call kills the whole group
// at once: the call ends (it would otherwise wait for sleep), and neither
// the shell nor its children survive.
func TestRunCommandCancellation(t *testing.T) {
	s, root := commandSession(t, true, nil)
	ctx, cancel := context.WithCancel(t.Context())
	pids := fifo(t, root, "pids")
	done := make(chan domain.Envelope, 1)
	go func() {
		env, _ := s.InvokeTool(ctx, "run_command", json.RawMessage(`{"command":"sleep 1000 & echo $$ $! > pids; wait"}`), &porttest.Recorder{Allow: true})
		done <- env
	}()
	got := await(t, pids, "the command's process ids")
	cancel()
	env := await(t, done, "the cancelled command")
	fail(t, env, "run_command was cancelled")
	for _, f := range strings.Fields(got) {
		pid, _ := strconv.Atoi(f)
		assertGone(t, pid)
	}
}

// TestRunCommandClose: closing the session kills running commands.
func TestRunCommandClose(t *testing.T) {
	s, root := commandSession(t, false, nil)
	pidc := fifo(t, root, "pid")
	done := make(chan domain.Envelope, 1)
	go func() {
		env, _ := s.InvokeTool(t.Context(), "run_command", json.RawMessage(`{"command":"sleep 1000 & echo $! > pid; wait"}`), &porttest.Recorder{Allow: true})
		done <- env
	}()
	pid := await(t, pidc, "the command's process id")
	s.Close()
	await(t, done, "the command after Close")
	n, _ := strconv.Atoi(strings.TrimSpace(pid))
	assertGone(t, n)
}

// fifo makes a named pipe in dir and returns what is first written to it:
// the command tells the test where it is without the test polling.
func fifo(t *testing.T, dir, name string) <-chan string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 1)
	go func() {
		data, _ := os.ReadFile(p) // blocks until the command opens it, ends when it closes it
		ch <- string(data)
	}()
	return ch
}
