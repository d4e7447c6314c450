package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/sqlite"
	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/ports"
)

// TestSubmitConversationsOverTheWire drives the real serve stdio with
// --model and a SQLite store: agent_submit advertises conversation,
// fork_from and its outputSchema; two named conversations interleaved keep
// their memories apart; a fork remembers its parent's turns and the parent
// does not see the fork's; a restart keeps them all; each result's structuredContent carries the
// report; and every bad input — each illegal name shape, a 1 MB name,
// fork_from naming itself or nothing or without conversation, a fork onto
// an existing conversation, one conversation past
// --max-conversations-per-principal — is a tool error that reaches no
// model and changes nothing: the principal's conversations stay as they
// were and another principal's, stored beforehand, untouched (docs/SPEC.md
// §2, §3.2, §9).
func TestSubmitConversationsOverTheWire(t *testing.T) {
	state, root := t.TempDir(), t.TempDir()
	realRoot, _ := filepath.EvalSymlinks(root)
	s, err := sqlite.Open(filepath.Join(state, sqlite.FileName), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	alice := ports.RefOf(realRoot, ports.Principal{Issuer: "https://issuer", Subject: "alice", Client: "c"}).Named("a")
	aliceTurn := ports.Turn{Messages: []ports.Message{{Role: ports.RoleUser, Content: "alice's secret"}, {Role: ports.RoleAssistant, Content: "noted"}}, Bytes: 100}
	if _, err := s.Append(context.Background(), alice, aliceTurn, ports.AppendOptions{MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	srv := chatscript.New(t, func(r *chatscript.Request) chatscript.Reply {
		return chatscript.Reply{Text: "ok: " + r.LastUser(), Usage: &chatscript.Usage{Prompt: 11, Completion: 3}}
	})
	t.Setenv("OPENAI_API_KEY", fakeKey)
	r := serveStdio(t, "--root", root, "--model", "m", "--model-url", srv.URL, "--state-dir", state,
		"--max-conversations-per-principal", "3")
	r.roundTrip(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)

	list := r.roundTrip(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if !strings.Contains(list, `"conversation":{"type":"string"`) || !strings.Contains(list, `"fork_from":{"type":"string"`) ||
		!strings.Contains(list, `"outputSchema":`+string(ports.TurnResultSchema)) {
		t.Fatalf("agent_submit does not advertise conversations: %s", list)
	}

	id := 1
	call := func(args string) (text string, isErr bool, sc map[string]any) {
		t.Helper()
		id++
		line := r.roundTrip(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"agent_submit","arguments":%s}}`, id, args))
		text, isErr = submitText(t, line)
		var resp struct {
			Result struct {
				StructuredContent map[string]any `json:"structuredContent"`
			} `json:"result"`
		}
		json.Unmarshal([]byte(line), &resp)
		return text, isErr, resp.Result.StructuredContent
	}
	// seen is the user prompts the model was shown in its latest request.
	seen := func() string {
		reqs := srv.Requests()
		return strings.Join(reqs[len(reqs)-1].UserPrompts(), "|")
	}
	ok := func(args, wantConv string, wantTurn float64, wantSeen string) {
		t.Helper()
		text, isErr, sc := call(args)
		if isErr || sc == nil || sc["response"] != text || sc["conversation"] != wantConv || sc["turn"] != wantTurn {
			t.Fatalf("%s: %q (error %v), structuredContent %v; want %s turn %v", args, text, isErr, sc, wantConv, wantTurn)
		}
		if u, _ := sc["usage"].(map[string]any); u["input_tokens"] != 11.0 || u["output_tokens"] != 3.0 {
			t.Errorf("%s: usage %v", args, sc["usage"])
		}
		if got := seen(); got != wantSeen {
			t.Errorf("%s: the model saw %q, want %q", args, got, wantSeen)
		}
	}
	ok(`{"prompt":"apple","conversation":"a"}`, "a", 1, "apple")
	ok(`{"prompt":"banana","conversation":"b"}`, "b", 1, "banana")
	ok(`{"prompt":"apple again","conversation":"a"}`, "a", 2, "apple|apple again")
	ok(`{"prompt":"fork","conversation":"a2","fork_from":"a"}`, "a2", 3, "apple|apple again|fork")
	ok(`{"prompt":"parent","conversation":"a"}`, "a", 3, "apple|apple again|parent")

	requests := len(srv.Requests())
	for _, c := range []struct{ args, want string }{
		{`{"prompt":"x","conversation":""}`, "is not a valid name"},
		{`{"prompt":"x","conversation":"a b"}`, "is not a valid name"},
		{`{"prompt":"x","conversation":"a/b"}`, "is not a valid name"},
		{`{"prompt":"x","conversation":"../a"}`, "is not a valid name"},
		{`{"prompt":"x","conversation":"a\u0000"}`, "is not a valid name"},
		{`{"prompt":"x","conversation":"ä"}`, "is not a valid name"},
		{`{"prompt":"x","conversation":"` + strings.Repeat("z", 65) + `"}`, "(65 bytes)"},
		{`{"prompt":"x","conversation":"` + strings.Repeat("z", 1<<20) + `"}`, "(1048576 bytes)"},
		{`{"prompt":"x","conversation":"c","fork_from":"` + strings.Repeat("z", 1<<20) + `"}`, "(1048576 bytes)"},
		{`{"prompt":"x","conversation":7}`, "optional string conversation and fork_from"},
		{`{"prompt":"x","conversation":"a","conversation":"b"}`, "optional string conversation and fork_from"},
		{`{"prompt":"x","fork_from":"a"}`, "fork_from needs conversation"},
		{`{"prompt":"x","conversation":"c","fork_from":"c"}`, "names the conversation itself"},
		{`{"prompt":"x","conversation":"c","fork_from":"nothing"}`, "names no conversation of yours"},
		{`{"prompt":"x","conversation":"b","fork_from":"a"}`, "already exists"},
		{`{"prompt":"x","conversation":"c","fork_from":"a"}`, "would be one more than the 3 conversations"},
		{`{"prompt":"x","conversation":"c"}`, "would be one more than the 3 conversations"},
	} {
		text, isErr, sc := call(c.args)
		if !isErr || !strings.Contains(text, c.want) || sc != nil || len(text) > 600 {
			t.Errorf("%.80s: %.200q (error %v, structuredContent %v), want a tool error with %q", c.args, text, isErr, sc, c.want)
		}
	}
	if n := len(srv.Requests()); n != requests {
		t.Errorf("bad input reached the model: %d requests, want %d", n, requests)
	}
	// The conversations are as they were: a's history is whole, and the
	// fork still has the turn it started with.
	ok(`{"prompt":"still here","conversation":"a"}`, "a", 4, "apple|apple again|parent|still here")
	ok(`{"prompt":"fork again","conversation":"a2"}`, "a2", 4, "apple|apple again|fork|fork again")

	// A restart keeps every named conversation.
	r.in.Close()
	code := <-r.code
	r.code <- code // for serveStdio's cleanup
	r = serveStdio(t, "--root", root, "--model", "m", "--model-url", srv.URL, "--state-dir", state,
		"--max-conversations-per-principal", "3")
	r.roundTrip(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	ok(`{"prompt":"after restart","conversation":"b"}`, "b", 2, "banana|after restart")
	ok(`{"prompt":"after restart","conversation":"a2"}`, "a2", 5, "apple|apple again|fork|fork again|after restart")

	s, err = sqlite.Open(filepath.Join(state, sqlite.FileName), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	turns, err := s.Load(context.Background(), alice)
	if err != nil || len(turns) != 1 || turns[0].Messages[0].Content != "alice's secret" {
		t.Errorf("another principal's conversation: %+v, %v; want it untouched", turns, err)
	}
	infos, err := s.List(context.Background(), ports.ConversationFilter{})
	var names []string
	for _, in := range infos {
		names = append(names, in.Ref.Name)
	}
	if err != nil || len(infos) != 4 {
		t.Errorf("stored conversations %v, %v; want alice's a and the local a, b, a2", names, err)
	}
}
