package engine_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/ports"
)

// The tasks extension on 2026-07-28 (docs/SPEC.md §14), over Exchange (the
// HTTP hosts' entry point). Each test runs in a synctest bubble:
// synctest.Wait is the point where every task's goroutine has finished or
// blocked, so no test sleeps to synchronise.

const taskCaps = `{"extensions":{"io.modelcontextprotocol/tasks":{}},"elicitation":{"form":{}}}`

// alice and bob, two principals, are flights_test.go's.

// taskExchange sends one modern request with caps and the headers a
// conforming client sends (Mcp-Name: the tool, or the taskId of tasks/*).
func taskExchange(ctx context.Context, e *engine.Engine, who ports.Principal, id int, method, caps, params, name string) engine.Reply {
	body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"` + method + `","params":{` + params +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
	h := engine.Headers{ProtocolVersion: "2026-07-28", Method: method, Name: name, HasProtocolVersion: true, HasMethod: true, HasName: true}
	return e.Exchange(ctx, []byte(body), engine.ExchangeOptions{Headers: h, Principal: who})
}

type taskClient struct {
	t   *testing.T
	e   *engine.Engine
	who ports.Principal
	id  int
}

func (c *taskClient) do(method, caps, params, name string) map[string]any {
	c.t.Helper()
	c.id++
	return decodeReply(c.t, taskExchange(context.Background(), c.e, c.who, c.id, method, caps, params, name))
}

// submit starts agent_submit with prompt as a task and returns its id.
func (c *taskClient) submit(prompt string) string {
	c.t.Helper()
	r := result(c.t, c.do("tools/call", taskCaps, `"name":"agent_submit","arguments":{"prompt":"`+prompt+`"}`, "agent_submit"))
	if r["resultType"] != "task" || r["status"] != "working" {
		c.t.Fatalf("CreateTaskResult = %v, want resultType task, status working", r)
	}
	id, _ := r["taskId"].(string)
	if len(id) != 43 {
		c.t.Fatalf("taskId %q is not 32 bytes of base64url", id)
	}
	return id
}

func (c *taskClient) task(method, id, extra string) map[string]any {
	c.t.Helper()
	return c.do(method, taskCaps, `"taskId":"`+id+`"`+extra, id)
}

func (c *taskClient) get(id string) map[string]any {
	c.t.Helper()
	return result(c.t, c.task("tasks/get", id, ""))
}

func taskEngine(t *testing.T, opts engine.Options) (*engine.Engine, *fake.Session) {
	s := fake.New()
	e, err := engine.New(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(t, e) })
	return e, s
}

func TestTaskCreationAndCompletion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := taskEngine(t, engine.Options{})
		c := &taskClient{t: t, e: e, who: alice}
		r := result(t, c.do("tools/call", taskCaps, `"name":"agent_submit","arguments":{"prompt":"hello"}`, "agent_submit"))
		if r["ttlMs"] != 3600000.0 || r["pollIntervalMs"] != 2000.0 || r["createdAt"] == nil || r["lastUpdatedAt"] == nil {
			t.Errorf("CreateTaskResult = %v", r)
		}
		id := r["taskId"].(string)
		synctest.Wait()
		g := c.get(id)
		if g["resultType"] != "complete" || g["status"] != "completed" || g["taskId"] != id {
			t.Fatalf("tasks/get = %v", g)
		}
		text := g["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]
		if text != "echo: hello" {
			t.Errorf("result text = %v", text)
		}
	})
}

func TestTaskOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := taskEngine(t, engine.Options{})
		c := &taskClient{t: t, e: e, who: alice}
		refused, failed := c.submit("refuse"), c.submit("fail")
		synctest.Wait()
		g := c.get(refused)
		if g["status"] != "completed" || g["result"].(map[string]any)["isError"] != true {
			t.Errorf("a tool error: %v, want completed with isError (SEP-2663)", g)
		}
		g = c.get(failed)
		er, _ := g["error"].(map[string]any)
		if g["status"] != "failed" || er["code"] != -32603.0 || er["message"] != "the turn failed" {
			t.Errorf("a failed turn: %v, want failed with -32603 and the first line", g)
		}
	})
}

func TestTaskApprovalThroughInputRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s := taskEngine(t, engine.Options{AskClient: true})
		c := &taskClient{t: t, e: e, who: alice}
		id := c.submit("background")
		synctest.Wait()
		g := c.get(id)
		reqs, _ := g["inputRequests"].(map[string]any)
		in, _ := reqs["input-1"].(map[string]any)
		if g["status"] != "input_required" || len(reqs) != 1 || in["method"] != "elicitation/create" {
			t.Fatalf("tasks/get = %v, want input_required with input-1", g)
		}
		p := in["params"].(map[string]any)
		if p["mode"] != "form" || !strings.Contains(p["message"].(string), "agent_submit") {
			t.Errorf("the form = %v, want the engine's words naming the submission", p)
		}
		// Unknown keys are ignored; the answer to input-1 resumes the turn.
		ack := result(t, c.task("tasks/update", id, `,"inputResponses":{"nope":{"action":"decline"},"input-1":{"action":"accept","content":{"decision":"allow_once"}}}`))
		if len(ack) != 2 || ack["resultType"] != "complete" {
			t.Errorf("tasks/update ack = %v", ack)
		}
		synctest.Wait()
		g = c.get(id)
		text := g["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]
		if g["status"] != "completed" || text != "the background agent was allowed" {
			t.Errorf("after the answer: %v", g)
		}
		// An already-answered key is ignored.
		if ack := result(t, c.task("tasks/update", id, `,"inputResponses":{"input-1":{"action":"decline"}}`)); ack["resultType"] != "complete" {
			t.Errorf("a second answer: %v", ack)
		}
		if calls := s.Calls(); len(calls) != 1 {
			t.Errorf("session calls = %v", calls)
		}
	})
}

func TestTaskApprovalClosedWithoutAskClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := taskEngine(t, engine.Options{})
		c := &taskClient{t: t, e: e, who: alice}
		id := c.submit("background")
		synctest.Wait()
		g := c.get(id)
		text := g["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]
		if g["status"] != "completed" || text != "the background agent was denied" {
			t.Errorf("AskClient off: %v, want the prompt settled closed", g)
		}
	})
}

func TestTaskCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s := taskEngine(t, engine.Options{})
		c := &taskClient{t: t, e: e, who: alice}
		id := c.submit("slow")
		synctest.Wait()
		if g := c.get(id); g["status"] != "working" {
			t.Fatalf("before cancel: %v", g)
		}
		for range 2 { // idempotent: an empty ack for a task already cancelled
			if ack := result(t, c.task("tasks/cancel", id, "")); len(ack) != 2 || ack["resultType"] != "complete" {
				t.Errorf("tasks/cancel = %v", ack)
			}
		}
		synctest.Wait() // the turn's context ended: the session returned
		if g := c.get(id); g["status"] != "cancelled" || g["result"] != nil {
			t.Errorf("after cancel: %v", g)
		}
		if calls := s.Calls(); len(calls) != 1 {
			t.Errorf("session calls = %v", calls)
		}
		// After the end too: an empty ack, the status unchanged.
		done := c.submit("hello")
		synctest.Wait()
		result(t, c.task("tasks/cancel", done, ""))
		if g := c.get(done); g["status"] != "completed" {
			t.Errorf("cancel after the end: %v, want completed", g)
		}
	})
}

// TestTaskIDsBoundToPrincipal: another principal's id answers exactly as
// an unknown one, for every method, and changes nothing.
func TestTaskIDsBoundToPrincipal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := taskEngine(t, engine.Options{})
		a := &taskClient{t: t, e: e, who: alice}
		b := &taskClient{t: t, e: e, who: bob}
		id := a.submit("slow")
		unknown := strings.Repeat("A", 43)
		for _, m := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
			extra := ""
			if m == "tasks/update" {
				extra = `,"inputResponses":{}`
			}
			theirs, none := b.task(m, id, extra), b.task(m, unknown, extra)
			if errorCode(theirs) != -32602 || theirs["error"].(map[string]any)["message"] != none["error"].(map[string]any)["message"] {
				t.Errorf("%s of another's task = %v, unknown = %v", m, theirs, none)
			}
		}
		if g := a.get(id); g["status"] != "working" {
			t.Errorf("the owner's task after another's cancel: %v", g)
		}
	})
}

func TestTaskExpiresAfterTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The bubble's clock starts at 2000-01-01 and moves only when every
		// goroutine in it waits.
		e, _ := taskEngine(t, engine.Options{Tasks: engine.TaskOptions{TTL: time.Minute}})
		c := &taskClient{t: t, e: e, who: alice}
		id := c.submit("hello")
		synctest.Wait()
		if g := c.get(id); g["createdAt"] != "2000-01-01T00:00:00Z" || g["status"] != "completed" {
			t.Fatalf("tasks/get = %v", g)
		}
		time.Sleep(time.Minute - time.Millisecond)
		c.get(id) // still kept
		time.Sleep(time.Millisecond)
		if m := c.task("tasks/get", id, ""); errorCode(m) != -32602 {
			t.Errorf("after the TTL: %v, want -32602", m)
		}
	})
}

func TestTaskBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s := taskEngine(t, engine.Options{Tasks: engine.TaskOptions{PerPrincipal: 2, Max: 3}})
		a := &taskClient{t: t, e: e, who: alice}
		first := a.submit("slow")
		a.submit("slow")
		r := result(t, a.do("tools/call", taskCaps, `"name":"agent_submit","arguments":{"prompt":"slow"}`, "agent_submit"))
		if r["isError"] != true || !strings.Contains(r["content"].([]any)[0].(map[string]any)["text"].(string), "too many tasks") {
			t.Errorf("beyond the principal's bound: %v", r)
		}
		b := &taskClient{t: t, e: e, who: bob}
		b.submit("slow") // another principal has room; the host is now full
		r = result(t, b.do("tools/call", taskCaps, `"name":"agent_submit","arguments":{"prompt":"slow"}`, "agent_submit"))
		if r["isError"] != true {
			t.Errorf("beyond the host's bound: %v", r)
		}
		a.task("tasks/cancel", first, "")
		s.Release()
		synctest.Wait()
	})
}

func TestTaskRequiredToolWithoutExtension(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fake.New()
		s.SetTools([]domain.Tool{{Name: "job", InputSchema: json.RawMessage(`{"type":"object"}`), TaskSupport: domain.TaskRequired}})
		e, err := engine.New(s, engine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { shutdown(t, e) })
		c := &taskClient{t: t, e: e, who: alice}
		m := c.do("tools/call", `{}`, `"name":"job","arguments":{}`, "job")
		er, _ := m["error"].(map[string]any)
		if errorCode(m) != -32021 || er["data"] == nil {
			t.Errorf("a required-task tool without the extension: %v, want -32021 with requiredCapabilities", m)
		}
		if calls := s.Calls(); len(calls) != 0 {
			t.Errorf("session calls = %v, want none", calls)
		}
	})
}

func TestTaskNotDeclaredServedAsToday(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := taskEngine(t, engine.Options{})
		c := &taskClient{t: t, e: e, who: alice}
		r := result(t, c.do("tools/call", `{}`, `"name":"agent_submit","arguments":{"prompt":"hi"},"task":{"ttl":1000}`, "agent_submit"))
		if r["resultType"] != "complete" || r["content"].([]any)[0].(map[string]any)["text"] != "echo: hi" {
			t.Errorf("without the extension (a legacy params.task ignored): %v", r)
		}
		// A tool that does not support tasks is served as today even when
		// the request declared them.
		r = result(t, c.do("tools/call", taskCaps, `"name":"echo","arguments":{}`, "echo"))
		if r["resultType"] != "complete" {
			t.Errorf("echo with the extension declared: %v", r)
		}
	})
}

func TestTaskMethodsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := taskEngine(t, engine.Options{})
		id := (&taskClient{t: t, e: e, who: alice}).submit("hello")
		for _, m := range []string{"tasks/result", "tasks/list"} {
			r := taskExchange(context.Background(), e, alice, 9, m, taskCaps, `"taskId":"`+id+`"`, id)
			if r.Kind != engine.UnknownMethod || !strings.Contains(string(r.Body), "-32601") {
				t.Errorf("%s: %v %s, want -32601", m, r.Kind, r.Body)
			}
		}
		r := taskExchange(context.Background(), e, alice, 10, "tasks/get", taskCaps, `"taskId":"`+id+`"`, "other")
		if r.Kind != engine.Invalid || !strings.Contains(string(r.Body), "-32020") {
			t.Errorf("Mcp-Name mismatch: %v %s, want 400 with -32020", r.Kind, r.Body)
		}
		// The task surface needs the extension declared in the request.
		for _, m := range []string{"tasks/get", "tasks/cancel"} {
			r = taskExchange(context.Background(), e, alice, 11, m, `{}`, `"taskId":"`+id+`"`, id)
			if !strings.Contains(string(r.Body), `"code":-32021`) || !strings.Contains(string(r.Body), `"requiredCapabilities"`) {
				t.Errorf("%s without the extension: %s, want -32021", m, r.Body)
			}
		}
		synctest.Wait()
	})
}

// TestTaskSurvivesItsRequest: the creating request's context ending (an
// HTTP client that left) does not end the task; a later request fetches it.
func TestTaskSurvivesItsRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s := taskEngine(t, engine.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		r := decodeReply(t, taskExchange(ctx, e, alice, 1, "tools/call", taskCaps, `"name":"agent_submit","arguments":{"prompt":"slow"}`, "agent_submit"))
		cancel()
		id := result(t, r)["taskId"].(string)
		s.Release()
		synctest.Wait()
		if g := (&taskClient{t: t, e: e, who: alice}).get(id); g["status"] != "completed" {
			t.Errorf("after the creating request ended: %v, want completed", g)
		}
	})
}

// TestTaskOnAStreamIgnoresCancelledOfCreatingID: a stream client's
// notifications/cancelled naming the creating id does not cancel the task.
func TestTaskOnAStreamIgnoresCancelledOfCreatingID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s := taskEngine(t, engine.Options{})
		c := newClient(t, e)
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + taskCaps + `}`
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"slow"},` + meta + `}}`)
		id := result(t, c.recv())["taskId"].(string)
		c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
		get := func(n int) map[string]any {
			c.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(n) + `,"method":"tasks/get","params":{"taskId":"` + id + `",` + meta + `}}`)
			return result(t, c.recv())
		}
		synctest.Wait()
		if g := get(2); g["status"] != "working" {
			t.Fatalf("after notifications/cancelled: %v", g)
		}
		s.Release()
		synctest.Wait()
		if g := get(3); g["status"] != "completed" {
			t.Errorf("after the turn: %v", g)
		}
		if err := c.stop(); err != nil {
			t.Error(err)
		}
	})
}

func TestShutdownCancelsRunningTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fake.New()
		e, err := engine.New(s, engine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c := &taskClient{t: t, e: e, who: alice}
		c.submit("slow")
		synctest.Wait()
		shutdown(t, e) // returns only once the task's goroutine has returned
		if calls := s.Calls(); len(calls) != 1 {
			t.Errorf("session calls = %v", calls)
		}
	})
}

// TestInputResponsesNamingAKeyTwice: an inputResponses object that names a
// key twice is -32602 and answers nothing, for tasks/update and for a
// round's retry alike. Readers disagree on which of two same-named members
// counts (encoding/json and JavaScript take the last, a first-match reader
// the first), so a proxy that checked a "deny" could otherwise let an
// "allow_once" through (docs/SPEC.md §6, §14).
func TestInputResponsesNamingAKeyTwice(t *testing.T) {
	const allowThenDeny = `{"action":"accept","content":{"decision":"allow_once"}},"%s":{"action":"accept","content":{"decision":"deny"}}`
	dup := func(key string) string {
		return `"inputResponses":{"` + key + `":` + strings.ReplaceAll(allowThenDeny, "%s", key) + `}`
	}
	synctest.Test(t, func(t *testing.T) {
		e, _ := taskEngine(t, engine.Options{AskClient: true})
		c := &taskClient{t: t, e: e, who: alice}
		id := c.submit("background")
		synctest.Wait()
		if m := c.task("tasks/update", id, ","+dup("input-1")); errorCode(m) != -32602 {
			t.Errorf("tasks/update naming input-1 twice: %v, want -32602", m)
		}
		// An escaped spelling of the same name is the same name.
		if m := c.task("tasks/update", id, `,"inputResponses":{"input-1":{"action":"decline"},"input\u002d1":{"action":"decline"}}`); errorCode(m) != -32602 {
			t.Errorf("tasks/update naming input-1 twice (escaped): %v, want -32602", m)
		}
		synctest.Wait()
		if g := c.get(id); g["status"] != "input_required" {
			t.Fatalf("after the refused updates: %v, want input_required (nothing answered)", g)
		}
		result(t, c.task("tasks/update", id, `,"inputResponses":{"input-1":{"action":"decline"}}`))
		synctest.Wait()
		text := c.get(id)["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]
		if text != "the background agent was denied" {
			t.Errorf("after the valid update: %v", text)
		}
	})

	e, _ := askEngine(t, engine.Options{})
	c := newClient(t, e)
	c.send(writeCall("1", ""))
	st := state(t, c.recv())
	c.send(writeCall("2", `,"requestState":"`+st+`",`+dup("prompt")))
	if m := c.recv(); errorCode(m) != -32602 || m["id"] != 2.0 {
		t.Errorf("a retry naming prompt twice: %v, want -32602", m)
	}
	// The refused retry did not use the round up.
	c.send(writeCall("3", allow(st)))
	if got := envelopeOf(t, c.recv()); got != `{"success":true,"toolName":"write"}` {
		t.Errorf("a valid retry after the refused one: %s", got)
	}
}

// TestTaskBoundNotHeldByOnePrincipalsEndedTasks: one principal cannot keep
// every other out of tasks by ending its own (tasks/cancel, or turns that
// finish) and creating more: at the engine's bound, the oldest ended task
// of the principal holding the most is forgotten to make room. Running
// tasks are never forgotten: with none ended, the bound refuses.
func TestTaskBoundNotHeldByOnePrincipalsEndedTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s := taskEngine(t, engine.Options{Tasks: engine.TaskOptions{PerPrincipal: 2, Max: 3}})
		a := &taskClient{t: t, e: e, who: alice}
		first, second := a.submit("slow"), a.submit("slow")
		result(t, a.task("tasks/cancel", first, ""))
		result(t, a.task("tasks/cancel", second, ""))
		synctest.Wait()  // their calls returned
		a.submit("slow") // alice holds 3: two ended, one running; the engine is full
		b := &taskClient{t: t, e: e, who: bob}
		b.submit("slow") // room made: alice's oldest ended task is forgotten
		if m := a.task("tasks/get", first, ""); errorCode(m) != -32602 {
			t.Errorf("alice's oldest ended task after bob's creation: %v, want forgotten", m)
		}
		if g := a.get(second); g["status"] != "cancelled" {
			t.Errorf("alice's other ended task: %v, want kept", g)
		}
		b.submit("slow") // again: alice's other ended task goes
		if m := a.task("tasks/get", second, ""); errorCode(m) != -32602 {
			t.Errorf("alice's second ended task: %v, want forgotten", m)
		}
		// Now every held task runs: the bound refuses.
		carol := &taskClient{t: t, e: e, who: ports.Principal{Issuer: "https://as.example", Subject: "carol", Client: "app"}}
		r := result(t, carol.do("tools/call", taskCaps, `"name":"agent_submit","arguments":{"prompt":"slow"}`, "agent_submit"))
		if r["isError"] != true || !strings.Contains(r["content"].([]any)[0].(map[string]any)["text"].(string), "holds too many tasks") {
			t.Errorf("with every held task running: %v, want the engine's bound", r)
		}
		s.Release()
		synctest.Wait()
	})
}
