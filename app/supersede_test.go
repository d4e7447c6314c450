package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/internal/chatscript"
)

// The supersede rule (docs/SPEC.md §8, §9) on the real carriers: a
// person who abandons an approval and submits again to the same
// conversation is answered at once; the abandoned turn ends with
// stopped "superseded" (its structured result says so where the client's
// revision carries one) and writes nothing, whatever comes later. These
// use only {prompt}.

// supersedeModel is the scripted endpoint of these tests: "write" asks
// for write_file of x.txt, then answers what the tool said; any other
// prompt is answered "answered: <prompt>".
func supersedeModel(t *testing.T) *chatscript.Server {
	return chatscript.New(t, func(req *chatscript.Request) chatscript.Reply {
		if req.LastUser() != "write" {
			return chatscript.Reply{Text: "answered: " + req.LastUser()}
		}
		for _, m := range req.Messages {
			if m.Role == "tool" {
				return chatscript.Reply{Text: "the write said: " + m.Content}
			}
		}
		return chatscript.Reply{Calls: []chatscript.Call{{ID: "w", Name: "write_file", Arguments: `{"path":"x.txt","content":"x"}`}}}
	})
}

// supersedePatience bounds each wait: far below the 5 minutes an
// abandoned prompt held its conversation before the rule.
const supersedePatience = 10 * time.Second

// wireMsg is what these tests read of a line the server writes.
type wireMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
	line   string
}

// lines reads every line the server writes from now on; roundTrip must
// not be used after it.
func (r *stdioRun) lines() <-chan wireMsg {
	ch := make(chan wireMsg, 64)
	go func() {
		defer close(ch)
		for r.out.Scan() {
			var m wireMsg
			json.Unmarshal(r.out.Bytes(), &m)
			m.line = r.out.Text()
			ch <- m
		}
	}()
	return ch
}

// awaitLine returns the next line that match accepts, keeping the others
// in seen.
func awaitLine(t *testing.T, ch <-chan wireMsg, seen *[]wireMsg, what string, match func(wireMsg) bool) wireMsg {
	t.Helper()
	deadline := time.After(supersedePatience)
	for {
		select {
		case m, ok := <-ch:
			if !ok {
				t.Fatalf("the server ended before %s", what)
			}
			*seen = append(*seen, m)
			if match(m) {
				return m
			}
		case <-deadline:
			t.Fatalf("gave up after %v waiting for %s; lines so far: %v", supersedePatience, what, *seen)
		}
	}
}

func (r *stdioRun) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		t.Fatalf("write: %v (stderr: %s)", err, r.stderr.String())
	}
}

func resultText(t *testing.T, m wireMsg) (string, bool) {
	t.Helper()
	return submitText(t, m.line)
}

func noFile(t *testing.T, root string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, "x.txt")); err == nil {
		t.Error("x.txt was written: the superseded approval must write nothing")
	}
}

