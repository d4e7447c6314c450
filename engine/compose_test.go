package engine_test

import (
	"encoding/json"
	"testing"
	"testing/synctest"

	"github.com/agentmcp/agentmcp/engine"
)

// Rounds, then a task (docs/SPEC.md §14; SEP-2663 "Composing with MRTR"):
// the fake's compose tool asks, calls ports.StartTask, asks again. The
// transcripts tasks-2026-compose*.txt pin the wire on every carrier; these
// tests pin what a transcript cannot reach.

const composeCall = `"name":"compose","arguments":{}`

// composeResult decodes the envelope result of a finished compose call.
func composeResult(t *testing.T, r map[string]any) map[string]any {
	t.Helper()
	text, _ := r["content"].([]any)[0].(map[string]any)["text"].(string)
	var env struct {
		Result map[string]any `json:"result"`
	}
	if err := json.Unmarshal([]byte(text), &env); err != nil {
		t.Fatalf("compose's envelope %q: %v", text, err)
	}
	return env.Result
}

// retry answers a round's prompt with answer.
func (c *taskClient) retry(round map[string]any, answer string) map[string]any {
	c.t.Helper()
	if round["resultType"] != "input_required" {
		c.t.Fatalf("want a round, got %v", round)
	}
	return result(c.t, c.do("tools/call", taskCaps, composeCall+`,"requestState":"`+round["requestState"].(string)+
		`","inputResponses":{"prompt":{"action":"accept","content":{"answer":"`+answer+`"}}}`, "compose"))
}

// TestComposeAtTheTaskBoundStaysInRequest: when the principal's task bound
// is reached, ports.StartTask reports false and the call goes on in its
// request: its next question is another round, and the last retry gets
// its result.
func TestComposeAtTheTaskBoundStaysInRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s := taskEngine(t, engine.Options{AskClient: true, Tasks: engine.TaskOptions{PerPrincipal: 1}})
		c := &taskClient{t: t, e: e, who: alice}
		c.submit("slow") // holds alice's one task
		round := result(t, c.do("tools/call", taskCaps, composeCall, "compose"))
		second := c.retry(round, "Alice")
		if _, ok := second["taskId"]; ok {
			t.Fatalf("at the bound the call became a task: %v", second)
		}
		got := composeResult(t, c.retry(second, "blue"))
		if got["name"] != "Alice" || got["color"] != "blue" || got["task"] != false {
			t.Errorf("compose = %v, want both answers from rounds and task false", got)
		}
		s.Release()
		synctest.Wait()
	})
}

// TestComposeTaskCancelEndsTheCall: once the call is a task, tasks/cancel
// ends it: the task is cancelled, the open input request settles closed and
// the session's call returns.
func TestComposeTaskCancelEndsTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s := taskEngine(t, engine.Options{AskClient: true})
		ended := s.Ended()
		c := &taskClient{t: t, e: e, who: alice}
		created := c.retry(result(t, c.do("tools/call", taskCaps, composeCall, "compose")), "Alice")
		if created["resultType"] != "task" || created["status"] != "working" || created["requestState"] != nil || created["inputRequests"] != nil {
			t.Fatalf("the retry's answer = %v, want a flat CreateTaskResult", created)
		}
		id := created["taskId"].(string)
		synctest.Wait()
		if g := c.get(id); g["status"] != "input_required" {
			t.Fatalf("tasks/get = %v, want input_required", g)
		}
		result(t, c.task("tasks/cancel", id, ""))
		synctest.Wait()
		select {
		case name := <-ended:
			if name != "compose" {
				t.Errorf("ended %q", name)
			}
		default:
			t.Fatal("tasks/cancel did not end the call")
		}
		if g := c.get(id); g["status"] != "cancelled" {
			t.Errorf("tasks/get = %v, want cancelled", g)
		}
	})
}

// TestComposeStreamCancelOfTheChainIgnored: on a stream, notifications/
// cancelled naming the request that parked the round (the chain's latest
// id) ends a parked call, but not once the call is a task: a task ends
// only by tasks/cancel, Shutdown or its stream's end.
func TestComposeStreamCancelOfTheChainIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := taskEngine(t, engine.Options{AskClient: true})
		c := newClient(t, e)
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + taskCaps + `}`
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + composeCall + `,` + meta + `}}`)
		state := result(t, c.recv())["requestState"].(string)
		c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + composeCall + `,"requestState":"` + state +
			`","inputResponses":{"prompt":{"action":"accept","content":{"answer":"Alice"}}},` + meta + `}}`)
		id := result(t, c.recv())["taskId"].(string)
		c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
		c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
		synctest.Wait()
		c.send(`{"jsonrpc":"2.0","id":3,"method":"tasks/update","params":{"taskId":"` + id +
			`","inputResponses":{"input-1":{"action":"accept","content":{"answer":"blue"}}},` + meta + `}}`)
		result(t, c.recv())
		synctest.Wait()
		c.send(`{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"` + id + `",` + meta + `}}`)
		g := result(t, c.recv())
		if g["status"] != "completed" {
			t.Fatalf("tasks/get = %v, want completed", g)
		}
		if got := composeResult(t, g["result"].(map[string]any)); got["name"] != "Alice" || got["color"] != "blue" || got["task"] != true {
			t.Errorf("compose = %v", got)
		}
	})
}
