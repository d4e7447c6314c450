package interop

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoSDKNamedConversations: over stdio and over the loopback host, the
// official Go SDK client at 2026-07-28 finds agent_submit's conversation
// and fork_from arguments and its outputSchema; two named conversations
// interleaved keep their memories apart (each model request holds only its
// conversation's turns); a fork starts with what its parent knew, and the
// parent does not see the fork's later turns; a new process on the same
// --state-dir keeps every named conversation; every result's
// structuredContent validates against the declared outputSchema
// (google/jsonschema-go, the go-sdk's validator), which rejects a result
// missing a member or with a stopped outside its enum (docs/SPEC.md §2,
// §3.2, §9).
func TestGoSDKNamedConversations(t *testing.T) {
	t.Parallel()
	for _, carrier := range []string{"stdio", "http"} {
		t.Run(carrier, func(t *testing.T) {
			t.Parallel()
			ctx, ws, ep, flags := storeFixture(t)
			var schema *jsonschema.Resolved
			connect := func() (*goSDKCarrier, *mcp.ClientSession) {
				c := newGoSDKCarrier(ctx, t, carrier, ws, serverStderr(t), flags...)
				cs := c.connect(ctx, t, mcp.NewClient(&mcp.Implementation{Name: "agentmcp-interop-conversations", Version: "v1"}, nil), modernVersion)
				schema = submitOutputSchema(ctx, t, cs)
				return c, cs
			}
			turn := func(cs *mcp.ClientSession, args map[string]any, wantTurn float64, wantSeen string) map[string]any {
				t.Helper()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "agent_submit", Arguments: args})
				if err != nil {
					t.Fatalf("agent_submit %v: %v", args, err)
				}
				text := singleText(t, "agent_submit", res)
				if res.IsError || text != "still here: "+args["prompt"].(string) {
					t.Fatalf("agent_submit %v = {isError:%v text:%q}", args, res.IsError, text)
				}
				sc := structured(t, res)
				if err := schema.Validate(sc); err != nil {
					t.Errorf("agent_submit %v: structuredContent %v does not validate against the outputSchema: %v", args, sc, err)
				}
				want := args["conversation"]
				if want == nil {
					want = "default"
				}
				if sc["response"] != text || sc["conversation"] != want || sc["turn"] != wantTurn {
					t.Errorf("agent_submit %v: structuredContent %v, want response %q, conversation %v, turn %v", args, sc, text, want, wantTurn)
				}
				reqs := ep.recorded()
				if got := userPrompts(reqs[len(reqs)-1]); got != wantSeen {
					t.Errorf("agent_submit %v: the model saw %q, want %q", args, got, wantSeen)
				}
				return sc
			}
			conv := func(prompt, name string) map[string]any {
				return map[string]any{"prompt": prompt, "conversation": name}
			}

			c, cs := connect()
			turn(cs, conv("apple", "a"), 1, "apple")
			turn(cs, conv("banana", "b"), 1, "banana")
			turn(cs, conv("apple again", "a"), 2, "apple|apple again")
			turn(cs, conv("banana again", "b"), 2, "banana|banana again")
			turn(cs, map[string]any{"prompt": "fork", "conversation": "a2", "fork_from": "a"}, 3, "apple|apple again|fork")
			turn(cs, conv("parent", "a"), 3, "apple|apple again|parent")
			sc := turn(cs, map[string]any{"prompt": "plain"}, 1, "plain")
			c.close(t)

			c, cs = connect() // a new process on the same state directory
			turn(cs, conv("after restart", "b"), 3, "banana|banana again|after restart")
			turn(cs, conv("after restart", "a2"), 4, "apple|apple again|fork|after restart")
			turn(cs, conv("after restart", "a"), 4, "apple|apple again|parent|after restart")
			turn(cs, map[string]any{"prompt": "after restart"}, 2, "plain|after restart")
			c.close(t)

			// The same validator refuses malformed results.
			for name, mutate := range map[string]func(m map[string]any){
				"no turn":         func(m map[string]any) { delete(m, "turn") },
				"turn 0":          func(m map[string]any) { m["turn"] = 0.0 },
				"unknown stopped": func(m map[string]any) { m["stopped"] = "tired" },
				"extra member":    func(m map[string]any) { m["mood"] = "good" },
				"bad tool call":   func(m map[string]any) { m["tool_calls"] = []any{map[string]any{"name": "x"}} },
			} {
				bad := map[string]any{}
				for k, v := range sc {
					bad[k] = v
				}
				mutate(bad)
				if err := schema.Validate(bad); err == nil {
					t.Errorf("%s: the outputSchema accepts %v", name, bad)
				}
			}
		})
	}
}

// submitOutputSchema lists the tools and returns agent_submit's
// outputSchema, resolved; it fails t unless the input schema names
// conversation and fork_from.
func submitOutputSchema(ctx context.Context, t *testing.T, cs *mcp.ClientSession) *jsonschema.Resolved {
	t.Helper()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	for _, tool := range tools.Tools {
		if tool.Name != "agent_submit" {
			continue
		}
		in, _ := json.Marshal(tool.InputSchema)
		if !strings.Contains(string(in), `"conversation"`) || !strings.Contains(string(in), `"fork_from"`) {
			t.Fatalf("agent_submit's input schema %s lacks conversation or fork_from", in)
		}
		out, _ := json.Marshal(tool.OutputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(out, &s); err != nil {
			t.Fatalf("agent_submit's outputSchema %s: %v", out, err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("agent_submit's outputSchema %s does not resolve: %v", out, err)
		}
		return rs
	}
	t.Fatalf("no agent_submit in tools/list")
	return nil
}

// structured returns a result's structuredContent as a JSON object.
func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, _ := json.Marshal(res.StructuredContent)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		t.Fatalf("structuredContent %s is not an object", b)
	}
	return m
}

// userPrompts is a model request's user messages joined by "|".
func userPrompts(r chatRequest) string {
	var us []string
	for _, m := range r.Messages {
		if m.Role == "user" {
			us = append(us, m.Content)
		}
	}
	return strings.Join(us, "|")
}
