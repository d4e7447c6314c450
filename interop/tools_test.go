package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolsEndpoint is a scripted Chat Completions endpoint for the tools
// scenario: it answers the prompt with an edit_file call, its result with
// a find_files call, that one's result with a run_command call, and the
// last result with "done", each streamed as a tool call in two pieces.
type toolsEndpoint struct {
	url     string
	command string

	mu       sync.Mutex
	requests []chatRequest
}

func newToolsEndpoint(t *testing.T, command string) *toolsEndpoint {
	t.Helper()
	e := &toolsEndpoint{command: command}
	srv := httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(srv.Close)
	e.url = srv.URL + "/v1"
	return e
}

func (e *toolsEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req chatRequest
	if err != nil || json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
		http.Error(w, `{"error":{"message":"not a chat completion request"}}`, http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.requests = append(e.requests, req)
	e.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(delta map[string]any, finish any) {
		b, _ := json.Marshal(map[string]any{"object": "chat.completion.chunk",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	call := func(id, name string, args any) {
		raw, _ := json.Marshal(args)
		send(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": id, "type": "function",
			"function": map[string]any{"name": name, "arguments": string(raw[:len(raw)/2])}}}}, nil)
		send(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": string(raw[len(raw)/2:])}}}}, nil)
		send(map[string]any{}, "tool_calls")
	}
	switch last := req.Messages[len(req.Messages)-1]; {
	case last.Role == "user":
		call("call_edit", "edit_file", map[string]any{"path": "big.txt", "old_text": "line 05000\n", "new_text": "line five thousand\n"})
	case last.ToolCallID == "call_edit":
		call("call_find", "find_files", map[string]any{"pattern": "**/*.go"})
	case last.ToolCallID == "call_find":
		call("call_run", "run_command", map[string]any{"command": e.command, "timeout_s": 60})
	default:
		send(map[string]any{"role": "assistant", "content": "done"}, nil)
		send(map[string]any{}, "stop")
	}
	io.WriteString(w, "data: [DONE]\n\n")
}

// toolResults returns the tool results of the last request, by call id.
func (e *toolsEndpoint) toolResults() map[string]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]string{}
	if len(e.requests) == 0 {
		return out
	}
	for _, m := range e.requests[len(e.requests)-1].Messages {
		if m.Role == "tool" {
			out[m.ToolCallID] = m.Content
		}
	}
	return out
}

