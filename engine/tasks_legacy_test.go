package engine_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/ports"
)

// Experimental tasks on 2025-11-25 (docs/SPEC.md §14, SEP-1686): the
// client's TTL, the tool-level negotiation's errors, tasks/list, and a
// stream's progress and status notifications. Each test runs in a synctest
// bubble: synctest.Wait is where every task's goroutine has finished or
// blocked.

// legacyExchange sends one 2025-11-25 request over Exchange as who.
func legacyExchange(e *engine.Engine, who ports.Principal, version string, id int, method, params string) map[string]any {
	body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"` + method + `","params":{` + params + `}}`
	h := engine.Headers{ProtocolVersion: version, HasProtocolVersion: true}
	r := e.Exchange(context.Background(), []byte(body), engine.ExchangeOptions{Headers: h, Principal: who})
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		panic("not JSON: " + string(r.Body))
	}
	return m
}

// legacyTaskOf returns the Task of a CreateTaskResult ({"task":{…}}).
func legacyTaskOf(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	task, ok := result(t, m)["task"].(map[string]any)
	if !ok || task["status"] != "working" {
		t.Fatalf("CreateTaskResult = %v, want a working task", m)
	}
	return task
}

func TestLegacyTaskTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s := taskEngine(t, engine.Options{Tasks: engine.TaskOptions{TTL: 10 * time.Minute}})
		call := func(id int, task string) map[string]any {
			return legacyExchange(e, alice, "2025-11-25", id, "tools/call", `"name":"agent_submit","arguments":{"prompt":"hi"},"task":`+task)
		}
		for i, c := range []struct {
			task string
			want float64
		}{
			{`{"ttl":60000}`, 60000},
			{`{"ttl":60000.9}`, 60000},
			{`{}`, 600000},              // absent: the engine's
			{`{"ttl":null}`, 600000},    // null: absent
			{`{"ttl":1}`, 10000},        // the minimum
			{`{"ttl":0}`, 10000},        // likewise
			{`{"ttl":1e300}`, 600000},   // the engine's bound
			{`{"ttl":3600000}`, 600000}, // likewise
			{`{"ttl":1e400}`, 600000},   // beyond float64, still a JSON number
			{`{"ttl":1e-400}`, 10000},   // below float64's smallest: the minimum
		} {
			task := legacyTaskOf(t, call(i+1, c.task))
			synctest.Wait() // its turn ends: 8 running is the client's bound
			if task["ttl"] != c.want {
				t.Errorf("task %s: ttl %v, want %v", c.task, task["ttl"], c.want)
			}
		}
		for i, bad := range []string{`{"ttl":-1}`, `{"ttl":-1e400}`, `{"ttl":"60000"}`, `{"ttl":true}`, `{"ttl":{}}`, `5`, `"x"`, `[]`, `{"ttl":1,"ttl":2}`} {
			m := call(20+i, bad)
			if errorCode(m) != -32602 {
				t.Errorf("task %s: %v, want -32602", bad, m)
			}
		}
		synctest.Wait()
		if n := len(s.Calls()); n != 10 {
			t.Errorf("session calls = %d, want 10 (none for a refused task)", n)
		}
		// The TTL in force is the task's own: a 60 s task is forgotten
		// after 60 s; a default one is still kept.
		short := legacyTaskOf(t, call(40, `{"ttl":60000}`))["taskId"].(string)
		long := legacyTaskOf(t, call(41, `{}`))["taskId"].(string)
		synctest.Wait()
		get := func(id int, taskID string) map[string]any {
			return legacyExchange(e, alice, "2025-11-25", id, "tasks/get", `"taskId":"`+taskID+`"`)
		}
		if g := result(t, get(42, short)); g["status"] != "completed" || g["ttl"] != 60000.0 {
			t.Fatalf("tasks/get = %v", g)
		}
		time.Sleep(time.Minute) // the bubble's clock
		if m := get(43, short); errorCode(m) != -32602 {
			t.Errorf("after its TTL: %v, want -32602", m)
		}
		if g := result(t, get(44, long)); g["status"] != "completed" {
			t.Errorf("a default-TTL task after a minute: %v", g)
		}
	})
}

// requiredEngine serves the fake with one more tool, job, whose tasks are
// required.
func requiredEngine(t *testing.T) (*engine.Engine, *fake.Session) {
	s := fake.New()
	tools, _ := s.RuntimeTools(context.Background())
	s.SetTools(append(tools, domain.Tool{Name: "job", InputSchema: json.RawMessage(`{"type":"object"}`), TaskSupport: domain.TaskRequired}))
	e, err := engine.New(s, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(t, e) })
	return e, s
}

func TestLegacyTaskToolLevelNegotiation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s := requiredEngine(t)
		call := func(version string, id int, params string) map[string]any {
			return legacyExchange(e, alice, version, id, "tools/call", params)
		}
		m := call("2025-11-25", 1, `"name":"echo","arguments":{},"task":{}`)
		if errorCode(m) != -32601 || !strings.Contains(m["error"].(map[string]any)["message"].(string), `"echo" does not support tasks`) {
			t.Errorf("params.task on a tool that forbids tasks: %v, want -32601", m)
		}
		m = call("2025-11-25", 2, `"name":"job","arguments":{}`)
		if errorCode(m) != -32601 || !strings.Contains(m["error"].(map[string]any)["message"].(string), `"job" requires a task`) {
			t.Errorf("a plain call of a tool that requires tasks: %v, want -32601", m)
		}
		m = call("2025-11-25", 3, `"name":"job","arguments":{},"task":null`)
		if errorCode(m) != -32601 {
			t.Errorf("params.task null is no task: %v, want -32601", m)
		}
		synctest.Wait()
		if calls := s.Calls(); len(calls) != 0 {
			t.Errorf("session calls = %v, want none", calls)
		}
		legacyTaskOf(t, call("2025-11-25", 4, `"name":"job","arguments":{},"task":{}`))
		if r := result(t, call("2025-11-25", 5, `"name":"echo","arguments":{},"task":null`)); r["isError"] != false {
			t.Errorf("echo with params.task null: %v, want served", r)
		}
		if r := result(t, call("2025-11-25", 6, `"name":"nosuch","arguments":{},"task":{}`)); r["isError"] != true {
			t.Errorf("an unknown tool with params.task: %v, want the unknown tool's tool error", r)
		}
		// Revisions before 2025-11-25 have no tasks: the server declares no
		// tasks capability there, so it "MUST process requests of that type
		// normally, ignoring any task-augmentation metadata" (SEP-1686).
		for i, v := range []string{"2025-06-18", "2025-03-26"} {
			if r := result(t, call(v, 10+i, `"name":"job","arguments":{}`)); r["content"] == nil {
				t.Errorf("%s: a required tool's plain call = %v, want served", v, r)
			}
			if r := result(t, call(v, 20+i, `"name":"echo","arguments":{},"task":{"ttl":"bad"}`)); r["isError"] != false {
				t.Errorf("%s: params.task = %v, want ignored", v, r)
			}
		}
		synctest.Wait()
	})
}

// legacyStream is a stream client that negotiated 2025-11-25 with form
// elicitation.
func legacyStream(t *testing.T, e *engine.Engine) *client {
	c := newClient(t, e)
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	caps := result(t, c.recv())["capabilities"].(map[string]any)["tasks"].(map[string]any)
	if caps["list"] == nil || caps["cancel"] == nil {
		t.Fatalf("a stream's tasks capability = %v, want list and cancel", caps)
	}
	return c
}

// method returns m's method, "" for a response.
func method(m map[string]any) string { s, _ := m["method"].(string); return s }

func TestLegacyTaskProgressAndStatusOnAStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := taskEngine(t, engine.Options{AskClient: true})
		c := legacyStream(t, e)
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"progress"},"task":{},"_meta":{"progressToken":"p1"}}}`)
		// The creating answer comes first: nothing about a task precedes
		// the answer that names it.
		id := legacyTaskOf(t, c.recv())["taskId"].(string)
		related := map[string]any{"io.modelcontextprotocol/related-task": map[string]any{"taskId": id}}
		for i := 1; i <= 3; i++ {
			m := c.recv()
			p, _ := m["params"].(map[string]any)
			if method(m) != "notifications/progress" || p["progressToken"] != "p1" || p["progress"] != float64(i) || p["message"] != "step "+strconv.Itoa(i) {
				t.Fatalf("progress %d = %v", i, m)
			}
			if meta, _ := json.Marshal(p["_meta"]); string(meta) != mustJSON(related) {
				t.Errorf("progress _meta = %s, want the related task", meta)
			}
		}
		m := c.recv()
		p, _ := m["params"].(map[string]any)
		if method(m) != "notifications/tasks/status" || p["taskId"] != id || p["status"] != "completed" || p["_meta"] != nil {
			t.Fatalf("after the progress: %v, want the completed status (no related-task _meta)", m)
		}

		// An approval: input_required, the elicitation, working again, the
		// end; each status once.
		c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"background"},"task":{}}}`)
		id = legacyTaskOf(t, c.recv())["taskId"].(string)
		if m := c.recv(); method(m) != "notifications/tasks/status" || m["params"].(map[string]any)["status"] != "input_required" {
			t.Fatalf("got %v, want the input_required status", m)
		}
		el := c.recv()
		if method(el) != "elicitation/create" {
			t.Fatalf("got %v, want elicitation/create", el)
		}
		c.send(`{"jsonrpc":"2.0","id":"` + el["id"].(string) + `","result":{"action":"accept","content":{"decision":"allow_once"}}}`)
		for _, want := range []string{"working", "completed"} {
			m := c.recv()
			if method(m) != "notifications/tasks/status" || m["params"].(map[string]any)["status"] != want || m["params"].(map[string]any)["taskId"] != id {
				t.Fatalf("got %v, want the %s status", m, want)
			}
		}

		// Cancelled: reported once; no progress token, no progress.
		c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"slow"},"task":{}}}`)
		id = legacyTaskOf(t, c.recv())["taskId"].(string)
		synctest.Wait()
		c.send(`{"jsonrpc":"2.0","id":4,"method":"tasks/cancel","params":{"taskId":"` + id + `"}}`)
		var sawStatus, sawAnswer bool
		for !sawStatus || !sawAnswer {
			m := c.recv()
			switch {
			case method(m) == "notifications/tasks/status" && m["params"].(map[string]any)["status"] == "cancelled" && !sawStatus:
				sawStatus = true
			case m["id"] == 4.0 && !sawAnswer:
				sawAnswer = true
			default:
				t.Fatalf("unexpected %v", m)
			}
		}
		c.send(`{"jsonrpc":"2.0","id":5,"method":"ping"}`)
		if m := c.recv(); m["id"] != 5.0 {
			t.Errorf("after the cancel: %v, want only the ping's answer", m)
		}
	})
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestLegacyTaskNotifiesNothingOverHTTP: over the stateless hosts the
// creating response has ended; the task's progress is its statusMessage
// and its status is polled (docs/SPEC.md §14).
func TestLegacyTaskNotifiesNothingOverHTTP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := taskEngine(t, engine.Options{})
		var mu sync.Mutex
		var sent [][]byte
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"progress"},"task":{},"_meta":{"progressToken":"p1"}}}`
		r := e.Exchange(context.Background(), []byte(body), engine.ExchangeOptions{
			Headers: engine.Headers{ProtocolVersion: "2025-11-25", HasProtocolVersion: true},
			Notify:  func(b []byte) { mu.Lock(); sent = append(sent, b); mu.Unlock() },
		})
		id := legacyTaskOf(t, decodeReply(t, r))["taskId"].(string)
		synctest.Wait()
		g := result(t, legacyExchange(e, ports.Principal{}, "2025-11-25", 2, "tasks/get", `"taskId":"`+id+`"`))
		if g["status"] != "completed" || g["statusMessage"] != "step 3" {
			t.Errorf("tasks/get = %v, want completed with the last step as statusMessage", g)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(sent) != 0 {
			t.Errorf("notifications over HTTP: %q, want none", sent)
		}
	})
}

func TestLegacyTaskList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := taskEngine(t, engine.Options{})
		c := legacyStream(t, e)
		ids := map[string]bool{}
		for i := 1; i <= 51; i++ {
			c.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"hi"},"task":{}}}`)
			ids[legacyTaskOf(t, c.recv())["taskId"].(string)] = true
			// Each ends before the next (at most 8 run at once) and says so.
			if m := c.recv(); method(m) != "notifications/tasks/status" {
				t.Fatalf("got %v, want the completed status", m)
			}
		}
		other := legacyStream(t, e)
		other.send(`{"jsonrpc":"2.0","id":1,"method":"tasks/list"}`)
		if tasks := result(t, other.recv())["tasks"].([]any); len(tasks) != 0 {
			t.Errorf("another stream lists %d tasks, want none", len(tasks))
		}
		c.send(`{"jsonrpc":"2.0","id":100,"method":"tasks/list","params":{}}`)
		page := result(t, c.recv())
		cursor, _ := page["nextCursor"].(string)
		listed := page["tasks"].([]any)
		if len(listed) != 50 || cursor == "" {
			t.Fatalf("first page: %d tasks, nextCursor %q; want 50 and a cursor", len(listed), cursor)
		}
		c.send(`{"jsonrpc":"2.0","id":101,"method":"tasks/list","params":{"cursor":"` + cursor + `"}}`)
		page = result(t, c.recv())
		listed = append(listed, page["tasks"].([]any)...)
		if _, more := page["nextCursor"]; more || len(listed) != 51 {
			t.Fatalf("second page: %v", page)
		}
		for _, x := range listed {
			task := x.(map[string]any)
			if !ids[task["taskId"].(string)] || task["status"] != "completed" || task["ttl"] == nil {
				t.Errorf("listed %v", task)
			}
			delete(ids, task["taskId"].(string))
		}
		for i, bad := range []string{`"x"`, `7`, `"` + strings.Repeat("A", 8) + `"`} {
			c.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(110+i) + `,"method":"tasks/list","params":{"cursor":` + bad + `}}`)
			if m := c.recv(); errorCode(m) != -32602 {
				t.Errorf("cursor %s: %v, want -32602", bad, m)
			}
		}
	})
}

