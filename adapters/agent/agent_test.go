package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/agent"
	"github.com/agentmcp/agentmcp/adapters/openai"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/ports"
	"github.com/agentmcp/agentmcp/ports/porttest"
)

func errorsIsRefused(err error) bool { return errors.Is(err, ports.ErrRefused) }
func clientMessage(err error) string { return domain.ClientMessage(err) }

// TestContract runs the port's contract suite against the agent-backed
// session: the workspace's tools, turns answered by the scripted endpoint
// ("re: <prompt>").
func TestContract(t *testing.T) {
	porttest.TestSession(t, func(t *testing.T) porttest.Fixture {
		files := map[string]string{"hello.txt": "hello, world\n"}
		for i := range workspaceProgressFiles {
			files[fmt.Sprintf("many/f%04d.txt", i)] = "needle\n"
		}
		r := newRig(t, rigOptions{files: files, answer: func(req *chatscript.Request) chatscript.Reply {
			return text("re: " + req.LastUser())
		}})
		return porttest.Fixture{
			Session:     r.session,
			ReadOnly:    porttest.Call{Tool: "read_file", Arguments: json.RawMessage(`{"path":"hello.txt"}`)},
			Cancellable: porttest.Call{Tool: "search_text", Arguments: json.RawMessage(`{"pattern":"needle","path":"many"}`)},
			Guarded:     porttest.Call{Tool: "write_file", Arguments: json.RawMessage(`{"path":"porttest.txt","content":"written"}`)},
			SideEffect: func() bool {
				_, err := os.Lstat(filepath.Join(r.root, "porttest.txt"))
				return err == nil
			},
			Turn: func(i int) (string, string) {
				p := fmt.Sprintf("prompt %d", i)
				return p, "re: " + p
			},
		}
	})
}

// workspaceProgressFiles leaves search_text work after its first progress
// report (it reports every 100 files).
const workspaceProgressFiles = 150

func TestTurnWithoutTools(t *testing.T) {
	r := newRig(t, rigOptions{script: []chatscript.Reply{text("Hello there, ünïcödé ✓.")}})
	c := newCaller()
	reqs := r.turnRequests(t, "Say hello.", c, "Hello there, ünïcödé ✓.", 1)
	req := reqs[0]
	if req.Model != "scripted-model" || !req.Stream {
		t.Errorf("model %q stream %v, want scripted-model streamed", req.Model, req.Stream)
	}
	if roles(req) != "system user" || req.Messages[1].Content != "Say hello." {
		t.Errorf("messages = %s: %q", roles(req), contents(req))
	}
	system := req.Messages[0].Content
	for _, want := range []string{`"testspace"`, "list_dir", "read_file", "search_text", "write_file", "approval"} {
		if !strings.Contains(system, want) {
			t.Errorf("the default system prompt lacks %q:\n%s", want, system)
		}
	}
	// The tools are the workspace's, each schema sent as the parameters.
	tools, _ := r.ws.RuntimeTools(t.Context())
	if len(req.Tools) != len(tools) {
		t.Fatalf("%d tools sent, want %d", len(req.Tools), len(tools))
	}
	for i, tool := range tools {
		got := req.Tools[i]
		if got.Type != "function" || got.Function.Name != tool.Name || got.Function.Description != tool.Description || string(got.Function.Parameters) != string(tool.InputSchema) {
			t.Errorf("tool %d sent as %+v, want %s with its schema", i, got, tool.Name)
		}
	}
	if auth := req.Header.Get("Authorization"); auth != "" {
		t.Errorf("Authorization %q sent without a key", auth)
	}
	if msgs := c.messages(); len(msgs) == 0 || msgs[0] != "model step 1" {
		t.Errorf("progress messages = %q, want model step 1 first", msgs)
	}
}

func TestSystemPromptReplaced(t *testing.T) {
	r := newRig(t, rigOptions{script: []chatscript.Reply{text("ok")}, agent: agent.Options{SystemPrompt: "You are terse."}})
	r.turn(t, "hi", nil)
	if req := r.srv.Requests()[0]; req.Messages[0].Role != "system" || req.Messages[0].Content != "You are terse." {
		t.Errorf("first message = %+v, want the configured system prompt", req.Messages[0])
	}
}

