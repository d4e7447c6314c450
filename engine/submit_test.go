package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/ports"
)

// convSession keeps named conversations (ports.ConversationSession) as far
// as the engine can tell: it records each submission and answers by its
// prompt: "refuse" is a refusal, "noreport" a success without a report,
// anything else a turn of the submission's conversation.
type convSession struct {
	mu   sync.Mutex
	subs []ports.Submission
}

func (s *convSession) RuntimeTools(context.Context) ([]domain.Tool, error) { return nil, nil }
func (s *convSession) InvokeTool(context.Context, string, json.RawMessage, ports.Caller) (domain.Envelope, error) {
	return domain.Envelope{}, errors.New("no tools")
}
func (s *convSession) Conversations() bool { return true }

func (s *convSession) Submit(_ context.Context, sub ports.Submission, _ ports.Caller) (ports.TurnResult, error) {
	s.mu.Lock()
	s.subs = append(s.subs, sub)
	s.mu.Unlock()
	switch sub.Prompt {
	case "refuse":
		return ports.TurnResult{}, ports.Refused("conversation b already exists")
	case "noreport":
		return ports.TurnResult{Response: "text alone"}, nil
	}
	name := sub.Conversation
	if name == "" {
		name = domain.DefaultConversation
	}
	return ports.TurnResult{Response: "answer to " + sub.Prompt, Report: &ports.TurnReport{
		Conversation: name, Turn: 2,
		ChangedFiles: []ports.ChangedFile{{Path: "a.txt", Added: 3, Removed: 1}},
		ToolCalls:    []ports.ToolCallReport{{Name: "write_file", OK: true}},
		Usage:        ports.TokenUsage{InputTokens: 7, OutputTokens: 5},
		Stopped:      ports.StopMaxSteps,
	}}, nil
}

func (s *convSession) submissions() []ports.Submission {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ports.Submission(nil), s.subs...)
}

// rawRecv is recv with the message's bytes too.
func rawRecv(t *testing.T, c *client) (map[string]any, string) {
	t.Helper()
	b := <-c.out
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	return m, string(b)
}

// submitTool returns agent_submit from a tools/list result.
func submitTool(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	tools, _ := result(t, m)["tools"].([]any)
	for _, x := range tools {
		if tool, _ := x.(map[string]any); tool["name"] == "agent_submit" {
			return tool
		}
	}
	t.Fatalf("no agent_submit in %v", m)
	return nil
}