// TestLegacyTaskListOverHTTP: offered where an authenticated principal
// binds the tasks (serve remote), the caller's own only; not on the
// loopback host's one local principal, whose initialize does not declare
// it.
func TestLegacyTaskListOverHTTP(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := taskEngine(t, engine.Options{})
		init := func(who ports.Principal) map[string]any {
			m := legacyExchange(e, who, "2025-11-25", 1, "initialize", `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}`)
			return result(t, m)["capabilities"].(map[string]any)["tasks"].(map[string]any)
		}
		if caps := init(ports.Principal{}); caps["list"] != nil {
			t.Errorf("loopback: tasks capability %v, want no list", caps)
		}
		if caps := init(alice); caps["list"] == nil {
			t.Errorf("an authenticated principal: tasks capability %v, want list", caps)
		}
		submit := func(who ports.Principal) string {
			m := legacyExchange(e, who, "2025-11-25", 2, "tools/call", `"name":"agent_submit","arguments":{"prompt":"hi"},"task":{}`)
			return legacyTaskOf(t, m)["taskId"].(string)
		}
		mine, _ := submit(alice), submit(bob)
		submit(ports.Principal{})
		synctest.Wait()
		tasks := result(t, legacyExchange(e, alice, "2025-11-25", 3, "tasks/list", `"_meta":{}`))["tasks"].([]any)
		if len(tasks) != 1 || tasks[0].(map[string]any)["taskId"] != mine {
			t.Errorf("alice lists %v, want only her task", tasks)
		}
		if m := legacyExchange(e, ports.Principal{}, "2025-11-25", 4, "tasks/list", `"_meta":{}`); errorCode(m) != -32601 {
			t.Errorf("loopback tasks/list: %v, want -32601", m)
		}
	})
}

