package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTypeScriptSDKTasks drives agent_submit as a 2025-11-25 experimental
// task (docs/SPEC.md §14) with the official TypeScript SDK client's
// experimental.tasks API over legacy stdio ("serve stdio --ask-client
// --model scripted --model-url <chatEndpoint>", ts/tasks.mjs): the SDK sees
// agent_submit's execution.taskSupport, sends tools/call with params.task,
// gets a task, the model's write_file asks permission through an
// elicitation/create tagged with the task, the client allows it once, and
// the stream ends with the turn's final answer; the file is on disk.
func TestTypeScriptSDKTasks(t *testing.T) {
	t.Parallel()
	node := tsNode(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	ws := newWorkspace(t)
	ep := newChatEndpoint(t)
	cmd, reportPath := tsScenarioCmd(ctx, t, node, "tasks.mjs", map[string]any{
		"command": binPath,
		"args":    []string{"serve", "stdio", "--root", ws.root, "--ask-client", "--model", "scripted", "--model-url", ep.url, "--ephemeral"},
		"prompt":  "Write hello.txt with a greeting.",
		"answers": []promptAnswer{allowOnce},
	})
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("TypeScript SDK tasks client: %v\n%s", err, out.String())
	}
	checkNoDataRace(t, out.Bytes())

	var report struct {
		Messages []struct {
			Type   string                           `json:"type"`
			Task   *struct{ TaskID, Status string } `json:"task"`
			Result *struct {
				Content []struct{ Text string } `json:"content"`
				IsError bool                    `json:"isError"`
			} `json:"result"`
			Error string `json:"error"`
		} `json:"messages"`
		Prompts []json.RawMessage `json:"prompts"`
		Wire    struct {
			Sent     []json.RawMessage `json:"sent"`
			Received []json.RawMessage `json:"received"`
		} `json:"wire"`
		TransportErrors []string `json:"transportErrors"`
	}
	readTSReport(t, reportPath, &report)
	if len(report.TransportErrors) > 0 || len(report.Messages) == 0 {
		t.Fatalf("report: %+v\n%s", report, out.String())
	}
	first, last := report.Messages[0], report.Messages[len(report.Messages)-1]
	if first.Type != "taskCreated" || first.Task == nil || first.Task.TaskID == "" {
		t.Errorf("first stream message: %+v, want taskCreated", first)
	}
	if last.Type != "result" || last.Result == nil || len(last.Result.Content) != 1 || last.Result.Content[0].Text != "I wrote hello.txt." {
		t.Errorf("last stream message: %+v, want the turn's final answer", last)
	}
	if len(report.Prompts) != 1 || !strings.Contains(string(report.Prompts[0]), `\"write_file\"`) ||
		first.Task == nil || !strings.Contains(string(report.Prompts[0]), `"io.modelcontextprotocol/related-task":{"taskId":"`+first.Task.TaskID+`"}`) {
		t.Errorf("elicitations: %s, want write_file's permission prompt tagged with the task", report.Prompts)
	}
	var sawTaskCall, sawTaskMethod bool
	for _, raw := range report.Wire.Sent {
		var m wireMessage
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		sawTaskCall = sawTaskCall || m.Method == "tools/call" && bytes.Contains(m.Params, []byte(`"task":`))
		sawTaskMethod = sawTaskMethod || strings.HasPrefix(m.Method, "tasks/")
	}
	if !sawTaskCall || !sawTaskMethod {
		t.Errorf("the client sent a task-augmented tools/call: %v, a tasks/* request: %v", sawTaskCall, sawTaskMethod)
	}
	if got, err := os.ReadFile(filepath.Join(ws.root, "hello.txt")); err != nil || string(got) != wroteContent {
		t.Errorf("hello.txt = %q, %v; want the agent's approved write", got, err)
	}
}
