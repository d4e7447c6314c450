package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/internal/pgtest"
)

// mcpPost sends one request to a loopback host with the token and, for a
// 2026-07-28 request, the headers that mirror it (Mcp-Name: name); a
// legacy one names its revision in MCP-Protocol-Version.
func mcpPost(t *testing.T, url, token, version, method, name, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("MCP-Protocol-Version", version)
	if version == "2026-07-28" {
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %s", method, resp.StatusCode, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %s: %v", method, b, err)
	}
	r, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("%s: no result in %s", method, b)
	}
	return r
}

// metric is the sum of the samples of name whose labels contain every
// one of labels, scraped from addr's /metrics.
func metric(t *testing.T, addr, name string, labels ...string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	sample := regexp.MustCompile(`(?m)^` + name + `(\{[^}]*\})? (\S+)$`)
	var sum float64
	for _, m := range sample.FindAllStringSubmatch(string(b), -1) {
		all := true
		for _, l := range labels {
			all = all && strings.Contains(m[1], l)
		}
		if v, err := strconv.ParseFloat(m[2], 64); err == nil && all {
			sum += v
		}
	}
	return sum
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`

// TestLoopbackReplicasMetrics: two serve http replicas on one persistent
// token and one PostgreSQL store share tasks and rounds, and each counts
// only what it served: a turn run on A moves A's turn counter, not B's; a
// tasks/result served by B is B's request; the round parked on A is A's
// gauge and nobody else's, also once B took its retry — nothing the store
// holds is counted by two replicas.
func TestLoopbackReplicasMetrics(t *testing.T) {
	c := pgtest.Start(t)
	url := c.URL(c.CreateDatabase(t))
	t.Setenv("PGPASSWORD", c.Password)
	srv := chatscript.New(t, func(req *chatscript.Request) chatscript.Reply {
		return chatscript.Reply{Text: "answered " + req.LastUser()}
	})
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	tokenPath := filepath.Join(t.TempDir(), "token")
	metricsA, metricsB := freePort(t), freePort(t)
	replica := func(metrics string) *run {
		t.Setenv("OPENAI_API_KEY", "sk-test")
		r := serveHTTP(t, "--root", root, "--token-file", tokenPath, "--persistent-token", "--ask-client",
			"--model", "m", "--model-url", srv.URL, "--no-model-probe", "--store", url, "--metrics-listen", metrics)
		if r.url == "" {
			t.Fatalf("not served; stderr:\n%s", r.stderr)
		}
		return r
	}
	a, b := replica(metricsA), replica(metricsB)
	tok, _ := os.ReadFile(tokenPath)
	token := string(tok)

	created := mcpPost(t, a.url, token, "2025-11-25", "tools/call", "",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"hi"},"task":{}}}`)
	id := created["task"].(map[string]any)["taskId"].(string)
	got := mcpPost(t, b.url, token, "2025-11-25", "tasks/result", "",
		`{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"`+id+`"}}`)
	if text := got["content"].([]any)[0].(map[string]any)["text"]; text != "answered hi" {
		t.Fatalf("tasks/result on B of A's task: %v", got)
	}
	if n, m := metric(t, metricsA, "agentmcp_turns_total"), metric(t, metricsB, "agentmcp_turns_total"); n != 1 || m != 0 {
		t.Errorf("agentmcp_turns_total: A %v, B %v; want the turn on A only", n, m)
	}
	const results = "mcp_server_operation_duration_seconds_count"
	if n, m := metric(t, metricsA, results, `mcp_method_name="tasks/result"`), metric(t, metricsB, results, `mcp_method_name="tasks/result"`); n != 0 || m != 1 {
		t.Errorf("tasks/result requests: A %v, B %v; want B's only", n, m)
	}

	parked := mcpPost(t, a.url, token, "2026-07-28", "tools/call", "write_file",
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"x.txt","content":"x"},`+modernMeta+`}}`)
	if parked["resultType"] != "input_required" {
		t.Fatalf("write_file on A: %v", parked)
	}
	if n, m := metric(t, metricsA, "agentmcp_rounds_parked"), metric(t, metricsB, "agentmcp_rounds_parked"); n != 1 || m != 0 {
		t.Errorf("agentmcp_rounds_parked: A %v, B %v; want A's round on A only", n, m)
	}
	done := mcpPost(t, b.url, token, "2026-07-28", "tools/call", "write_file",
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"x.txt","content":"x"},"requestState":"`+
			parked["requestState"].(string)+`","inputResponses":{"prompt":{"action":"accept","content":{"decision":"deny"}}},`+modernMeta+`}}`)
	if done["resultType"] != "complete" || done["isError"] != true {
		t.Errorf("the denied retry on B: %v", done)
	}
	if n, m := metric(t, metricsA, "agentmcp_rounds_parked"), metric(t, metricsB, "agentmcp_rounds_parked"); n != 0 || m != 0 {
		t.Errorf("agentmcp_rounds_parked once B took the retry: A %v, B %v; want none", n, m)
	}
	if _, err := os.Stat(filepath.Join(root, "x.txt")); err == nil {
		t.Error("the denied write happened")
	}
}