// TestSupersedeStdio2025: over stdio at 2025-11-25 the client leaves
// write_file's elicitation/create open and submits again: the new
// submission is answered, the first call ends (its elicitation cancelled)
// saying it stopped for the new prompt, without its write; a late accept
// of the elicitation writes nothing, and the server serves on.
func TestSupersedeStdio2025(t *testing.T) {
	root := t.TempDir()
	model := supersedeModel(t)
	r := serveStdio(t, "--root", root, "--ask-client", "--model", "m", "--model-url", model.URL, "--ephemeral", "--no-model-probe")
	r.roundTrip(t, elicitInit)
	ch := r.lines()
	var seen []wireMsg
	r.send(t, submitLineN(2, "write"))
	ask := awaitLine(t, ch, &seen, "write_file's elicitation/create", func(m wireMsg) bool { return m.Method == "elicitation/create" })

	// The person walks away from the dialog and submits again.
	r.send(t, submitLineN(3, "next"))
	third := awaitLine(t, ch, &seen, "the new submission's answer", func(m wireMsg) bool { return string(m.ID) == "3" && m.Method == "" })
	if text, isErr := resultText(t, third); isErr || text != "answered: next" {
		t.Fatalf("the new submission = %q (error %v), want it answered", text, isErr)
	}
	var first wireMsg
	for _, m := range seen {
		if string(m.ID) == "2" && m.Method == "" {
			first = m
		}
	}
	if first.line == "" {
		first = awaitLine(t, ch, &seen, "the first call's answer", func(m wireMsg) bool { return string(m.ID) == "2" && m.Method == "" })
	}
	text, isErr := resultText(t, first)
	if isErr || !strings.Contains(text, "a new prompt came for this conversation while write_file awaited approval") {
		t.Errorf("the first call = %q (error %v), want it stopped by the new prompt", text, isErr)
	}
	// Its structured result says so; the new turn's finished (docs/SPEC.md §9).
	if !strings.Contains(first.line, `"structuredContent":{"response":`) || !strings.Contains(first.line, `"conversation":"default","turn":1,`) ||
		!strings.Contains(first.line, `"tool_calls":[{"name":"write_file","ok":false}]`) || !strings.Contains(first.line, `"stopped":"superseded"`) {
		t.Errorf("the first call's structured result: %s, want turn 1 stopped superseded with write_file failed", first.line)
	}
	if !strings.Contains(third.line, `"conversation":"default","turn":2,`) || strings.Contains(third.line, `"stopped"`) {
		t.Errorf("the new submission's structured result: %s, want turn 2, finished", third.line)
	}
	cancelled := false
	for _, m := range seen {
		cancelled = cancelled || (m.Method == "notifications/cancelled" && string(m.Params.RequestID) == string(ask.ID))
	}
	if !cancelled {
		t.Errorf("no notifications/cancelled for the elicitation %s: %v", ask.ID, seen)
	}
	noFile(t, root)

	// A late answer to the withdrawn dialog writes nothing.
	r.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"decision":"allow_once"}}}`, ask.ID))
	r.send(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_dir","arguments":{"path":"."}}}`)
	listed := awaitLine(t, ch, &seen, "list_dir's answer", func(m wireMsg) bool { return string(m.ID) == "4" })
	if strings.Contains(listed.line, "x.txt") || strings.Contains(listed.line, `"isError":true`) {
		t.Errorf("after the late answer: %s", listed.line)
	}
	noFile(t, root)
}

// modern is the _meta of a 2026-07-28 request whose client answers forms;
// with tasks, it also declares the tasks extension.
func modern(tasks bool) string {
	ext := ""
	if tasks {
		ext = `,"extensions":{"io.modelcontextprotocol/tasks":{}}`
	}
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}` + ext + `}}`
}

// roundResult is what these tests read of a 2026-07-28 result.
type roundResult struct {
	ResultType    string                     `json:"resultType"`
	RequestState  string                     `json:"requestState"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	TaskID        string                     `json:"taskId"`
	Status        string                     `json:"status"`
	IsError       bool                       `json:"isError"`
	Content       []struct {
		Text string `json:"text"`
	} `json:"content"`
	Result *struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
}

