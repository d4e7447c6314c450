package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/ports"
)

// A task whose creating answer is dropped — the stream's
// notifications/cancelled named the request before its answer was written,
// or the HTTP client left before it — is held by nobody: its id was never
// given. It is cancelled and forgotten at once, so it holds no bound
// (docs/SPEC.md §14 "Lifetime and bounds").

// gatedCatalog is the fake session whose next RuntimeTools, once armed,
// waits for the test (a slow catalog that ignores its context), so a
// request can be cancelled while it is served, before its task exists.
type gatedCatalog struct {
	*fake.Session
	mu   sync.Mutex
	gate chan struct{}
}

func (g *gatedCatalog) arm() chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate = make(chan struct{})
	return g.gate
}

func (g *gatedCatalog) RuntimeTools(ctx context.Context) ([]domain.Tool, error) {
	g.mu.Lock()
	gate := g.gate
	g.gate = nil
	g.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return g.Session.RuntimeTools(ctx)
}

func gatedEngine(t *testing.T) (*engine.Engine, *gatedCatalog) {
	g := &gatedCatalog{Session: fake.New()}
	e, err := engine.New(g, engine.Options{Tasks: engine.TaskOptions{PerPrincipal: 1, Max: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Release(); shutdown(t, e) })
	return e, g
}

const streamTaskMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + taskCaps + `}`

func TestTaskWhoseCreationIsCancelledOnAStreamIsForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, g := gatedEngine(t)
		c := newClient(t, e)
		open := g.arm()
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"slow"},` + streamTaskMeta + `}}`)
		synctest.Wait() // the request waits in the catalog
		c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
		synctest.Wait()
		close(open)
		synctest.Wait()
		emptyIndex(t, e) // the task nobody can name is gone
		// Nothing for id 1 (docs/SPEC.md §3), and the task it created holds
		// no bound: the next one is created.
		c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"slow"},` + streamTaskMeta + `}}`)
		m := c.recv()
		if m["id"] != 2.0 || result(t, m)["resultType"] != "task" {
			t.Errorf("after a creation was cancelled: %v, want id 2's CreateTaskResult", m)
		}
	})
}

func TestLegacyTaskWhoseCreationIsCancelledOnAStreamIsForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, g := gatedEngine(t)
		c := newClient(t, e)
		c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		c.recv()
		call := func(id string) string {
			return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"slow"},"task":{}}}`
		}
		open := g.arm()
		c.send(call("1"))
		synctest.Wait()
		c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
		synctest.Wait()
		close(open)
		synctest.Wait()
		emptyIndex(t, e)
		c.send(`{"jsonrpc":"2.0","id":2,"method":"tasks/list","params":{}}`)
		if tasks := result(t, c.recv())["tasks"].([]any); len(tasks) != 0 {
			t.Errorf("tasks/list after a creation was cancelled: %v, want none", tasks)
		}
		c.send(call("3"))
		m := c.recv() // no status notification of the forgotten task comes first
		if m["id"] != 3.0 || result(t, m)["task"] == nil {
			t.Errorf("after a creation was cancelled: %v, want id 3's CreateTaskResult", m)
		}
	})
}

func TestTaskWhoseCreatorLeftOverHTTPIsForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, g := gatedEngine(t)
		open := g.arm()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan engine.Reply)
		go func() {
			done <- taskExchange(ctx, e, alice, 1, "tools/call", taskCaps, `"name":"agent_submit","arguments":{"prompt":"slow"}`, "agent_submit")
		}()
		synctest.Wait()
		cancel() // the client left while its request was served
		close(open)
		if r := <-done; r.Kind != engine.Cancelled {
			t.Errorf("the creating exchange: %v %s, want Cancelled", r.Kind, r.Body)
		}
		synctest.Wait()
		emptyIndex(t, e)
		c := &taskClient{t: t, e: e, who: alice}
		r := result(t, c.do("tools/call", taskCaps, `"name":"agent_submit","arguments":{"prompt":"slow"}`, "agent_submit"))
		if r["resultType"] != "task" {
			t.Errorf("after a creator left: %v, want a CreateTaskResult", r)
		}
		// Another principal too (the engine's bound, 1, is free).
		b := &taskClient{t: t, e: e, who: bob}
		r = result(t, b.do("tools/call", taskCaps, `"name":"agent_submit","arguments":{"prompt":"slow"}`, "agent_submit"))
		if r["resultType"] == "task" || !strings.Contains(r["content"].([]any)[0].(map[string]any)["text"].(string), "too many tasks") {
			t.Errorf("beyond the engine's bound: %v", r)
		}
	})
}

var _ ports.Session = (*gatedCatalog)(nil)

// TestCancelledTaskCountsUntilItsCallReturns: a task cancelled (tasks/cancel)
// is cancelled at once, but its call still runs until the session notices;
// until then it counts under its principal's bound, and it is never the
// task forgotten to make room: otherwise a client could pile up calls on a
// session slow to notice cancellation by cancelling and creating tasks.
func TestCancelledTaskCountsUntilItsCallReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := fake.NewHeld()
		tools, _ := h.RuntimeTools(context.Background())
		for i := range tools {
			if tools[i].Name == "slow" {
				tools[i].TaskSupport = domain.TaskOptional
			}
		}
		h.SetTools(tools)
		e, err := engine.New(h, engine.Options{Tasks: engine.TaskOptions{PerPrincipal: 1, Max: 2}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { shutdown(t, e) })
		a := &taskClient{t: t, e: e, who: alice}
		create := func(c *taskClient) map[string]any {
			return result(t, c.do("tools/call", taskCaps, `"name":"slow","arguments":{}`, "slow"))
		}
		id := create(a)["taskId"].(string)
		result(t, a.task("tasks/cancel", id, ""))
		<-h.CtxEnded() // the call saw its cancellation; it has not returned
		if g := a.get(id); g["status"] != "cancelled" {
			t.Fatalf("after tasks/cancel: %v", g)
		}
		if r := create(a); r["resultType"] == "task" {
			t.Errorf("a second task while the cancelled one's call runs: %v, want the principal's bound", r)
		}
		// bob's task fills the engine; the cancelled task is not forgotten
		// for carol's, since its call still runs.
		b := &taskClient{t: t, e: e, who: bob}
		if r := create(b); r["resultType"] != "task" {
			t.Fatalf("bob: %v", r)
		}
		carol := &taskClient{t: t, e: e, who: ports.Principal{Issuer: "https://as.example", Subject: "carol", Client: "app"}}
		if r := create(carol); r["resultType"] == "task" {
			t.Errorf("carol's task replaced a cancelled task whose call still runs: %v", r)
		}
		h.Let()
		<-h.Returned()
		synctest.Wait()
		if r := create(a); r["resultType"] != "task" {
			t.Errorf("once the cancelled call returned: %v, want a task", r)
		}
	})
}
