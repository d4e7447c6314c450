package httploopback_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/httploopback"
	"github.com/agentmcp/agentmcp/internal/fake"
)

// TestTaskOutlivesItsConnection (docs/SPEC.md §14): a turn started as a task
// over one TCP connection, which the client then kills mid-turn, still
// completes; a new connection waits for it (2025-11-25 tasks/result) and a
// third reads it with the extension's tasks/get.
func TestTaskOutlivesItsConnection(t *testing.T) {
	s := fake.New()
	ended := s.Ended()
	e := start(t, s, httploopback.Limits{})

	create := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"slow"},"task":{}}}`)
	c := dial(t, e.addr)
	c.send(t, e.head(len(create), "MCP-Protocol-Version: 2025-11-25"), create)
	resp, b := c.response(t)
	var created struct {
		Result struct {
			Task struct {
				TaskID string `json:"taskId"`
				Status string `json:"status"`
			} `json:"task"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &created); err != nil || resp.StatusCode != 200 || created.Result.Task.Status != "working" {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	id := created.Result.Task.TaskID
	c.Close() // the creating connection dies mid-turn

	got := make(chan []byte, 1)
	go func() {
		req := e.request(t.Context(), `{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"`+id+`"}}`, "MCP-Protocol-Version", "2025-11-25")
		r, err := e.client.Do(req)
		if err != nil {
			got <- []byte(err.Error())
			return
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		got <- b
	}()
	s.Release() // the turn ends after its connection did
	if name := <-ended; name != "submit" {
		t.Fatalf("ended %q", name)
	}
	if b := <-got; !strings.Contains(string(b), `"io.modelcontextprotocol/related-task":{"taskId":"`+id+`"}`) || !strings.Contains(string(b), `"content":[`) {
		t.Fatalf("tasks/result on a new connection: %s", b)
	}

	e.client.Transport.(*http.Transport).CloseIdleConnections() // a third connection
	_, b = e.post(t, `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"`+id+`","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`,
		modernHeaders("tasks/get", id)...)
	if !strings.Contains(string(b), `"status":"completed"`) {
		t.Errorf("tasks/get (2026-07-28) of the task: %s", b)
	}
}
