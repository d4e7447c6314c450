package interop

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/transcript"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoSDKRecorded records a go-sdk client's session at 2026-07-28
// through "agentmcp record", the server running the reference agent against
// the scripted model endpoint (chat_test.go): list, a read, an approved
// write through an input-required round, an agent_submit whose model
// request is held until the client cancels the call (the go-sdk sends
// notifications/cancelled), then an agent_submit that is served. The
// recording shows the cancelled call as "#absent ID"; replayed against the
// server it was recorded from (its own scripted endpoint, holding "slow"
// the same way) it is green, against a changed server it fails with a diff
// naming the message. Neither the API key the server was given nor any
// requestState the client saw is in the file.
func TestGoSDKRecorded(t *testing.T) {
	const apiKey = "sk-interop-record-0123456789abcdef"
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	ws := newWorkspace(t)
	stderr := serverStderr(t)
	ep := newChatEndpoint(t)
	out := filepath.Join(t.TempDir(), "gosdk.txt")
	cmd := exec.CommandContext(ctx, binPath, "record", "--out", out, "--", binPath, "serve", "stdio", "--root", ws.root, "--ask-client",
		"--model", "scripted", "--model-url", ep.url)
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY="+apiKey)
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

	// A call cancelled by the client while the model holds its answer.
	cctx, ccancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "agent_submit", Arguments: map[string]any{"prompt": "slow"}})
		done <- err
	}()
	waitFor(t, ep.streaming, "the slow answer to start streaming")
	ccancel()
	waitFor(t, ep.cancelled, "the model endpoint to see its request cancelled")
	if err := <-done; err == nil {
		t.Error("the cancelled agent_submit returned a result")
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "agent_submit", Arguments: map[string]any{"prompt": "after"}})
	if err != nil {
		t.Fatalf("agent_submit after the cancelled one: %v", err)
	}
	if text := singleText(t, "agent_submit", res); res.IsError || text != "still here: after" {
		t.Errorf("agent_submit after the cancelled one = {isError:%v text:%q}", res.IsError, text)
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
	secrets := []string{apiKey}
	c.rec.mu.Lock()
	for _, r := range c.rec.received {
		var v struct {
			RequestState string `json:"requestState"`
		}
		if json.Unmarshal(r.Result, &v) == nil && v.RequestState != "" {
			secrets = append(secrets, v.RequestState)
		}
	}
	c.rec.mu.Unlock()
	if len(secrets) == 1 {
		t.Fatal("the client saw no requestState: the approval took no input-required round")
	}
	for _, s := range secrets {
		if strings.Contains(string(data), s) {
			t.Errorf("the recording holds the secret %q", s)
		}
	}
	f, err := transcript.Parse(out, data)
	if err != nil {
		t.Fatalf("the recording does not parse: %v", err)
	}
	if id := cancelledID(t, c.rec); !slices.Contains(f.Absent, id) {
		t.Errorf("the recording's #absent ids are %q, want the cancelled call's id %s", f.Absent, id)
	}

	replay := func(t *testing.T, extra ...string) []string {
		fresh := newWorkspace(t)
		model := newChatEndpoint(t)
		args := append([]string{"serve", "stdio", "--root", fresh.root, "--ask-client", "--model", "scripted", "--model-url", model.url}, extra...)
		res, err := transcript.Play(t, transcript.Command{Path: binPath, Args: args, Env: []string{"OPENAI_API_KEY=" + apiKey}}, f, transcript.Options{Timeout: testTimeout})
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

// cancelledID returns the id, as compact JSON, of the one request the
// client sent notifications/cancelled for.
func cancelledID(t *testing.T, rec *wireRecorder) string {
	t.Helper()
	var ids []string
	for _, req := range rec.requests() {
		if req.Method != "notifications/cancelled" {
			continue
		}
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil {
			t.Fatalf("notifications/cancelled params %s: %v", req.Params, err)
		}
		ids = append(ids, string(p.RequestID))
	}
	if len(ids) != 1 {
		t.Fatalf("the client sent notifications/cancelled for %q, want one request", ids)
	}
	return ids[0]
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