// TestTurnListsReadsSearches runs the three read-only tools through the
// model's calls, two of them in one step, and checks what the model reads
// back and the progress the client sees.
func TestTurnListsReadsSearches(t *testing.T) {
	r := newRig(t, rigOptions{
		files: map[string]string{"notes/a.txt": "alpha needle\n", "notes/b.txt": "beta\n"},
		script: []chatscript.Reply{
			calls("list_dir", `{"path":"notes"}`, "read_file", `{"path":"notes/a.txt"}`),
			calls("search_text", `{"pattern":"needle"}`),
			text("a.txt holds the needle."),
		},
	})
	c := newCaller()
	reqs := r.turnRequests(t, "Where is the needle?", c, "a.txt holds the needle.", 3)
	if got := roles(reqs[1]); got != "system user assistant tool tool" {
		t.Fatalf("second request roles = %s", got)
	}
	asst := reqs[1].Messages[2]
	if len(asst.ToolCalls) != 2 || asst.ToolCalls[0].Function.Name != "list_dir" || asst.ToolCalls[1].Function.Arguments != `{"path":"notes/a.txt"}` {
		t.Errorf("assistant message sent back = %+v", asst)
	}
	tm := toolMessages(reqs[1])
	for i, m := range tm {
		if m.ToolCallID != asst.ToolCalls[i].ID {
			t.Errorf("tool message %d answers %q, want %q", i, m.ToolCallID, asst.ToolCalls[i].ID)
		}
	}
	if ok, res, _ := envelopeOf(t, tm[0]); !ok || !strings.Contains(string(res), `"a.txt"`) || !strings.Contains(string(res), `"b.txt"`) {
		t.Errorf("list_dir result = %s", res)
	}
	if ok, res, _ := envelopeOf(t, tm[1]); !ok || !strings.Contains(string(res), "alpha needle") {
		t.Errorf("read_file result = %s", res)
	}
	if got := roles(reqs[2]); got != "system user assistant tool tool assistant tool" {
		t.Fatalf("third request roles = %s", got)
	}
	if ok, res, _ := envelopeOf(t, toolMessages(reqs[2])[2]); !ok || !strings.Contains(string(res), `"notes/a.txt"`) {
		t.Errorf("search_text result = %s", res)
	}

	msgs := c.messages()
	want := []string{"model step 1", "calling list_dir", "calling read_file", "model step 2", "calling search_text", "model step 3"}
	var got []string
	for _, m := range msgs {
		if slices.Contains(want, m) {
			got = append(got, m)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("progress messages = %q, want %q in order", msgs, want)
	}
	vals := c.progressValues()
	for i := 1; i < len(vals); i++ {
		if vals[i] <= vals[i-1] {
			t.Errorf("progress values %v do not strictly increase", vals)
			break
		}
	}
	if p := c.Prompts(); len(p) > 0 {
		t.Errorf("read-only tools raised prompts: %v", p)
	}
}

// TestWriteNeedsApproval: the model's write_file asks through the
// submission's own Caller; allowed once it writes, denied it writes nothing
// and the model reads the denial.
func TestWriteNeedsApproval(t *testing.T) {
	for _, allow := range []bool{true, false} {
		t.Run(fmt.Sprintf("allow=%v", allow), func(t *testing.T) {
			r := newRig(t, rigOptions{script: []chatscript.Reply{
				calls("write_file", `{"path":"out.txt","content":"from the model\n"}`),
				text("finished"),
			}})
			c := newCaller()
			c.Allow = allow
			r.turn(t, "Write out.txt", c)
			perms, _ := c.Requests()
			if len(perms) != 1 || perms[0].Tool != "write_file" || perms[0].Agent != "" {
				t.Fatalf("permission prompts = %+v, want one for write_file", perms)
			}
			content, exists := r.file(t, "out.txt")
			ok, _, errText := envelopeOf(t, toolMessages(r.srv.Requests()[1])[0])
			if allow {
				if !exists || content != "from the model\n" || !ok {
					t.Errorf("allowed: file %q (exists %v), result ok %v %q", content, exists, ok, errText)
				}
			} else {
				if exists || ok || !strings.Contains(strings.ToLower(errText), "permission") {
					t.Errorf("denied: file exists %v, result ok %v %q; want no file and a permission error", exists, ok, errText)
				}
			}
		})
	}
}

func TestMultiTurnMemory(t *testing.T) {
	r := newRig(t, rigOptions{script: []chatscript.Reply{
		calls("read_file", `{"path":"a.txt"}`), text("It says alpha."),
		text("You asked about a.txt."),
	}, files: map[string]string{"a.txt": "alpha"}})
	r.turn(t, "What does a.txt say?", nil)
	r.turn(t, "What did I ask?", nil)
	reqs := r.srv.Requests()
	last := reqs[len(reqs)-1]
	if got := roles(last); got != "system user assistant tool assistant user" {
		t.Fatalf("turn 2 request roles = %s", got)
	}
	if last.Messages[1].Content != "What does a.txt say?" || last.Messages[4].Content != "It says alpha." || last.Messages[5].Content != "What did I ask?" {
		t.Errorf("turn 2 request does not carry turn 1: %q", contents(last))
	}
}

// TestStepBound: a model that never stops calling tools ends the turn at
// the bound with a response that says so; the conversation stays valid.
func TestStepBound(t *testing.T) {
	var n int
	var mu sync.Mutex
	r := newRig(t, rigOptions{agent: agent.Options{MaxSteps: 3}, files: map[string]string{"a.txt": "a"},
		answer: func(req *chatscript.Request) chatscript.Reply {
			mu.Lock()
			defer mu.Unlock()
			n++
			if req.LastUser() == "next" {
				return text("fresh")
			}
			return chatscript.Reply{Calls: []chatscript.Call{{ID: fmt.Sprintf("c%d", n), Name: "read_file", Arguments: `{"path":"a.txt"}`}}}
		}})
	got := r.turn(t, "loop forever", nil)
	if !strings.Contains(got, "3 model steps") {
		t.Errorf("response = %q, want it to say the turn stopped at 3 model steps", got)
	}
	if len(r.srv.Requests()) != 3 {
		t.Errorf("%d model requests, want 3", len(r.srv.Requests()))
	}
	if got := r.turn(t, "next", nil); got != "fresh" {
		t.Errorf("next turn = %q", got)
	}
	last := r.srv.Requests()[3]
	checkToolCallsAnswered(t, last)
	if !strings.Contains(contents(last), "3 model steps") {
		t.Errorf("the next request does not carry the bounded turn's answer")
	}
}

// checkToolCallsAnswered checks that every assistant tool call in req is
// followed by its tool message before the next non-tool message.
func checkToolCallsAnswered(t *testing.T, req *chatscript.Request) {
	t.Helper()
	for i, m := range req.Messages {
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		for k, tc := range m.ToolCalls {
			j := i + 1 + k
			if j >= len(req.Messages) || req.Messages[j].Role != "tool" || req.Messages[j].ToolCallID != tc.ID {
				t.Errorf("tool call %q at message %d is not answered in order: %s", tc.ID, i, roles(req))
			}
		}
	}
}

// TestMalformedToolCalls: every kind of bad call becomes an error the model
// reads, and the turn goes on.
func TestMalformedToolCalls(t *testing.T) {
	r := newRig(t, rigOptions{files: map[string]string{"a.txt": "a"}, script: []chatscript.Reply{
		{Calls: []chatscript.Call{
			{ID: "c1", Name: "rm_rf", Arguments: `{}`},
			{ID: "c2", Name: "read_file", Arguments: `{"path": "a.txt"`},
			{ID: "c3", Name: "read_file", Arguments: `["a.txt"]`},
			{ID: "c4", Name: "read_file", Arguments: `{"path":7}`},
			{ID: "c5", Name: "read_file", Arguments: `{"file":"a.txt"}`},
			{ID: "c6", Name: "agent_submit", Arguments: `{"prompt":"recurse"}`},
			{ID: "", Name: "list_dir", Arguments: `{"path":"."}`},
		}},
		{NoChoices: true},
		text("recovered"),
	}})
	reqs := r.turnRequests(t, "misbehave", nil, "recovered", 3)
	tm := toolMessages(reqs[1])
	if len(tm) != 7 {
		t.Fatalf("%d tool messages, want 7: %s", len(tm), roles(reqs[1]))
	}
	wants := []string{
		"Unknown tool: rm_rf",
		"not a JSON object",
		"not a JSON object",
		`argument "path" must be a string`,
		`unknown argument "file"`,
		"Unknown tool: agent_submit",
	}
	for i, want := range wants {
		ok, _, errText := envelopeOf(t, tm[i])
		if ok || !strings.Contains(errText, want) {
			t.Errorf("tool message %d = %s, want an error containing %q", i, tm[i].Content, want)
		}
	}
	if ok, _, _ := envelopeOf(t, tm[6]); !ok || tm[6].ToolCallID == "" {
		t.Errorf("a call without an id got %+v, want it run under an id of ours", tm[6])
	}
	checkToolCallsAnswered(t, reqs[1])
	// The empty answer became a note the model reads.
	if last := reqs[2].Messages[len(reqs[2].Messages)-1]; last.Role != "user" || !strings.Contains(last.Content, "no choices") {
		t.Errorf("after no choices the model got %+v, want a note", last)
	}
}

// TestToolCallsPerStepAndResultCap: calls beyond the per-step bound are
// dropped from the turn and one note says how many; long results are cut
// with a note.
func TestToolCallsPerStepAndResultCap(t *testing.T) {
	big := strings.Repeat("é", 3000) // 6000 bytes
	r := newRig(t, rigOptions{agent: agent.Options{MaxToolCallsPerStep: 2, MaxToolResultBytes: 1000},
		files: map[string]string{"big.txt": big, "a.txt": "a"},
		script: []chatscript.Reply{
			calls("read_file", `{"path":"big.txt"}`, "read_file", `{"path":"a.txt"}`, "read_file", `{"path":"a.txt"}`),
			text("ok"),
		}})
	r.turn(t, "read", nil)
	tm := toolMessages(r.srv.Requests()[1])
	if len(tm[0].Content) > 1000 || !strings.Contains(tm[0].Content, "[agentmcp: result cut to 1000 of") {
		t.Errorf("big result: %d bytes, ends %q", len(tm[0].Content), tm[0].Content[max(0, len(tm[0].Content)-60):])
	}
	if !strings.HasPrefix(tm[0].Content, `{"success":true`) {
		t.Errorf("cut result does not start as the envelope: %.80s", tm[0].Content)
	}
	if ok, _, _ := envelopeOf(t, tm[1]); !ok {
		t.Errorf("second call = %s", tm[1].Content)
	}
	if len(tm) != 2 {
		t.Errorf("%d tool messages, want the 2 calls that ran", len(tm))
	}
	checkToolCallsAnswered(t, r.srv.Requests()[1])
	if last := r.srv.Requests()[1].Messages[len(r.srv.Requests()[1].Messages)-1]; last.Role != "user" || !strings.Contains(last.Content, "1 more tool calls of that step were not run: at most 2") {
		t.Errorf("after the step the model got %+v, want a note on the dropped call", last)
	}
}

// TestRetries: 429 and 5xx are retried with Retry-After honoured within the
// cap, and the retries are bounded.
func TestRetries(t *testing.T) {
	t.Run("429 then 503 then success", func(t *testing.T) {
		r := newRig(t, rigOptions{script: []chatscript.Reply{
			{Status: 429, Header: map[string]string{"Retry-After": "2"}, Body: `{"error":{"message":"slow down"}}`},
			{Status: 503, Body: `{"error":{"message":"overloaded"}}`},
			text("made it"),
		}})
		if got := r.turn(t, "hi", nil); got != "made it" {
			t.Fatalf("response = %q", got)
		}
		if w := r.retryWaits(); !slices.Equal(w, []time.Duration{2 * time.Second, 2 * time.Second}) {
			t.Errorf("retry waits = %v, want [2s (Retry-After) 2s (second backoff)]", w)
		}
	})
	t.Run("Retry-After over the cap", func(t *testing.T) {
		r := newRig(t, rigOptions{script: []chatscript.Reply{
			{Status: 429, Header: map[string]string{"Retry-After": "3600"}, Body: `{"error":{"message":"quota"}}`},
		}})
		msg := r.failTurn(t, "hi")
		if !strings.Contains(msg, "HTTP 429") || !strings.Contains(msg, "retry after 3600") || !strings.Contains(msg, r.srv.URL) {
			t.Errorf("message = %q", msg)
		}
		if len(r.retryWaits()) != 0 || len(r.srv.Requests()) != 1 {
			t.Errorf("waited %v over %d requests, want no retry", r.retryWaits(), len(r.srv.Requests()))
		}
	})
	t.Run("bounded", func(t *testing.T) {
		r := newRig(t, rigOptions{answer: func(*chatscript.Request) chatscript.Reply {
			return chatscript.Reply{Status: 500, Body: `{"error":{"message":"broken"}}`}
		}})
		msg := r.failTurn(t, "hi")
		if !strings.Contains(msg, "HTTP 500") || !strings.Contains(msg, "after 4 attempts") || !strings.Contains(msg, "broken") {
			t.Errorf("message = %q", msg)
		}
		if w := r.retryWaits(); !slices.Equal(w, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}) {
			t.Errorf("retry waits = %v, want the 1 s, 2 s, 4 s backoff", w)
		}
	})
}

