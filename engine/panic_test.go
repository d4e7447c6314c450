package engine_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/syncbuf"
)

// TestSessionPanicEveryPath: a session that panics in InvokeTool or Submit
// does not take the server down, on every path a call takes (a legacy
// plain call, a 2025-11-25 task, a modern call under rounds, a 2026-07-28
// task): the call answers -32603 with a fixed message (a task is failed
// with it), the panic's value and stack go to the log at error level and
// never to the wire, and the stream goes on serving (docs/SPEC.md §3, §14).
func TestSessionPanicEveryPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs syncbuf.Buffer
		e, err := engine.New(fake.New(), engine.Options{AskClient: true,
			Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { shutdown(t, e) })
		c := newClient(t, e)
		var wire []string
		recv := func() map[string]any {
			t.Helper()
			b := <-c.out
			wire = append(wire, string(b))
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("not JSON: %s", b)
			}
			return m
		}
		const fixed = "Internal error: the session failed while serving this call"
		wantPanicError := func(what string, er any) {
			t.Helper()
			m, _ := er.(map[string]any)
			if m["code"] != -32603.0 || m["message"] != fixed {
				t.Errorf("%s: error %v, want -32603 %q", what, er, fixed)
			}
		}
		modern := func(caps string) string {
			return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
		}

		c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		recv()
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"panic","arguments":{}}}`)
		wantPanicError("a legacy call", recv()["error"])

		c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"panic"},"task":{}}}`)
		legacyID := result(t, recv())["task"].(map[string]any)["taskId"].(string)
		synctest.Wait()
		// On a stream the task's end is announced (docs/SPEC.md §14).
		if n := recv(); n["method"] != "notifications/tasks/status" || n["params"].(map[string]any)["status"] != "failed" {
			t.Errorf("a 2025-11-25 task's end: %v, want notifications/tasks/status failed", n)
		}
		c.send(`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"` + legacyID + `"}}`)
		if g := result(t, recv()); g["status"] != "failed" {
			t.Errorf("a 2025-11-25 task: %v, want failed", g)
		}
		c.send(`{"jsonrpc":"2.0","id":4,"method":"tasks/result","params":{"taskId":"` + legacyID + `"}}`)
		wantPanicError("a 2025-11-25 tasks/result", recv()["error"])

		c.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"panic","arguments":{},` + modern(`{"elicitation":{"form":{}}}`) + `}}`)
		wantPanicError("a modern call under rounds", recv()["error"])

		c.send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"panic"},` + modern(taskCaps) + `}}`)
		id := result(t, recv())["taskId"].(string)
		synctest.Wait()
		c.send(`{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"` + id + `",` + modern(taskCaps) + `}}`)
		g := result(t, recv())
		if g["status"] != "failed" || g["result"] != nil {
			t.Errorf("a 2026-07-28 task: %v, want failed without result", g)
		}
		wantPanicError("a 2026-07-28 task", g["error"])

		c.send(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after"}}}`)
		if r := result(t, recv()); r["isError"] != false {
			t.Errorf("the next call: %v, want served", r)
		}

		for _, w := range wire {
			if strings.Contains(w, "secret-7f3a") {
				t.Errorf("the panic's value reached the wire: %s", w)
			}
		}
		var records int
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) != nil || !strings.Contains(line, "panicked") {
				continue
			}
			records++
			stack, _ := rec["stack"].(string)
			if rec["level"] != "ERROR" || rec["panic"] != fake.PanicValue || !strings.Contains(stack, "fake.(*Session)") {
				t.Errorf("log record %v: want level ERROR, the panic's value and its stack", rec)
			}
		}
		if records != 4 {
			t.Errorf("%d panic records logged, want 4:\n%s", records, logs.String())
		}
	})
}

// catalogPanics is a session whose RuntimeTools panics while panics is set.
type catalogPanics struct {
	*fake.Session
	panics atomic.Bool
}

func (s *catalogPanics) RuntimeTools(ctx context.Context) ([]domain.Tool, error) {
	if s.panics.Load() {
		panic(fake.PanicValue)
	}
	return s.Session.RuntimeTools(ctx)
}

// TestSessionPanicInRuntimeTools: a session whose RuntimeTools panics does
// not take the server down either: tools/list answers -32603 and tools/call
// the tool error, both with the fixed message, the panic is logged at error
// level, and the stream serves the next request once the catalog reads
// again (docs/SPEC.md §3).
func TestSessionPanicInRuntimeTools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs syncbuf.Buffer
		s := &catalogPanics{Session: fake.New()}
		e, err := engine.New(s, engine.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { shutdown(t, e) })
		c := newClient(t, e)
		recv := func() map[string]any {
			t.Helper()
			b := <-c.out
			if strings.Contains(string(b), "secret-7f3a") {
				t.Errorf("the panic's value reached the wire: %s", b)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("not JSON: %s", b)
			}
			return m
		}
		const fixed = "Internal error: the session failed while listing its tools"
		c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		recv()
		s.panics.Store(true)
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		if er, _ := recv()["error"].(map[string]any); er["code"] != -32603.0 || er["message"] != fixed {
			t.Errorf("tools/list: error %v, want -32603 %q", er, fixed)
		}
		c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
		if r := result(t, recv()); r["isError"] != true || !strings.Contains(mustJSON(r["content"]), fixed) {
			t.Errorf("tools/call: %v, want the tool error %q", r, fixed)
		}
		s.panics.Store(false)
		c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after"}}}`)
		if r := result(t, recv()); r["isError"] != false {
			t.Errorf("the next call: %v, want served", r)
		}
		if n := strings.Count(logs.String(), `"level":"ERROR"`); n < 2 || !strings.Contains(logs.String(), "catalogPanics") {
			t.Errorf("%d error records, want one or more per request, with the stack:\n%s", n, logs.String())
		}
	})
}
