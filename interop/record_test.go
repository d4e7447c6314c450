package interop

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/transcript"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoSDKRecorded records a go-sdk client's session (2026-07-28: list,
// a read, an approved write through an input-required round) through
// "agentmcp record", then replays the recording: green against the server
// it was recorded from, a diff naming the message against a changed one.
// No requestState the client saw is in the file.
func TestGoSDKRecorded(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	ws := newWorkspace(t)
	stderr := serverStderr(t)
	out := filepath.Join(t.TempDir(), "gosdk.txt")
	cmd := exec.CommandContext(ctx, binPath, "record", "--out", out, "--", binPath, "serve", "stdio", "--root", ws.root, "--ask-client")
	cmd.WaitDelay = 10 * time.Second
	cmd.Stderr = stderr
	c := &goSDKCarrier{name: "stdio", rec: &wireRecorder{}}
	c.transport = &recordingTransport{inner: &mcp.CommandTransport{Command: cmd}, wire: c.rec}
	script := &elicitScript{}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentmcp-interop-go-sdk-record", Version: "v1.8.0"},
		&mcp.ClientOptions{ElicitationHandler: script.handle})
	cs := c.connect(ctx, t, client, modernVersion)
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": ws.file}}); err != nil {
		t.Fatalf("read_file: %v", err)
	}
	script.begin([]promptAnswer{allowOnce})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "new.txt", "content": "written"}})
	script.end()
	if err != nil || res.IsError {
		t.Fatalf("write_file, allowed once: %v %+v", err, res)
	}
	c.close(t)

	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the recording:\n%s", data)
		}
	})
	var states []string
	c.rec.mu.Lock()
	for _, r := range c.rec.received {
		var v struct {
			RequestState string `json:"requestState"`
		}
		if json.Unmarshal(r.Result, &v) == nil && v.RequestState != "" {
			states = append(states, v.RequestState)
		}
	}
	c.rec.mu.Unlock()
	if len(states) == 0 {
		t.Fatal("the client saw no requestState: the approval took no input-required round")
	}
	for _, s := range states {
		if strings.Contains(string(data), s) {
			t.Errorf("the recording holds the requestState %q", s)
		}
	}
	f, err := transcript.Parse(out, data)
	if err != nil {
		t.Fatalf("the recording does not parse: %v", err)
	}

	replay := func(t *testing.T, extra ...string) []string {
		fresh := newWorkspace(t)
		args := append([]string{"serve", "stdio", "--root", fresh.root, "--ask-client"}, extra...)
		res, err := transcript.Play(t, transcript.Command{Path: binPath, Args: args}, f, transcript.Options{Timeout: testTimeout})
		if err != nil {
			t.Fatal(err)
		}
		return transcript.Compare(f, res)
	}
	t.Run("same server", func(t *testing.T) {
		if p := replay(t); len(p) != 0 {
			t.Errorf("replayed against the server it was recorded from:\n%s", strings.Join(p, "\n"))
		}
	})
	t.Run("changed server", func(t *testing.T) {
		p := replay(t, "--submit-name", "ask")
		if len(p) == 0 || !strings.Contains(strings.Join(p, "\n"), "message with id 2") {
			t.Errorf("replayed against a server with another submission tool: %q, want a diff naming id 2 (tools/list)", p)
		}
	})
}

// TestTypeScriptSDKRecorded records the TypeScript SDK client's stdio
// scenario (interop.mjs: list, a read, an unknown tool, a refused
// submission) through "agentmcp record" and replays it against the same
// server: green.
func TestTypeScriptSDKRecorded(t *testing.T) {
	node := tsNode(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	ws := newWorkspace(t)
	out := filepath.Join(t.TempDir(), "ts.txt")
	cmd := exec.CommandContext(ctx, node, "interop.mjs", binPath, ws.root, ws.file)
	cmd.Dir = "ts"
	cmd.Env = append(os.Environ(), "AGENTMCP_RECORD_OUT="+out)
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("TypeScript SDK client through agentmcp record: %v\n%s", err, output)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the recording:\n%s", data)
		}
	})
	f, err := transcript.Parse(out, data)
	if err != nil {
		t.Fatalf("the recording does not parse: %v", err)
	}
	if len(f.Server) < 3 {
		t.Fatalf("the recording holds %d server messages, want the whole scenario", len(f.Server))
	}
	fresh := newWorkspace(t)
	res, err := transcript.Play(t, transcript.Command{Path: binPath, Args: []string{"serve", "stdio", "--root", fresh.root}}, f, transcript.Options{Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	if p := transcript.Compare(f, res); len(p) != 0 {
		t.Errorf("replayed against the server it was recorded from:\n%s", strings.Join(p, "\n"))
	}
}
