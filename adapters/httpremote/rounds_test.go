package httpremote_test

import (
	"encoding/json"
	"testing"
	"time"
)

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`

// writeCall is a modern tools/call of the fake session's write tool, which
// asks permission; extra is added to its params.
func writeCall(id int, extra string) string {
	b, _ := json.Marshal(id)
	return `{"jsonrpc":"2.0","id":` + string(b) + `,"method":"tools/call","params":{` + modernMeta + `,"name":"write","arguments":{"text":"x"}` + extra + `}}`
}

func allowOnce(state string) string {
	return `,"requestState":"` + state + `","inputResponses":{"prompt":{"action":"accept","content":{"decision":"allow_once"}}}`
}

// TestRoundsBoundToPrincipal: with AskClient, an input-required round
// minted for one principal (issuer + subject + client) is resumed by that
// principal only (docs/SPEC.md §6); another subject, or the same subject through
// another client, gets -32602 and the round stays usable.
func TestRoundsBoundToPrincipal(t *testing.T) {
	e := start(t, config{askClient: true})
	exp := e.clock.Now().Add(time.Hour)
	e.verifier.admit("bob-token", "bob", "cli", exp)
	e.verifier.admit("alice-other-client", "alice", "other", exp)
	headers := []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "write"}
	call := func(token, body string) map[string]any {
		t.Helper()
		resp, b := e.do(t, "POST", e.res.path, body, append([]string{"Authorization", "Bearer " + token}, headers...)...)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(b), &m); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		return m
	}
	m := call(validToken, writeCall(1, ""))
	r, _ := m["result"].(map[string]any)
	state, _ := r["requestState"].(string)
	if r["resultType"] != "input_required" || state == "" {
		t.Fatalf("first call: %v, want input_required with a requestState", m)
	}
	for _, other := range []string{"bob-token", "alice-other-client"} {
		m := call(other, writeCall(2, allowOnce(state)))
		e, _ := m["error"].(map[string]any)
		if code, _ := e["code"].(float64); code != -32602 {
			t.Errorf("%s resuming alice's round: %v, want -32602", other, m)
		}
	}
	m = call(validToken, writeCall(3, allowOnce(state)))
	r, _ = m["result"].(map[string]any)
	content, _ := r["content"].([]any)
	if r["resultType"] != "complete" || len(content) != 1 ||
		content[0].(map[string]any)["text"] != `{"success":true,"toolName":"write"}` {
		t.Errorf("alice resuming her round: %v", m)
	}
}
