package app_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/agentmcp/agentmcp/internal/chatscript"
)

// taskCallLine is a 2026-07-28 agent_submit that declares the tasks
// extension: a task when a bound leaves room (docs/SPEC.md §14).
func taskCallLine(id int) string {
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"take your time"},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`
}

// taskAnswer is what the tests read of a tools/call answer: a
// CreateTaskResult or a CallToolResult.
type taskAnswer struct {
	Result struct {
		ResultType     string `json:"resultType"`
		Status         string `json:"status"`
		TTLMs          int64  `json:"ttlMs"`
		PollIntervalMs int64  `json:"pollIntervalMs"`
		IsError        bool   `json:"isError"`
		Content        []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
}

// TestServeTaskFlags: the task flags reach the engine. Over serve stdio, with
// a model that never answers (so the first task keeps running), the first
// call is a task carrying --task-ttl and --task-poll-interval as ttlMs and
// pollIntervalMs; the second, concurrent, is refused with the bound's tool
// error under --max-tasks-per-client 1 and --max-tasks 1, and is a task
// under the defaults.
func TestServeTaskFlags(t *testing.T) {
	for _, c := range []struct {
		name      string
		args      []string
		ttl, poll int64
		refusal   string // the second call's tool error; "" means it is a task
	}{
		{"defaults", nil, 3_600_000, 2000, ""},
		{"per client", []string{"--max-tasks-per-client", "1", "--task-ttl", "90s", "--task-poll-interval", "250ms"}, 90_000, 250,
			"too many tasks running for this client; wait for one to end or cancel one"},
		{"held", []string{"--max-tasks", "1"}, 3_600_000, 2000, "the server holds too many tasks; try again later"},
	} {
		t.Run(c.name, func(t *testing.T) {
			model := chatscript.New(t, func(*chatscript.Request) chatscript.Reply {
				return chatscript.Reply{Text: "never finished", Mid: func(ctx context.Context) { <-ctx.Done() }}
			})
			args := append([]string{"--root", t.TempDir(), "--model", "m", "--model-url", model.URL, "--ephemeral", "--no-model-probe"}, c.args...)
			r := serveStdio(t, args...)
			var first taskAnswer
			if line := r.roundTrip(t, taskCallLine(1)); json.Unmarshal([]byte(line), &first) != nil || first.Result.ResultType != "task" {
				t.Fatalf("first call: %s", line)
			}
			if first.Result.TTLMs != c.ttl || first.Result.PollIntervalMs != c.poll {
				t.Errorf("ttlMs %d, pollIntervalMs %d; want %d, %d", first.Result.TTLMs, first.Result.PollIntervalMs, c.ttl, c.poll)
			}
			line := r.roundTrip(t, taskCallLine(2))
			var second taskAnswer
			if err := json.Unmarshal([]byte(line), &second); err != nil {
				t.Fatalf("second call: %s", line)
			}
			switch {
			case c.refusal == "" && second.Result.ResultType != "task":
				t.Errorf("second call: %s, want a task", line)
			case c.refusal != "" && (!second.Result.IsError || len(second.Result.Content) != 1 || second.Result.Content[0].Text != c.refusal):
				t.Errorf("second call: %s, want the tool error %q", line, c.refusal)
			}
		})
	}
}