// TestGoSDKAgentTools drives the agent's new tools through the official Go
// SDK client over legacy stdio, against the built binary ("serve stdio
// --ask-client --allow-commands --model scripted"), with the person's two
// approvals given in the client's elicitation handler: the model edits one
// line of a 10,000-line file (the dialog shows the diff), finds files by a
// ** pattern (.gitignore honoured), and runs a checker (gofmt -l, and a
// write outside the workspace that the default sandbox, bubblewrap with
// Landlock inside, refuses) whose
// output it reads. OPENAI_API_KEY never reaches the command.
func TestGoSDKAgentTools(t *testing.T) {
	t.Parallel()
	if !landlockAvailable() {
		t.Skip("the kernel offers no Landlock")
	}
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	ws := newWorkspace(t)
	var big strings.Builder
	for i := 1; i <= 10000; i++ {
		fmt.Fprintf(&big, "line %05d\n", i)
	}
	outside := t.TempDir()
	for name, content := range map[string]string{
		"big.txt":        big.String(),
		"main.go":        "package main\n\nfunc main() {}\n",
		"pkg/sub/bad.go": "package sub\nfunc  Bad( ) {}\n",
		"gen/x.go":       "package gen\n",
		".gitignore":     "gen/\n",
	} {
		p := filepath.Join(ws.root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	escape := filepath.Join(outside, "escaped")
	command := "gofmt -l .; echo \"key=[$OPENAI_API_KEY]\"; touch " + escape + " || echo refused by the sandbox"
	ep := newToolsEndpoint(t, command)
	stderr := serverStderr(t)
	// The server runs with a key in its environment (not t.Setenv: the
	// test is parallel).
	cmd := serverCommand(ctx, ws, "--ask-client", "--allow-commands", "--model", "scripted", "--model-url", ep.url)
	cmd.Env, cmd.Stderr = ws.environ("OPENAI_API_KEY=sk-interop-FAKE-0123456789"), stderr
	c := &goSDKCarrier{name: "stdio", rec: &wireRecorder{}}
	c.transport = &recordingTransport{inner: &mcp.CommandTransport{Command: cmd}, wire: c.rec}
	script := &elicitScript{}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentmcp-interop-go-sdk-tools", Version: "v1.8.0"}, &mcp.ClientOptions{ElicitationHandler: script.handle})
	cs := c.connect(ctx, t, client, "2025-11-25")

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if want := "list_dir read_file search_text write_file edit_file find_files run_command agent_submit"; strings.Join(names, " ") != want {
		t.Errorf("tools %q, want %s", names, want)
	}

	script.begin([]promptAnswer{allowOnce, allowOnce})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "agent_submit", Arguments: map[string]any{"prompt": "Fix line 5000, list the Go files, check formatting."}})
	prompts := script.end()
	if err != nil {
		t.Fatalf("agent_submit: %v", err)
	}
	if text := singleText(t, "agent_submit", res); res.IsError || text != "done" {
		t.Fatalf("agent_submit = {isError:%v text:%q}", res.IsError, text)
	}
	if len(prompts) != 2 {
		t.Fatalf("the client's handler saw %d prompts, want 2 (edit_file, run_command)", len(prompts))
	}
	var dialogs [2]struct{ Message string }
	for i := range dialogs {
		json.Unmarshal(prompts[i].Params, &dialogs[i])
	}
	for _, want := range []string{`the tool "edit_file"`, `"-line 05000"`, `"+line five thousand"`} {
		if !strings.Contains(dialogs[0].Message, want) {
			t.Errorf("edit_file's dialog lacks %s:\n%s", want, dialogs[0].Message)
		}
	}
	for _, want := range []string{`the tool "run_command"`, fmt.Sprintf("%q", command), fmt.Sprintf("%q", ws.root), "sandboxed"} {
		if !strings.Contains(dialogs[1].Message, want) {
			t.Errorf("run_command's dialog lacks %s:\n%s", want, dialogs[1].Message)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(ws.root, "big.txt")); string(got) != strings.Replace(big.String(), "line 05000\n", "line five thousand\n", 1) {
		t.Error("big.txt is not the original with one line changed")
	}
	results := ep.toolResults()
	for id, wants := range map[string][]string{
		"call_edit": {`"success":true`, `"replacements":1`},
		"call_find": {`"files":["main.go","pkg/sub/bad.go"]`, `"ignored":1`},
		"call_run":  {`"exitCode":0`, `pkg/sub/bad.go\n`, `key=[]`, `refused by the sandbox`, `"sandboxed":true`, `"sandbox":"bubblewrap"`},
	} {
		for _, want := range wants {
			if !strings.Contains(results[id], want) {
				t.Errorf("the model read %s's result without %s: %s", id, want, results[id])
			}
		}
	}
	if _, err := os.Stat(escape); err == nil {
		t.Error("the command wrote outside the workspace")
	}
	if strings.Contains(stderr.String(), "FAKE") {
		t.Error("the server's log shows the key")
	}
	c.close(t)
}

// landlockAvailable reports whether the binary's sandbox launcher can
// restrict itself here: it runs /bin/true through it (the launcher exits
// 126 where the kernel offers no Landlock). The hidden first argument is
// adapters/landlock's LauncherArg; this module cannot import the root
// module's packages.
func landlockAvailable() bool {
	return exec.Command(binPath, "__agentmcp-landlock-exec", os.TempDir(), "--", "/bin/true").Run() == nil
}
