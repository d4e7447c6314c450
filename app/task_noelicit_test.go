package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTaskWithoutElicitationSettlesClosed: a 2026-07-28 client that
// declares the tasks extension and no elicitation (the Inspector CLI in
// modern mode) starts an agent_submit task whose turn asks to write a file.
// Nobody can answer it, so the prompt settles closed at once (docs/SPEC.md
// §14 "Input"): the task never goes input_required, the write is denied,
// the task completes, and the next agent_submit is served — on every
// carrier (issue 30, N1: the task asked through an input request nobody
// could see, and the conversation stayed busy until --approval-timeout).
func TestTaskWithoutElicitationSettlesClosed(t *testing.T) {
	const tasksOnly = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	for _, carrier := range []string{"stdio", "unix", "http"} {
		t.Run(carrier, func(t *testing.T) {
			root := t.TempDir()
			model := writingModel(t)
			c := serveOver(t, carrier, "--root", root, "--ask-client", "--model", "m", "--model-url", model.URL, "--ephemeral", "--no-model-probe")
			created := c.do(modernCall(1, "tools/call", `"name":"agent_submit","arguments":{"prompt":"write x.txt"}`, tasksOnly), 1, "tools/call", "agent_submit")
			r, _ := created["result"].(map[string]any)
			id, _ := r["taskId"].(string)
			if r["resultType"] != "task" || id == "" {
				t.Fatalf("the call = %v, want a task", created)
			}
			// Poll as the client would; the guard only bounds a hang.
			guard := time.Now().Add(30 * time.Second)
			var got map[string]any
			for n := 2; ; n++ {
				g := c.do(modernCall(n, "tasks/get", `"taskId":"`+id+`"`, tasksOnly), n, "tasks/get", id)
				got, _ = g["result"].(map[string]any)
				status, _ := got["status"].(string)
				if status == "input_required" {
					t.Fatalf("the task went input_required, asking a client that declared no elicitation: %v", got)
				}
				if status != "working" {
					break
				}
				if time.Now().After(guard) {
					t.Fatalf("the task still runs after 30 s: %v", got)
				}
			}
			text := ""
			if res, ok := got["result"].(map[string]any); ok {
				if content, ok := res["content"].([]any); ok && len(content) == 1 {
					text, _ = content[0].(map[string]any)["text"].(string)
				}
			}
			if got["status"] != "completed" || !strings.Contains(text, "Permission denied") {
				t.Errorf("the task = %v, want completed with the write denied", got)
			}
			if _, err := os.Stat(filepath.Join(root, "x.txt")); err == nil {
				t.Error("the unapproved write landed")
			}
			next := c.do(modernCall(100, "tools/call", `"name":"agent_submit","arguments":{"prompt":"hello"}`, `{}`), 100, "tools/call", "agent_submit")
			if text, _ := submitTextOf(next); text != "served: hello" {
				t.Errorf("the next agent_submit = %v, want it served", next)
			}
		})
	}
}

// submitTextOf is a tools/call answer's one text block and whether it is a
// result at all.
func submitTextOf(m map[string]any) (string, bool) {
	r, ok := m["result"].(map[string]any)
	if !ok {
		return "", false
	}
	content, _ := r["content"].([]any)
	if len(content) != 1 {
		return "", false
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	return text, true
}
