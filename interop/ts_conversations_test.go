package interop

import (
	"context"
	"strings"
	"testing"
)

// TestTypeScriptSDKNamedConversations: over stdio and over the loopback
// host, the official TypeScript SDK client (which validates a tool's
// structuredContent against the outputSchema tools/list gave it, with Ajv)
// keeps two named conversations apart, forks one (the parent does not see
// the fork's turns), and after a restart on the same --state-dir continues
// both; every result passes the SDK's validation. The same client refuses
// a result of agent_submit without structuredContent and one whose
// structuredContent lacks turn (ts/agent.mjs changes them before the SDK
// reads them): so it holds the server to the schema it declared
// (docs/SPEC.md §2, §3.2, §9).
func TestTypeScriptSDKNamedConversations(t *testing.T) {
	t.Parallel()
	node := tsNode(t)
	for _, carrier := range []string{"stdio", "http"} {
		t.Run(carrier, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			ws := newWorkspace(t)
			ep := newChatEndpoint(t)
			flags := []string{"--model", "scripted", "--model-url", ep.url, "--state-dir", t.TempDir()}
			run := func(calls []map[string]any) agentReport {
				t.Helper()
				scenario := map[string]any{"list": true, "calls": calls}
				if carrier == "stdio" {
					scenario["command"] = binPath
					scenario["args"] = append([]string{"serve", "stdio", "--root", ws.root}, flags...)
				} else {
					h := startHTTPHost(ctx, t, ws, serverStderr(t), flags...)
					defer h.stop()
					scenario["url"], scenario["tokenFile"] = h.url, h.tokenFile
				}
				r := startAgentScript(ctx, t, node, scenario)
				report := r.wait(t)
				if len(report.Calls) != len(calls) || len(report.TransportErrors) > 0 {
					t.Fatalf("report: %d calls of %d, transport errors %q", len(report.Calls), len(calls), report.TransportErrors)
				}
				return report
			}
			call := func(prompt, conv string) map[string]any {
				return map[string]any{"prompt": prompt, "conversation": conv}
			}
			first := []map[string]any{
				call("apple", "a"), call("banana", "b"), call("apple again", "a"),
				{"prompt": "fork", "conversation": "a2", "fork_from": "a"}, call("parent", "a"),
				{"prompt": "dropped", "conversation": "t", "tamper": "drop"},
				{"prompt": "malformed", "conversation": "t", "tamper": "malform"},
			}
			// What each turn's model request held (user prompts), and its number.
			want := []struct {
				seen string
				turn float64
			}{
				{"apple", 1}, {"banana", 1}, {"apple|apple again", 2}, {"apple|apple again|fork", 3},
				{"apple|apple again|parent", 3}, {"dropped", 1}, {"dropped|malformed", 2},
				{"banana|after restart", 2}, {"apple|apple again|fork|after restart", 4},
			}
			second := []map[string]any{call("after restart", "b"), call("after restart", "a2")}
			report := run(first)
			restart := run(second) // a new process on the same state directory
			calls := append(report.Calls, restart.Calls...)
			all := append(first, second...)
			reqs := ep.recorded()
			if len(reqs) != len(want) {
				t.Fatalf("the model got %d requests, want %d", len(reqs), len(want))
			}
			for i, c := range calls {
				args := all[i]
				if got := userPrompts(reqs[i]); got != want[i].seen {
					t.Errorf("call %d %v: the model saw %q, want %q", i+1, args, got, want[i].seen)
				}
				switch args["tamper"] {
				case "drop":
					if c.Error == nil || !strings.Contains(*c.Error, "has an output schema but did not return structured content") {
						t.Errorf("call %d: a result without structuredContent: error %v, want the SDK's refusal", i+1, c.Error)
					}
					continue
				case "malform":
					if c.Error == nil || !strings.Contains(*c.Error, "does not match the tool's output schema") {
						t.Errorf("call %d: structuredContent without turn: error %v, want the SDK's refusal", i+1, c.Error)
					}
					continue
				}
				if c.Error != nil || c.Result == nil || c.Result.IsError || len(c.Result.Content) != 1 {
					t.Errorf("call %d %v: result %+v, error %v", i+1, args, c.Result, c.Error)
					continue
				}
				sc := c.Result.StructuredContent
				if text := c.Result.Content[0].Text; sc["response"] != text || text != "still here: "+args["prompt"].(string) ||
					sc["conversation"] != args["conversation"] || sc["turn"] != want[i].turn {
					t.Errorf("call %d %v: text %q, structuredContent %v; want turn %v", i+1, args, text, sc, want[i].turn)
				}
			}
		})
	}
}
