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
		"--model", "scripted", "--model-url", ep.url, "--ephemeral")
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
	cancelSlowSubmit(ctx, t, cs, ep)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "agent_submit", Arguments: map[string]any{"prompt": "after"}})
	if err != nil {
		t.Fatalf("agent_submit after the cancelled one: %v", err)
	}
	if text := singleText(t, "agent_submit", res); res.IsError || text != "still here: after" {
		t.Errorf("agent_submit after the cancelled one = {isError:%v text:%q}", res.IsError, text)
	}
	c.close(t)

	var secrets []string
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
	if len(secrets) == 0 {
		t.Fatal("the client saw no requestState: the approval took no input-required round")
	}
	f, _ := readRecording(t, out, append(secrets, apiKey)...)
	if id := cancelledID(t, c.rec); !slices.Contains(f.Absent, id) {
		t.Errorf("the recording's #absent ids are %q, want the cancelled call's id %s", f.Absent, id)
	}

	checkAgentReplays(t, f, apiKey, "2", "--submit-name", "ask")
}

// readRecording reads and parses the recording at path, which must hold
// none of secrets; it is logged if the test fails.
func readRecording(t *testing.T, path string, secrets ...string) (*transcript.File, []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the recording:\n%s", data)
		}
	})
	for _, s := range secrets {
		if strings.Contains(string(data), s) {
			t.Errorf("the recording holds the secret %q", s)
		}
	}
	f, err := transcript.Parse(path, data)
	if err != nil {
		t.Fatalf("the recording does not parse: %v", err)
	}
	return f, data
}

// checkAgentReplays replays f against "serve stdio --ask-client" with the
// agent on a fresh scripted model endpoint (which holds "slow" until its
// request is cancelled, as when f was recorded), in a fresh workspace:
// green as it is; with change added to the arguments (a changed tools/list,
// answered to changedID), a diff naming that message.
func checkAgentReplays(t *testing.T, f *transcript.File, apiKey, changedID string, change ...string) {
	replay := func(t *testing.T, extra ...string) []string {
		fresh := newWorkspace(t)
		model := newChatEndpoint(t)
		args := append([]string{"serve", "stdio", "--root", fresh.root, "--ask-client", "--model", "scripted", "--model-url", model.url, "--ephemeral"}, extra...)
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
		p := replay(t, change...)
		if want := "message with id " + changedID; len(p) == 0 || !strings.Contains(strings.Join(p, "\n"), want) {
			t.Errorf("replayed against a server changed by %q: %q, want a diff naming id %s (tools/list)", change, p, changedID)
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
	f, _ := readRecording(t, out)
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

// TestTypeScriptSDKAgentRecorded records the TypeScript SDK client (legacy
// 2025-11-25, ts/agent.mjs) through "agentmcp record" in front of the
// reference agent on the scripted model endpoint: tools/list, an
// agent_submit whose write_file the client approves through
// elicitation/create, an agent_submit aborted while the model holds its
// answer (the SDK sends notifications/cancelled), and one served after it.
// The calls carry no progressToken: a held turn's heartbeats would make the
// number of progress notifications depend on time. The recording shows the
// aborted call as "#absent ID" and the approval as an "#answer"; it replays
// green against the same server with its own scripted endpoint, and does
// not hold the API key the server was given.
func TestTypeScriptSDKAgentRecorded(t *testing.T) {
	const apiKey = "sk-interop-ts-record-0123456789abcdef"
	node := tsNode(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	ws := newWorkspace(t)
	ep := newChatEndpoint(t)
	out := filepath.Join(t.TempDir(), "ts-agent.txt")
	run := startAgentScript(ctx, t, node, map[string]any{
		"command": binPath,
		"args": []string{"record", "--out", out, "--", binPath, "serve", "stdio", "--root", ws.root, "--ask-client",
			"--model", "scripted", "--model-url", ep.url, "--ephemeral"},
		"env":  map[string]string{"OPENAI_API_KEY": apiKey},
		"list": true,
		"calls": []map[string]any{
			{"prompt": "Write hello.txt with a greeting.", "answers": []promptAnswer{allowOnce}, "noProgress": true},
			{"prompt": "slow", "cancel": true, "noProgress": true},
			{"prompt": "after", "noProgress": true},
		},
	})
	sawCancel := abortWhenStreaming(ctx, ep, run)
	report := run.wait(t)
	waitFor(t, sawCancel, "the model endpoint to see the aborted turn's request cancelled")
	if len(report.Calls) != 3 {
		t.Fatalf("report: %d calls, want 3", len(report.Calls))
	}
	if c := report.Calls[0]; c.Result == nil || c.Result.IsError || len(c.Result.Content) != 1 || c.Result.Content[0].Text != "I wrote hello.txt." {
		t.Errorf("the approved turn: result %+v, error %v", c.Result, c.Error)
	}
	if c := report.Calls[1]; c.Error == nil {
		t.Errorf("the aborted turn returned %+v", c.Result)
	}
	if c := report.Calls[2]; c.Result == nil || c.Result.IsError || len(c.Result.Content) != 1 || c.Result.Content[0].Text != "still here: after" {
		t.Errorf("the turn after the aborted one: result %+v, error %v", c.Result, c.Error)
	}
	cancelled := checkCancelledUnanswered(t, report)
	if len(cancelled) != 1 {
		t.Fatalf("the client sent notifications/cancelled for %d requests, want 1", len(cancelled))
	}

	f, data := readRecording(t, out, apiKey)
	for id := range cancelled {
		if !slices.Contains(f.Absent, id) {
			t.Errorf("the recording's #absent ids are %q, want the aborted call's id %s", f.Absent, id)
		}
	}
	if !strings.Contains(string(data), "#answer elicitation/create ") {
		t.Error("the recording holds no #answer for the approval's elicitation/create")
	}

	// Another description, not another name: the approval's
	// elicitation/create must still come for the #answer to be sent.
	checkAgentReplays(t, f, apiKey, "1", "--submit-description", "Hand the agent a task")
}
