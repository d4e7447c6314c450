package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/agent"
	"github.com/agentmcp/agentmcp/adapters/openai"
	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/internal/enginetest"
)

// TestRemoteWalkAwayBlocksNoOne: on the remote host with the agent and
// asking on, alice starts a turn that needs her approval (a modern call,
// answered input_required) and walks away. Bob's submission runs its own
// turn beside hers and carol's read_file is served, while alice's turn
// stays parked (issue 25, item 6; issue 19, item 2; docs/SPEC.md §8, §9).
func TestRemoteWalkAwayBlocksNoOne(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := chatscript.New(t, func(req *chatscript.Request) chatscript.Reply {
		if req.LastUser() == "write x.txt" && len(req.Messages) == 2 {
			return chatscript.Reply{Calls: []chatscript.Call{{ID: "w", Name: "write_file", Arguments: `{"path":"x.txt","content":"x"}`}}}
		}
		return chatscript.Reply{Text: "served: " + req.LastUser()}
	})
	addr, iss := startRemoteAgent(t, root, srv, agent.Options{}, true, "alice", "bob", "carol")
	call := func(sub, tool, args string) string {
		t.Helper()
		tok := iss.token(t, false, func(c map[string]any) { c["sub"] = sub })
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}}}`
		_, got := postMCP(t, addr, tok, body, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool})
		return got
	}
	if got := call("alice", "agent_submit", `{"prompt":"write x.txt"}`); !strings.Contains(got, `"input_required"`) {
		t.Fatalf("alice's turn = %s, want it parked on her approval", got)
	}
	// alice walks away. Her turn stays parked; nobody else waits for it.
	if got := call("bob", "agent_submit", `{"prompt":"hello"}`); !strings.Contains(got, "served: hello") {
		t.Errorf("bob's turn while alice's is parked = %s", got)
	}
	if got := call("carol", "read_file", `{"path":"a.txt"}`); !strings.Contains(got, "alpha") {
		t.Errorf("carol's read_file while alice's turn is parked = %s", got)
	}
	if _, err := os.Stat(filepath.Join(root, "x.txt")); err == nil {
		t.Error("alice's unapproved write landed")
	}
}

// TestRemoteConversationsArePerPrincipal: on the remote host, each signed-in
// principal's conversation names are its own (docs/SPEC.md §9): bob's "a"
// is a new conversation that never sees alice's "a", his fork of "a" copies
// his own, his bad input (an illegal name, a 1 MB name, a fork of nothing,
// one conversation past his bound) is a tool error each that reaches no
// model, and alice's "a" goes on with exactly her turns; every success
// carries structuredContent on 2026-07-28.
func TestRemoteConversationsArePerPrincipal(t *testing.T) {
	srv := chatscript.New(t, func(req *chatscript.Request) chatscript.Reply {
		return chatscript.Reply{Text: "served: " + req.LastUser()}
	})
	addr, iss := startRemoteAgent(t, t.TempDir(), srv, agent.Options{MaxConversationsPerPrincipal: 2}, false, "alice", "bob")
	call := func(sub, args string) string {
		t.Helper()
		tok := iss.token(t, false, func(c map[string]any) { c["sub"] = sub })
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"agent_submit","arguments":` + args +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		_, got := postMCP(t, addr, tok, body, map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "agent_submit"})
		return got
	}
	seen := func() string {
		reqs := srv.Requests()
		return strings.Join(reqs[len(reqs)-1].UserPrompts(), "|")
	}
	ok := func(sub, args, wantSC, wantSeen string) {
		t.Helper()
		got := call(sub, args)
		if !strings.Contains(got, `"structuredContent":{"response":`) || !strings.Contains(got, wantSC) {
			t.Errorf("%s %s = %s, want structuredContent with %s", sub, args, got, wantSC)
		}
		if s := seen(); s != wantSeen {
			t.Errorf("%s %s: the model saw %q, want %q", sub, args, s, wantSeen)
		}
	}
	ok("alice", `{"prompt":"alice's secret","conversation":"a"}`, `"conversation":"a","turn":1`, "alice's secret")
	ok("bob", `{"prompt":"bob here","conversation":"a"}`, `"conversation":"a","turn":1`, "bob here")
	ok("bob", `{"prompt":"bob's fork","conversation":"b","fork_from":"a"}`, `"conversation":"b","turn":2`, "bob here|bob's fork")

	requests := len(srv.Requests())
	for _, c := range []struct{ args, want string }{
		{`{"prompt":"x","conversation":"a:b"}`, "is not a valid name"},
		{`{"prompt":"x","conversation":"` + strings.Repeat("z", 1_000_000) + `"}`, "(1000000 bytes)"},
		{`{"prompt":"x","conversation":"c","fork_from":"nothing"}`, "names no conversation of yours"},
		{`{"prompt":"x","conversation":"c"}`, "would be one more than the 2 conversations"},
	} {
		got := call("bob", c.args)
		if !strings.Contains(got, `"isError":true`) || !strings.Contains(got, c.want) || strings.Contains(got, "structuredContent") {
			t.Errorf("bob %.60s = %.300s, want a tool error with %q", c.args, got, c.want)
		}
	}
	if n := len(srv.Requests()); n != requests {
		t.Errorf("bad input reached the model: %d requests, want %d", n, requests)
	}
	ok("alice", `{"prompt":"again","conversation":"a"}`, `"conversation":"a","turn":2`, "alice's secret|again")
}

// startRemoteAgent serves the agent (over the workspace on root, its files
// as agentmcp://workspace/ resources as serve remote names them, its model
// srv, with opts) on the remote host for subjects, asking the client on
// when ask, and returns the host's address and the issuer of its tokens.
func startRemoteAgent(t *testing.T, root string, srv *chatscript.Server, opts agent.Options, ask bool, subjects ...string) (string, *testIssuer) {
	t.Helper()
	ws, err := workspace.New(workspace.Options{Root: root, Resources: workspace.WorkspaceURIs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	model, err := openai.New(openai.Options{Model: "m", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	session, err := agent.New(ws, model, opts)
	if err != nil {
		t.Fatal(err)
	}
	eng := enginetest.New(t, session, engine.Options{Name: "t", Version: "1", AskClient: ask}, 5*time.Second)
	iss := newTestIssuer(t)
	access := remoteAccess(iss.URL())
	access.AllowedSubjects = subjects
	access.HTTPClient = iss.Client()
	return startRemote(t, eng, nil, access), iss
}