// TestEndpointFailures: each failure fails the turn with a message naming
// the endpoint and the cause; the session keeps serving, the conversation
// is unchanged, and the next turn can succeed.
func TestEndpointFailures(t *testing.T) {
	t.Run("down", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + l.Addr().String() + "/v1"
		l.Close()
		r := newRig(t, rigOptions{url: url, files: map[string]string{"a.txt": "a"}})
		msg := r.failTurn(t, "hi")
		if !strings.Contains(msg, "cannot reach the model endpoint "+url) || !strings.Contains(msg, "refused") {
			t.Errorf("message = %q", msg)
		}
		env, err := r.session.InvokeTool(t.Context(), "read_file", json.RawMessage(`{"path":"a.txt"}`), ports.ClosedCaller{})
		if err != nil || !env.Success {
			t.Errorf("a tool call after the failed turn: %+v, %v", env, err)
		}
		if msg2 := r.failTurn(t, "again"); msg2 != msg {
			t.Errorf("second failure = %q, want the same as the first", msg2)
		}
	})
	cases := []struct {
		name  string
		reply chatscript.Reply
		want  []string
	}{
		{"401", chatscript.Reply{Status: 401, Body: `{"error":{"message":"Incorrect API key provided"}}`}, []string{"HTTP 401", "OPENAI_API_KEY"}},
		{"404 model", chatscript.Reply{Status: 404, Body: `{"error":{"message":"model \"nope\" not found, try pulling it first"}}`}, []string{"HTTP 404", `model "nope" not found`, `"scripted-model"`}},
		{"malformed", chatscript.Reply{Body: `<html>a proxy page</html>`}, []string{"not a chat completion"}},
		{"not JSON error body", chatscript.Reply{Status: 502, Body: `<html>bad gateway</html>`}, []string{"HTTP 502"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, rigOptions{model: openai.Options{MaxRetries: -1}, script: []chatscript.Reply{
				text("turn one"), c.reply, text("turn three"),
			}})
			r.turn(t, "one", nil)
			msg := r.failTurn(t, "two")
			for _, want := range append(c.want, r.srv.URL) {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
			if len(msg) > domain.MaxClientMessage || strings.ContainsAny(msg, "\r\n") {
				t.Errorf("message is not one line of at most 500 bytes: %q", msg)
			}
			r.turn(t, "three", nil)
			last := r.srv.Requests()[2]
			if roles(last) != "system user assistant user" || strings.Contains(contents(last), "two") {
				t.Errorf("after a failed turn the conversation is %s %q, want turn one then three only", roles(last), contents(last))
			}
		})
	}
}