// TestLegacyTaskElicitationNotAnsweredByTasksUpdate: a 2025-11-25 task on
// a stream asks through elicitation/create; a 2026-07-28 tasks/update
// naming that input on the same stream is acked but answers nothing
// (SEP-2663: unknown keys are ignored): the task stays input_required
// until the elicitation is answered (docs/SPEC.md §14).
func TestLegacyTaskElicitationNotAnsweredByTasksUpdate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := taskEngine(t, engine.Options{AskClient: true})
		c := legacyStream(t, e)
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"background"},"task":{}}}`)
		id := legacyTaskOf(t, c.recv())["taskId"].(string)
		if m := c.recv(); method(m) != "notifications/tasks/status" || m["params"].(map[string]any)["status"] != "input_required" {
			t.Fatalf("got %v, want the input_required status", m)
		}
		el := c.recv()
		if method(el) != "elicitation/create" {
			t.Fatalf("got %v, want elicitation/create", el)
		}
		modern := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + taskCaps + `}`
		c.send(`{"jsonrpc":"2.0","id":2,"method":"tasks/update","params":{"taskId":"` + id + `","inputResponses":{"input-1":{"action":"accept","content":{"answer":"allow_once"}}},` + modern + `}}`)
		if m := c.recv(); m["id"] != 2.0 || result(t, m)["resultType"] != "complete" {
			t.Fatalf("tasks/update: %v, want the ack", m)
		}
		c.send(`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"` + id + `",` + modern + `}}`)
		if g := result(t, c.recv()); g["status"] != "input_required" {
			t.Errorf("after a tasks/update naming the elicitation's input: %v, want input_required", g)
		}
		c.send(`{"jsonrpc":"2.0","id":"` + el["id"].(string) + `","result":{"action":"accept","content":{"decision":"allow_once"}}}`)
		for _, want := range []string{"working", "completed"} {
			if m := c.recv(); method(m) != "notifications/tasks/status" || m["params"].(map[string]any)["status"] != want {
				t.Fatalf("got %v, want the %s status", m, want)
			}
		}
	})
}