// TestConversationalSubmitSchema: a session that keeps conversations gets
// agent_submit with conversation and fork_from on every revision, and the
// outputSchema on 2025-06-18 and later (2026-07-28 included); a session
// that does not keeps the {prompt} schema byte for byte and no
// outputSchema on every revision (docs/SPEC.md §2).
func TestConversationalSubmitSchema(t *testing.T) {
	plainSchema := `"inputSchema":{"type":"object","properties":{"prompt":{"type":"string","minLength":1}},"required":["prompt"],"additionalProperties":false}`
	for _, conv := range []bool{true, false} {
		var s ports.Session = fake.New()
		if conv {
			s = &convSession{}
		}
		e, err := engine.New(s, engine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"} {
			c := newClient(t, e)
			if v == "2026-07-28" {
				c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{` + modernNoElicit + `}}`)
			} else {
				c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + v + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
				c.recv()
				c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
			}
			m, raw := rawRecv(t, c)
			tool := submitTool(t, m)
			_, hasOut := tool["outputSchema"]
			wantOut := conv && v >= "2025-06-18"
			if hasOut != wantOut {
				t.Errorf("conv %v, %s: outputSchema present %v, want %v", conv, v, hasOut, wantOut)
			}
			if wantOut && !strings.Contains(raw, `"outputSchema":`+string(ports.TurnResultSchema)) {
				t.Errorf("conv %v, %s: outputSchema is not ports.TurnResultSchema: %s", conv, v, raw)
			}
			wantIn := plainSchema
			if conv {
				wantIn = `"inputSchema":` + string(domain.SubmitConversationInputSchema)
			}
			if !strings.Contains(raw, wantIn) {
				t.Errorf("conv %v, %s: want %s in %s", conv, v, wantIn, raw)
			}
		}
		shutdown(t, e)
	}
}

// TestConversationalSubmitResult: the arguments reach the session as
// given; a success carries the response as its text block and
// structuredContent {"response", ...report} on 2025-06-18 and later, the
// text alone before; a bad name is a tool error naming the rule and the
// session is not called; a refusal is a tool error; a success without a
// report is -32603 (docs/SPEC.md §3.2, §9).
func TestConversationalSubmitResult(t *testing.T) {
	s := &convSession{}
	e, err := engine.New(s, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(t, e) })
	const wantSC = `"structuredContent":{"response":"answer to hi","conversation":"b","turn":2,"changed_files":[{"path":"a.txt","added":3,"removed":1}],"tool_calls":[{"name":"write_file","ok":true}],"usage":{"input_tokens":7,"output_tokens":5},"stopped":"max_steps"}`
	for _, v := range []string{"2025-03-26", "2025-06-18", "2026-07-28"} {
		c := newClient(t, e)
		meta := ""
		if v == "2026-07-28" {
			meta = "," + modernNoElicit
		} else {
			c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + v + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			c.recv()
		}
		call := func(args string) (map[string]any, string) {
			c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"agent_submit","arguments":` + args + meta + `}}`)
			return rawRecv(t, c)
		}
		before := len(s.submissions())
		m, raw := call(`{"prompt":"hi","conversation":"b","fork_from":"default"}`)
		subs := s.submissions()
		if len(subs) != before+1 || subs[len(subs)-1] != (ports.Submission{Prompt: "hi", Conversation: "b", ForkFrom: "default"}) {
			t.Fatalf("%s: the session got %+v", v, subs[before:])
		}
		r := result(t, m)
		content, _ := r["content"].([]any)
		if len(content) != 1 || content[0].(map[string]any)["text"] != "answer to hi" || r["isError"] != nil {
			t.Errorf("%s: result %v, want the response as the one text block", v, r)
		}
		if got := strings.Contains(raw, wantSC); got != (v >= "2025-06-18") {
			t.Errorf("%s: structuredContent present %v: %s", v, got, raw)
		}
		if v < "2025-06-18" && strings.Contains(raw, "structuredContent") {
			t.Errorf("%s: an older client got structuredContent: %s", v, raw)
		}

		for _, bad := range []struct{ args, want string }{
			{`{"prompt":"hi","conversation":"a b"}`, domain.ConversationNameRule},
			{`{"prompt":"hi","fork_from":"` + strings.Repeat("x", 1<<20) + `"}`, "(1048576 bytes)"},
			{`{"prompt":"hi","conversation":7}`, "optional string conversation and fork_from"},
			{`{"prompt":"hi","thread":"a"}`, "no other arguments"},
		} {
			before := len(s.submissions())
			m, _ := call(bad.args)
			r := result(t, m)
			text, _ := r["content"].([]any)[0].(map[string]any)["text"].(string)
			if r["isError"] != true || !strings.Contains(text, bad.want) || r["structuredContent"] != nil {
				t.Errorf("%s %.60s: %v, want a tool error with %q", v, bad.args, r, bad.want)
			}
			if len(s.submissions()) != before {
				t.Errorf("%s %.60s: the session was called", v, bad.args)
			}
		}
		m, _ = call(`{"prompt":"refuse","conversation":"b","fork_from":"a"}`)
		if r := result(t, m); r["isError"] != true || r["content"].([]any)[0].(map[string]any)["text"] != "conversation b already exists" {
			t.Errorf("%s: a refusal: %v, want its tool error", v, r)
		}
		m, _ = call(`{"prompt":"noreport"}`)
		if errorCode(m) != -32603 || !strings.Contains(m["error"].(map[string]any)["message"].(string), "reported no turn result") {
			t.Errorf("%s: a success without a report: %v, want -32603", v, m)
		}
	}
}

// TestConversationalSubmitTask: a task's result carries the
// structuredContent too, on 2025-11-25 (tasks/result) and 2026-07-28
// (tasks/get) (docs/SPEC.md §9, §14).
func TestConversationalSubmitTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := engine.New(&convSession{}, engine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { shutdown(t, e) })
		c := newClient(t, e)
		const wantSC = `"structuredContent":{"response":"answer to t","conversation":"default","turn":2,`
		c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		c.recv()
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"t"},"task":{}}}`)
		id := result(t, c.recv())["task"].(map[string]any)["taskId"].(string)
		synctest.Wait()
		c.recv() // notifications/tasks/status
		c.send(`{"jsonrpc":"2.0","id":2,"method":"tasks/result","params":{"taskId":"` + id + `"}}`)
		if _, raw := rawRecv(t, c); !strings.Contains(raw, wantSC) {
			t.Errorf("2025-11-25 tasks/result: %s, want %s", raw, wantSC)
		}

		modern := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + taskCaps + `}`
		c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"t"},` + modern + `}}`)
		id = result(t, c.recv())["taskId"].(string)
		synctest.Wait()
		c.send(`{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"` + id + `",` + modern + `}}`)
		if _, raw := rawRecv(t, c); !strings.Contains(raw, `"status":"completed"`) || !strings.Contains(raw, wantSC) {
			t.Errorf("2026-07-28 tasks/get: %s, want %s", raw, wantSC)
		}
	})
}