// TestNonStreaming drives a tool turn with whole answers.
func TestNonStreaming(t *testing.T) {
	r := newRig(t, rigOptions{model: openai.Options{DisableStreaming: true}, files: map[string]string{"a.txt": "alpha"},
		script: []chatscript.Reply{calls("read_file", `{"path":"a.txt"}`), {NoChoices: true}, text("alpha it is")}})
	if got := r.turn(t, "read a", nil); got != "alpha it is" {
		t.Fatalf("response = %q", got)
	}
	reqs := r.srv.Requests()
	if reqs[0].Stream {
		t.Error("a streamed request although streaming is off")
	}
	if ok, res, _ := envelopeOf(t, toolMessages(reqs[1])[0]); !ok || !strings.Contains(string(res), "alpha") {
		t.Errorf("read_file result = %s", res)
	}
}

// TestCancelMidStream: cancelling the submission cancels the model request
// at once (the endpoint sees its request's context end), ends the turn, and
// leaves nothing of it in the conversation.
func TestCancelMidStream(t *testing.T) {
	streaming := make(chan struct{})
	cancelled := make(chan struct{})
	r := newRig(t, rigOptions{answer: func(req *chatscript.Request) chatscript.Reply {
		if req.LastUser() == "slow" {
			return chatscript.Reply{Text: "never finished", Mid: func(ctx context.Context) {
				close(streaming)
				<-ctx.Done()
				close(cancelled)
			}}
		}
		return text("answer to " + req.LastUser())
	}})
	r.turn(t, "first", nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := r.submit(ctx, "slow", newCaller())
	await(t, streaming, "the model's answer to start streaming")
	cancel()
	await(t, cancelled, "the endpoint to see its request cancelled")
	got := await(t, done, "the cancelled turn to end")
	if got.err == nil || errorsIsRefused(got.err) || !strings.Contains(got.err.Error(), "cancelled") {
		t.Errorf("cancelled turn = %q, %v; want a cancellation failure", got.res.Response, got.err)
	}
	if got := r.turn(t, "third", nil); got != "answer to third" {
		t.Errorf("next turn = %q", got)
	}
	last := r.srv.Requests()[2]
	if roles(last) != "system user assistant user" || strings.Contains(contents(last), "slow") {
		t.Errorf("after a cancelled turn the conversation is %s %q, want only the first turn", roles(last), contents(last))
	}
}

// TestCancelDuringPermission: cancelling while write_file waits for the
// person's answer ends the turn; nothing is written.
func TestCancelDuringPermission(t *testing.T) {
	r := newRig(t, rigOptions{script: []chatscript.Reply{calls("write_file", `{"path":"x.txt","content":"x"}`), text("next turn")}})
	asking := make(chan struct{})
	c := newCaller()
	c.Allow = true
	c.OnPermission = func(ctx context.Context, _ domain.PermissionPrompt) {
		close(asking)
		<-ctx.Done()
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := r.submit(ctx, "write", c)
	await(t, asking, "the permission prompt")
	cancel()
	if got := await(t, done, "the cancelled turn"); got.err == nil {
		t.Errorf("cancelled turn answered %q", got.res.Response)
	}
	if _, exists := r.file(t, "x.txt"); exists {
		t.Error("a cancelled turn wrote the file")
	}
	r.turn(t, "again", nil)
	if last := r.srv.Requests()[1]; roles(last) != "system user" {
		t.Errorf("after a cancelled turn the next request is %s", roles(last))
	}
}

// TestHistoryBudget: the oldest whole turns are dropped first; the system
// prompt stays.
func TestHistoryBudget(t *testing.T) {
	r := newRig(t, rigOptions{agent: agent.Options{HistoryBytes: 150, SystemPrompt: "SYSTEM"},
		answer: func(req *chatscript.Request) chatscript.Reply {
			return text(strings.Repeat("x", 50) + " answer " + req.LastUser())
		}})
	for _, p := range []string{"turn-A", "turn-B", "turn-C"} {
		r.turn(t, p, nil)
	}
	reqs := r.srv.Requests()
	last := contents(reqs[2])
	if reqs[2].Messages[0].Content != "SYSTEM" {
		t.Errorf("the system prompt was dropped: %s", roles(reqs[2]))
	}
	if strings.Contains(last, "turn-A") || !strings.Contains(last, "turn-B") || !strings.Contains(last, "turn-C") {
		t.Errorf("turn C's request = %s %q, want turn A dropped, B kept", roles(reqs[2]), last)
	}
	if roles(reqs[2]) != "system user assistant user" {
		t.Errorf("turn C's request roles = %s", roles(reqs[2]))
	}
}

// TestPrincipals: each principal has a conversation of its own; the least
// recently used one is evicted at the bound.
func TestPrincipals(t *testing.T) {
	r := newRig(t, rigOptions{agent: agent.Options{MaxConversations: 2}, answer: func(req *chatscript.Request) chatscript.Reply {
		return text("noted: " + req.LastUser())
	}})
	as := func(sub string) *caller {
		c := newCaller()
		c.As = ports.Principal{Issuer: "https://issuer.example", Subject: sub, Client: "client"}
		return c
	}
	r.turn(t, "alice's secret plan", as("alice"))
	r.turn(t, "bob's question", as("bob"))
	r.turn(t, "alice again", as("alice"))
	reqs := r.srv.Requests()
	if strings.Contains(contents(reqs[1]), "alice") {
		t.Errorf("bob's request carries alice's conversation: %q", contents(reqs[1]))
	}
	if !strings.Contains(contents(reqs[2]), "alice's secret plan") || strings.Contains(contents(reqs[2]), "bob") {
		t.Errorf("alice's second request = %q, want her own history only", contents(reqs[2]))
	}
	// A local caller (zero principal) is a third principal: bob, the least
	// recently used, is evicted.
	r.turn(t, "local", newCaller())
	r.turn(t, "bob returns", as("bob"))
	if got := contents(r.srv.Requests()[4]); strings.Contains(got, "bob's question") {
		t.Errorf("bob's evicted conversation came back: %q", got)
	}
	r.turn(t, "alice third", as("alice"))
	if got := contents(r.srv.Requests()[5]); strings.Contains(got, "alice's secret plan") {
		// alice was evicted when bob returned (local and bob were used
		// since).
		t.Errorf("alice's conversation outlived the bound: %q", got)
	}
}

// TestBusy: one turn per conversation; a second submission of the same
// principal is refused while its turn runs; a client's tool call during a
// turn is served; the turn's own calls run.
func TestBusy(t *testing.T) {
	held := make(chan struct{})
	release := make(chan struct{})
	r := newRig(t, rigOptions{files: map[string]string{"a.txt": "a"}, answer: func(req *chatscript.Request) chatscript.Reply {
		if req.N == 2 {
			return chatscript.Reply{Text: "done", Mid: func(ctx context.Context) {
				close(held)
				select {
				case <-release:
				case <-ctx.Done():
				}
			}}
		}
		if req.N == 1 {
			return calls("read_file", `{"path":"a.txt"}`)
		}
		return text("later")
	}})
	done := r.submit(t.Context(), "work", newCaller())
	await(t, held, "the turn's second model step")
	if env, err := r.session.InvokeTool(t.Context(), "read_file", json.RawMessage(`{"path":"a.txt"}`), ports.ClosedCaller{}); err != nil || !env.Success {
		t.Errorf("tool call during a turn: %+v, %v; want it served", env, err)
	}
	if _, err := r.session.Submit(t.Context(), ports.Submission{Prompt: "more"}, ports.ClosedCaller{}); !errors.Is(err, agent.ErrBusy) || !errorsIsRefused(err) {
		t.Errorf("submission during a turn of the same conversation: %v, want ErrBusy", err)
	}
	close(release)
	if got := await(t, done, "the turn"); got.err != nil || got.res.Response != "done" {
		t.Errorf("turn = %q, %v", got.res.Response, got.err)
	}
	if ok, _, _ := envelopeOf(t, toolMessages(r.srv.Requests()[1])[0]); !ok {
		t.Error("the turn's own tool call did not run")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := r.session.Submit(ctx, ports.Submission{Prompt: "late"}, ports.ClosedCaller{}); !errorsIsRefused(err) {
		t.Errorf("submission with an ended ctx: %v, want a refusal", err)
	}
}

// TestHeartbeat: while the model works, progress keeps coming at the
// heartbeat interval. The endpoint holds its answer until the client has
// seen two heartbeats.
func TestHeartbeat(t *testing.T) {
	beats := make(chan struct{}, 16)
	r := newRig(t, rigOptions{agent: agent.Options{Heartbeat: 10 * time.Millisecond}, answer: func(req *chatscript.Request) chatscript.Reply {
		return chatscript.Reply{Text: "slow answer", Mid: func(ctx context.Context) {
			for range 2 {
				select {
				case <-beats:
				case <-ctx.Done():
					return
				}
			}
		}}
	}})
	c := newCaller()
	c.onMsg = func(msg string) {
		if strings.Contains(msg, "working for") {
			select {
			case beats <- struct{}{}:
			default:
			}
		}
	}
	if got := r.turn(t, "think", c); got != "slow answer" {
		t.Fatalf("response = %q", got)
	}
	vals := c.progressValues()
	for i := 1; i < len(vals); i++ {
		if vals[i] <= vals[i-1] {
			t.Fatalf("progress values %v do not strictly increase", vals)
		}
	}
	if agent.MaxHeartbeat > 10*time.Second || agent.DefaultHeartbeat > agent.MaxHeartbeat {
		t.Errorf("heartbeat default %v / cap %v exceed 10 s", agent.DefaultHeartbeat, agent.MaxHeartbeat)
	}
}

// TestNoKeyInErrorsOrLogs: the key reaches the endpoint as the bearer
// token and nowhere else, even when the endpoint echoes it.
func TestNoKeyInErrorsOrLogs(t *testing.T) {
	echo := fmt.Sprintf(`{"error":{"message":"Incorrect API key provided: %s. Bearer %s"}}`, fakeKey, fakeKey)
	r := newRig(t, rigOptions{model: openai.Options{APIKey: fakeKey}, script: []chatscript.Reply{
		{Status: 401, Body: echo},
		{Status: 400, Body: echo},
		{Status: 429, Body: echo}, {Status: 429, Body: echo}, {Status: 429, Body: echo}, {Status: 429, Body: echo},
		{Body: `{"choices":[` + fakeKey},
		text("fine"),
	}})
	var msgs []string
	for range 4 {
		msgs = append(msgs, r.failTurn(t, "hi"))
	}
	r.turn(t, "hi", nil)
	for _, req := range r.srv.Requests() {
		if got := req.Header.Get("Authorization"); got != "Bearer "+fakeKey {
			t.Errorf("request %d Authorization = %q, want the key as a bearer token", req.N, got)
		}
	}
	all := strings.Join(msgs, "\n") + "\n" + r.log.String()
	for _, part := range []string{fakeKey, "FAKEKEY", "0123456789abcdef"} {
		if strings.Contains(all, part) {
			t.Errorf("%q appears in an error or the log:\n%s", part, all)
		}
	}
	if !strings.Contains(msgs[0], "refused the API key") {
		t.Errorf("401 message = %q", msgs[0])
	}
}

// TestNew checks the constructor's requirements.
func TestNew(t *testing.T) {
	if _, err := agent.New(nil, nil, agent.Options{}); err == nil {
		t.Error("New without an inner session and a model succeeded")
	}
}

// TestResubmitWhileACancelledTurnEnds: a submission or tool call that
// arrives while a cancelled turn is still ending waits for it instead of
// being refused (a client that cancels and submits again at once). The
// cancelled turn is held inside its permission prompt, which ignores the
// cancellation until released.
func TestResubmitWhileACancelledTurnEnds(t *testing.T) {
	r := newRig(t, rigOptions{files: map[string]string{"a.txt": "a"}, answer: func(req *chatscript.Request) chatscript.Reply {
		if req.LastUser() == "write" && req.N == 1 {
			return calls("write_file", `{"path":"x.txt","content":"x"}`)
		}
		return text("served: " + req.LastUser())
	}})
	asking := make(chan struct{})
	release := make(chan struct{})
	c := newCaller()
	c.OnPermission = func(context.Context, domain.PermissionPrompt) {
		close(asking)
		<-release // a slow Caller: it does not watch the cancellation
	}
	ctx, cancel := context.WithCancel(t.Context())
	first := r.submit(ctx, "write", c)
	await(t, asking, "the permission prompt")
	cancel()

	second := r.submit(t.Context(), "again", newCaller())
	tool := make(chan error, 1)
	go func() {
		_, err := r.session.InvokeTool(t.Context(), "read_file", json.RawMessage(`{"path":"a.txt"}`), ports.ClosedCaller{})
		tool <- err
	}()
	select {
	case got := <-second:
		t.Fatalf("the second submission returned %q, %v while the cancelled turn was still ending", got.res.Response, got.err)
	default:
	}
	close(release)
	if got := await(t, first, "the cancelled turn"); got.err == nil {
		t.Errorf("the cancelled turn answered %q", got.res.Response)
	}
	if got := await(t, second, "the second submission"); got.err != nil || got.res.Response != "served: again" {
		t.Errorf("the second submission = %q, %v; want it served once the cancelled turn ended", got.res.Response, got.err)
	}
	if err := await(t, tool, "the tool call"); err != nil {
		t.Errorf("the tool call = %v", err)
	}
}

// TestTurnTimeout: a turn that outlives its bound fails with a message that
// says so, and leaves nothing in the conversation.
func TestTurnTimeout(t *testing.T) {
	r := newRig(t, rigOptions{agent: agent.Options{TurnTimeout: 50 * time.Millisecond}, answer: func(req *chatscript.Request) chatscript.Reply {
		if req.LastUser() == "stall" {
			return chatscript.Reply{Text: "never", Mid: func(ctx context.Context) { <-ctx.Done() }}
		}
		return text("answer to " + req.LastUser())
	}})
	msg := r.failTurn(t, "stall")
	if !strings.Contains(msg, "ran out of time after 50ms") {
		t.Errorf("message = %q", msg)
	}
	r.turn(t, "next", nil)
	if last := r.srv.Requests()[1]; roles(last) != "system user" {
		t.Errorf("after a timed-out turn the next request is %s", roles(last))
	}
}
