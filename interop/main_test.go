package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// rootModule is the module path of the repository whose binary is tested.
const rootModule = "github.com/agentmcp/agentmcp"

// binPath is the agentmcp binary built once by TestMain.
var binPath string

// The CLI contract the clients check against.
var (
	// wantTools is the tools/list order: the reference session's runtime
	// tools, then the submission tool last.
	wantTools = []string{"list_dir", "read_file", "search_text", "write_file", "edit_file", "find_files", "agent_submit"}

	wantSubmitDescription = "Submit a prompt to the agent and await its turn"
	wantSubmitSchema      = `{"type":"object","properties":{"prompt":{"type":"string","minLength":1}},"required":["prompt"],"additionalProperties":false}`

	// wantSupportedVersions is server/discover's supportedVersions, newest first.
	wantSupportedVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}
)

const (
	// testTimeout bounds one client conversation, start to exit.
	testTimeout = 2 * time.Minute
	// buildTimeout bounds building the binary (a cold cache under -race is slow).
	buildTimeout = 10 * time.Minute
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	flag.Parse() // for testing.Verbose
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "interop: %v\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "agentmcp-interop-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "interop: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	// The agent's conversation stores of tests without --state-dir stay
	// in the temporary directory, never in the home directory.
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))

	bin := filepath.Join(dir, "agentmcp")
	start := time.Now()
	if err := buildBinary(root, bin); err != nil {
		fmt.Fprintf(os.Stderr, "interop: %v\n", err)
		return 1
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "interop: built %s (race=%v) in %v\n", bin, raceEnabled, time.Since(start).Round(time.Millisecond))
	}
	binPath = bin
	return m.Run()
}

// repoRoot returns the directory of the root module: the parent of this
// module's directory, which go test makes the working directory.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root := filepath.Dir(wd)
	gomod := filepath.Join(root, "go.mod")
	f, err := os.Open(gomod)
	if err != nil {
		return "", fmt.Errorf("finding the repository root: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
			if strings.Trim(fields[1], `"`) != rootModule {
				return "", fmt.Errorf("%s declares module %s, want %s", gomod, fields[1], rootModule)
			}
			return root, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s has no module line", gomod)
}

// buildBinary builds ./app/cmd/agentmcp of the root module into out, with
// -race when these tests run with it.
func buildBinary(root, out string) error {
	goTool, err := exec.LookPath("go") // go test puts its own GOROOT/bin first in PATH
	if err != nil {
		return fmt.Errorf("finding the go command: %w", err)
	}
	args := []string{"build"}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "-o", out, "./app/cmd/agentmcp")

	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, args...)
	cmd.Dir = root
	var output bytes.Buffer
	cmd.Stdout = &output
	cmd.Stderr = &output
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s (in %s): %v\n%s", strings.Join(args, " "), root, err, output.String())
	}
	return nil
}

// workspace is a root directory for the reference session holding one
// known file.
type workspace struct {
	root    string // absolute path of the root directory
	file    string // the file's path relative to root, as a client names it
	content string // the file's exact content
}

func newWorkspace(t *testing.T) workspace {
	t.Helper()
	ws := workspace{
		root:    t.TempDir(),
		file:    "greeting.txt",
		content: "hello from the agentmcp interop tests\nline two: ünïcödé ✓ \"quoted\" \\ backslash\n",
	}
	if err := os.WriteFile(filepath.Join(ws.root, ws.file), []byte(ws.content), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

// serverCommand returns the command serving ws over stdio, with extra
// flags (such as --ask-client) after --root.
func serverCommand(ctx context.Context, ws workspace, extra ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binPath, append([]string{"serve", "stdio", "--root", ws.root}, extra...)...)
	cmd.Env = ws.environ()
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// environ is the server's environment: this process's, with a state
// directory of ws's own (beside its root, removed with it), so parallel
// tests never wait on one another's conversation store (a store busy past
// its 5 s lock timeout fails the start, docs/SPEC.md §9) and a test's
// servers on one workspace share theirs.
func (ws workspace) environ(extra ...string) []string {
	return append(append(os.Environ(), "XDG_STATE_HOME="+ws.root+".state"), extra...)
}

// serverStderr is a buffer for a server's stderr, logged if t fails.
func serverStderr(t *testing.T) *lockedBuffer {
	t.Helper()
	stderr := &lockedBuffer{}
	logStderrOnFailure(t, stderr)
	return stderr
}

// logStderrOnFailure logs what the server wrote to stderr when t fails.
func logStderrOnFailure(t *testing.T, stderr *lockedBuffer) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr.String())
		}
	})
}

// lockedBuffer is a bytes.Buffer safe for the concurrent writes of a
// subprocess's stderr copier and reads by the test.
type lockedBuffer struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	watchers []bufWatch
}

// bufWatch is a watch's text and the channel closed once it is written.
type bufWatch struct {
	text string
	seen chan struct{}
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	b.notice()
	return n, err
}

// watch returns a channel closed once text has been written (a log line
// the test waits for, as an event rather than a sleep).
func (b *lockedBuffer) watch(text string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	w := bufWatch{text, make(chan struct{})}
	b.watchers = append(b.watchers, w)
	b.notice()
	return w.seen
}

// notice closes the channels of the watches whose text is in the buffer.
func (b *lockedBuffer) notice() {
	b.watchers = slices.DeleteFunc(b.watchers, func(w bufWatch) bool {
		if bytes.Contains(b.buf.Bytes(), []byte(w.text)) {
			close(w.seen)
			return true
		}
		return false
	})
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// envelope is the execution envelope a runtime tool's text block holds.
type envelope struct {
	Success  *bool           `json:"success"`
	ToolName string          `json:"toolName"`
	Result   json.RawMessage `json:"result"`
	Error    string          `json:"error"`
}

// checkReadFileEnvelope checks the text of a successful read_file result:
// an execution envelope, success first, whose result carries the file's
// content.
func checkReadFileEnvelope(t *testing.T, text string, ws workspace) {
	t.Helper()
	if !strings.HasPrefix(text, `{"success":`) {
		t.Errorf("read_file text does not start with the envelope's success member: %.300s", text)
	}
	var env envelope
	if err := json.Unmarshal([]byte(text), &env); err != nil {
		t.Fatalf("read_file text is not a JSON envelope: %v: %.300s", err, text)
	}
	if env.Success == nil || !*env.Success {
		t.Fatalf("read_file envelope success = %v, want true (error %q): %.300s", env.Success, env.Error, text)
	}
	if env.ToolName != "read_file" {
		t.Errorf("read_file envelope toolName = %q, want read_file", env.ToolName)
	}
	got, err := fileContent(env.Result)
	if err != nil {
		t.Fatalf("read_file envelope result: %v: %.300s", err, env.Result)
	}
	if got != ws.content {
		t.Errorf("read_file content = %q, want %q", got, ws.content)
	}
}

// fileContent extracts the file's content from read_file's result: either
// the string itself or an object whose "content" member is that string.
func fileContent(result json.RawMessage) (string, error) {
	if len(result) == 0 {
		return "", fmt.Errorf("missing")
	}
	var s string
	if err := json.Unmarshal(result, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(result, &obj); err != nil || obj.Content == nil {
		return "", fmt.Errorf("neither a string nor an object with a string content member")
	}
	return *obj.Content, nil
}

// jsonEqual reports whether a and b hold the same JSON value.
func jsonEqual(a, b []byte) (bool, error) {
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		return false, err
	}
	return reflect.DeepEqual(va, vb), nil
}