func decodeRound(t *testing.T, body []byte) roundResult {
	t.Helper()
	var resp struct {
		Result roundResult `json:"result"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatalf("answer %s: %v", body, err)
	}
	return resp.Result
}

// TestSupersedeHTTP2026: over the loopback host at 2026-07-28 the client
// abandons agent_submit's input_required round and submits again: the
// new submission is answered at once; the abandoned round's later retry,
// its approval given, gets the first turn's response, stopped by the new
// prompt, and writes nothing.
func TestSupersedeHTTP2026(t *testing.T) {
	root := t.TempDir()
	model := supersedeModel(t)
	tokenPath := filepath.Join(t.TempDir(), "token")
	r := serveHTTP(t, "--root", root, "--token-file", tokenPath, "--ask-client", "--model", "m", "--model-url", model.URL, "--ephemeral", "--no-model-probe")
	tok, err := os.ReadFile(tokenPath)
	if err != nil {
		t.Fatalf("token: %v (stderr %s)", err, r.stderr)
	}
	post := func(body string) roundResult {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "POST", r.url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+string(tok))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", "agent_submit")
		client := &http.Client{Timeout: supersedePatience}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("POST: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return decodeRound(t, b)
	}
	call := func(id int, prompt, extra string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":%q}%s,%s}}`, id, prompt, extra, modern(false))
	}
	first := post(call(1, "write", ""))
	if first.ResultType != "input_required" || first.RequestState == "" || len(first.InputRequests) != 1 {
		t.Fatalf("the first call = %+v, want input_required for write_file's approval", first)
	}
	// The client abandons the round and submits again.
	next := post(call(2, "next", ""))
	if next.ResultType != "complete" || next.IsError || len(next.Content) != 1 || next.Content[0].Text != "answered: next" {
		t.Fatalf("the new submission = %+v, want it answered", next)
	}
	var key string
	for k := range first.InputRequests {
		key = k
	}
	late := post(call(3, "write", fmt.Sprintf(`,"requestState":%q,"inputResponses":{%q:{"action":"accept","content":{"decision":"allow_once"}}}`, first.RequestState, key)))
	if late.ResultType != "complete" || len(late.Content) != 1 ||
		!strings.Contains(late.Content[0].Text, "a new prompt came for this conversation while write_file awaited approval") {
		t.Errorf("the abandoned round's retry = %+v, want the superseded turn's response", late)
	}
	noFile(t, root)
}

// TestSupersedeTask: a task left in input_required (its approval
// unanswered) and a new submission of the same conversation: the new
// submission is answered, the task completes with the first turn's
// response, stopped by the new prompt, and nothing is written, not even
// by a late tasks/update answering the withdrawn input.
func TestSupersedeTask(t *testing.T) {
	root := t.TempDir()
	model := supersedeModel(t)
	r := serveStdio(t, "--root", root, "--ask-client", "--model", "m", "--model-url", model.URL, "--ephemeral", "--no-model-probe")
	call := func(id int, method, params string, tasks bool) roundResult {
		t.Helper()
		return decodeRound(t, []byte(r.roundTrip(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s,%s}}`, id, method, params, modern(tasks)))))
	}
	created := call(1, "tools/call", `"name":"agent_submit","arguments":{"prompt":"write"}`, true)
	if created.ResultType != "task" || created.TaskID == "" {
		t.Fatalf("agent_submit = %+v, want a task", created)
	}
	id := 2
	get := func() roundResult {
		id++
		return call(id, "tasks/get", fmt.Sprintf(`"taskId":%q`, created.TaskID), true)
	}
	// Poll as a client does, until the task asks for the approval.
	var g roundResult
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(supersedePatience); ; <-tick.C {
		if g = get(); g.Status == "input_required" || time.Now().After(deadline) {
			break
		}
	}
	if g.Status != "input_required" || len(g.InputRequests) != 1 {
		t.Fatalf("tasks/get = %+v, want input_required for write_file's approval", g)
	}
	var key string
	for k := range g.InputRequests {
		key = k
	}

	id++
	next := call(id, "tools/call", `"name":"agent_submit","arguments":{"prompt":"next"}`, false)
	if next.ResultType != "complete" || next.IsError || len(next.Content) != 1 || next.Content[0].Text != "answered: next" {
		t.Fatalf("the new submission = %+v, want it answered", next)
	}
	var done roundResult
	for deadline := time.Now().Add(supersedePatience); ; <-tick.C {
		if done = get(); done.Status != "input_required" && done.Status != "working" || time.Now().After(deadline) {
			break
		}
	}
	if done.Status != "completed" || done.Result == nil || done.Result.IsError || len(done.Result.Content) != 1 ||
		!strings.Contains(done.Result.Content[0].Text, "a new prompt came for this conversation while write_file awaited approval") {
		t.Errorf("the task = %+v, want it completed with the superseded turn's response", done)
	}
	id++
	call(id, "tasks/update", fmt.Sprintf(`"taskId":%q,"inputResponses":{%q:{"action":"accept","content":{"decision":"allow_once"}}}`, created.TaskID, key), true)
	noFile(t, root)
}
