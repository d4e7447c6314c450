package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/agent"
	"github.com/agentmcp/agentmcp/adapters/openai"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/internal/waitfor"
	"github.com/agentmcp/agentmcp/ports"
)

// Tests of issue 25: a hostile model endpoint and clients that walk away.

// manyCalls is one step of n read_file calls of a.txt.
func manyCalls(step, n int) chatscript.Reply {
	r := chatscript.Reply{WholeCalls: true}
	for i := range n {
		r.Calls = append(r.Calls, chatscript.Call{ID: fmt.Sprintf("s%dc%d", step, i), Name: "read_file", Arguments: `{"path":"a.txt"}`})
	}
	return r
}

// maxBody is the largest request body the endpoint got.
func maxBody(reqs []*chatscript.Request) int {
	n := 0
	for _, r := range reqs {
		n = max(n, len(r.Body))
	}
	return n
}

// TestHostileStepCallsStayBounded: an endpoint answering every step with
// thousands of tool calls (well under the 8 MiB answer cap) does not grow
// the turn: only the calls that run are kept and sent again, the rest are
// one note (issue 25, item 1).
//
// AGENTMCP_HOSTILE_SCALE="steps,calls" runs it larger, for measuring peak
// RSS with /usr/bin/time -v on the test binary (docs/ARCHITECTURE.md,
// "Agent bounds"); the assertions are the same.
func TestHostileStepCallsStayBounded(t *testing.T) {
	steps, perStep := 4, 3000
	if v := os.Getenv("AGENTMCP_HOSTILE_SCALE"); v != "" {
		if _, err := fmt.Sscanf(v, "%d,%d", &steps, &perStep); err != nil || steps < 2 || perStep <= agent.DefaultMaxToolCallsPerStep {
			t.Fatalf("AGENTMCP_HOSTILE_SCALE=%q: want \"steps,calls\" with steps >= 2 and calls > %d", v, agent.DefaultMaxToolCallsPerStep)
		}
	}
	r := newRig(t, rigOptions{agent: agent.Options{MaxSteps: steps}, files: map[string]string{"a.txt": "a"},
		answer: func(req *chatscript.Request) chatscript.Reply { return manyCalls(req.N, perStep) }})
	// Larger scales get more patience: it bounds a wait, never paces it.
	res := waitfor.Value(t, r.submit(t.Context(), "go", newCaller()), patience*time.Duration(1+steps*perStep/12000), "the turn")
	if res.err != nil || !strings.Contains(res.res.Response, fmt.Sprintf("%d model steps", steps)) {
		t.Errorf("turn = %q, %v", res.res.Response, res.err)
	}
	reqs := r.srv.Requests()
	if len(reqs) != steps {
		t.Fatalf("%d requests, want %d", len(reqs), steps)
	}
	// 16 calls and results per step (~6 KB), a note, the system prompt and
	// tools: the bound grows with the steps, never with the calls a step
	// sent. Keeping every call would be ~0.4 MB a step at 3000 calls.
	if n := maxBody(reqs); n > 16<<10+steps*8<<10 {
		t.Errorf("a request body reached %d bytes; what a step keeps is not bounded", n)
	}
	last := reqs[len(reqs)-1]
	checkToolCallsAnswered(t, last)
	if tm := toolMessages(last); len(tm) != (steps-1)*agent.DefaultMaxToolCallsPerStep {
		t.Errorf("%d tool messages in the last request, want %d", len(tm), (steps-1)*agent.DefaultMaxToolCallsPerStep)
	}
	if !strings.Contains(contents(last), fmt.Sprintf("%d more tool calls of that step were not run", perStep-agent.DefaultMaxToolCallsPerStep)) {
		t.Error("the model was not told of the dropped calls")
	}
	if !strings.Contains(r.log.String(), fmt.Sprintf("droppedToolCalls=%d", (steps)*(perStep-agent.DefaultMaxToolCallsPerStep))) {
		t.Errorf("the turn's log record does not count the dropped calls:\n%s", r.log.String())
	}
}

// TestLongTurnStaysBounded: an obedient turn of many steps of many large
// reads keeps within the turn's bound while it runs, and the conversation
// keeps at most its history bound of it afterwards, with every call still
// answered (issue 25, item 3). The bounds are the defaults divided by 16
// (results of 4 KiB, a turn of 128 KiB, a history of 16 KiB), so the test
// moves 16 times fewer bytes; docs/ARCHITECTURE.md measures the defaults.
func TestLongTurnStaysBounded(t *testing.T) {
	const steps, scale = 8, 16
	opts := agent.Options{
		MaxToolResultBytes: agent.DefaultMaxToolResultBytes / scale,
		TurnBytes:          agent.DefaultTurnBytes / scale,
		HistoryBytes:       agent.DefaultHistoryBytes / scale,
	}
	files := map[string]string{}
	var reads []string
	for i := range agent.DefaultMaxToolCallsPerStep {
		name := fmt.Sprintf("f%02d.txt", i)
		files[name] = strings.Repeat(fmt.Sprintf("line %02d of a large file\n", i), 200) // 5 KB, cut to 4 KiB
		reads = append(reads, "read_file", fmt.Sprintf(`{"path":%q}`, name))
	}
	r := newRig(t, rigOptions{agent: opts, files: files, answer: func(req *chatscript.Request) chatscript.Reply {
		switch {
		case req.LastUser() == "next":
			return text("fresh")
		case req.N <= steps:
			return calls(reads...)
		}
		return text("read them all")
	}})
	r.turn(t, "read everything, again and again", nil)
	reqs := r.srv.Requests()
	// Each step adds 16 results of 4 KiB (64 KiB); the turn keeps at most
	// TurnBytes before a step adds its own. Unbounded, the last request
	// would carry 7 steps (448 KiB).
	if n, limit := maxBody(reqs), opts.TurnBytes+96<<10; n > limit {
		t.Errorf("a request body of the turn reached %d bytes (limit %d); the running turn is not bounded", n, limit)
	}
	if got := r.turn(t, "next", nil); got != "fresh" {
		t.Fatalf("next turn = %q", got)
	}
	next := r.srv.Requests()[len(reqs)]
	if n, limit := len(next.Body), opts.HistoryBytes+16<<10; n > limit {
		t.Errorf("the next prompt's request is %d bytes (limit %d); the finished turn was kept unbounded", n, limit)
	}
	checkToolCallsAnswered(t, next)
	if !strings.Contains(contents(next), "read everything, again and again") || !strings.Contains(contents(next), "read them all") {
		t.Error("the bounded turn lost its prompt or its response")
	}
}

// TestHugePromptBoundedInHistory: a turn whose prompt alone exceeds the
// history bound is kept as its prompt and response, each cut (issue 25,
// item 3).
func TestHugePromptBoundedInHistory(t *testing.T) {
	r := newRig(t, rigOptions{agent: agent.Options{HistoryBytes: 4096}, answer: func(req *chatscript.Request) chatscript.Reply {
		u := req.LastUser()
		return text("re: " + u[:min(10, len(u))])
	}})
	r.turn(t, strings.Repeat("p", 100_000), nil)
	r.turn(t, "second", nil)
	next := r.srv.Requests()[1]
	if got := roles(next); got != "system user assistant user" {
		t.Fatalf("roles = %s", got)
	}
	if n := len(next.Messages[1].Content) + len(next.Messages[2].Content); n > 4096 {
		t.Errorf("the kept turn is %d bytes, want at most 4096", n)
	}
	if !strings.Contains(next.Messages[2].Content, "re: pppp") {
		t.Errorf("the response was lost: %q", next.Messages[2].Content)
	}
}

// TestNoPromptInLogs: an endpoint whose error quotes the request (a
// validation error) fails the turn with its message for the client, but
// the log holds none of it (issue 25, item 5).
func TestNoPromptInLogs(t *testing.T) {
	const prompt = "my-private-prompt-text"
	r := newRig(t, rigOptions{answer: func(req *chatscript.Request) chatscript.Reply {
		return chatscript.Reply{Status: 400, Body: `{"error":{"message":"invalid content in messages[1]: '` + req.LastUser() + `'"}}`}
	}})
	msg := r.failTurn(t, prompt)
	if !strings.Contains(msg, "HTTP 400") {
		t.Errorf("client message = %q", msg)
	}
	if log := r.log.String(); strings.Contains(log, prompt) || !strings.Contains(log, "turn failed") || !strings.Contains(log, "HTTP 400") {
		t.Errorf("log holds the prompt or lacks the failure's facts:\n%s", log)
	}
}

// TestKeyThroughRedirect: a redirect whose Location holds the key (in the
// host) fails the turn without the key in the error or the log (issue 25,
// item 4).
func TestKeyThroughRedirect(t *testing.T) {
	const key = "Opaque0123456789Secret"
	r := newRig(t, rigOptions{model: openai.Options{APIKey: key}, script: []chatscript.Reply{
		{Status: 302, Header: map[string]string{"Location": "https://" + key + ".example/v1/chat/completions"}},
	}})
	msg := r.failTurn(t, "hi")
	if !strings.Contains(msg, "redirects") {
		t.Errorf("message = %q", msg)
	}
	if all := strings.ToLower(msg + r.log.String()); strings.Contains(all, strings.ToLower(key)) {
		t.Errorf("the key leaked:\n%s\n%s", msg, r.log.String())
	}
}

// as is a caller speaking for the principal named sub.
func as(sub string) *caller {
	c := newCaller()
	c.As = ports.Principal{Issuer: "https://issuer.example", Subject: sub, Client: "client"}
	return c
}

// TestTurnsOfPrincipalsRunTogether: two principals' turns run at the same
// time (the endpoint holds each first answer until both requests arrived),
// each answered from its own history; a third principal's tool call is
// served during both; at MaxTurns a fourth principal is refused with the
// count (issue 19, item 2; issue 25, item 6).
func TestTurnsOfPrincipalsRunTogether(t *testing.T) {
	arrived := make(chan string, 2)
	release := make(chan struct{})
	r := newRig(t, rigOptions{agent: agent.Options{MaxTurns: 2}, files: map[string]string{"a.txt": "a"},
		answer: func(req *chatscript.Request) chatscript.Reply {
			u := req.LastUser()
			if strings.HasPrefix(u, "first") {
				return chatscript.Reply{Text: "noted " + u, Mid: func(ctx context.Context) {
					arrived <- u
					select {
					case <-release:
					case <-ctx.Done():
					}
				}}
			}
			return text("history: " + contents(req))
		}})
	alice, bob := r.submit(t.Context(), "first of alice", as("alice")), r.submit(t.Context(), "first of bob", as("bob"))
	await(t, arrived, "a first request")
	await(t, arrived, "the other first request") // both turns are in flight at once

	env, err := r.session.InvokeTool(t.Context(), "read_file", json.RawMessage(`{"path":"a.txt"}`), as("carol"))
	if err != nil || !env.Success {
		t.Errorf("carol's read_file during both turns: %+v, %v", env, err)
	}
	_, err = r.session.Submit(t.Context(), ports.Submission{Prompt: "first of dave"}, as("dave"))
	if !errorsIsRefused(err) || !strings.Contains(clientMessage(err), "2 turns are running") {
		t.Errorf("a third turn beyond MaxTurns: %v, want a busy refusal with the count", err)
	}
	_, err = r.session.Submit(t.Context(), ports.Submission{Prompt: "again"}, as("alice"))
	if !errors.Is(err, agent.ErrBusy) {
		t.Errorf("alice's second submission during her turn: %v, want ErrBusy", err)
	}
	close(release)
	for _, ch := range []<-chan submitResult{alice, bob} {
		if got := await(t, ch, "a turn"); got.err != nil {
			t.Errorf("turn: %v", got.err)
		}
	}
	for _, who := range []string{"alice", "bob"} {
		other := map[string]string{"alice": "bob", "bob": "alice"}[who]
		got := r.turn(t, "second", as(who))
		if !strings.Contains(got, "first of "+who) || strings.Contains(got, other) {
			t.Errorf("%s's second turn saw %q, want her own history only", who, got)
		}
	}
}

// TestUnansweredApprovalEndsTheTurn: a principal whose turn asks for
// approval and walks away blocks no one: another principal's submission
// and tool call are served meanwhile; the prompt settles closed after
// ApprovalTimeout and the turn stops with a response that says so (issue
// 25, item 6; issue 19, item 4).
func TestUnansweredApprovalEndsTheTurn(t *testing.T) {
	r := newRig(t, rigOptions{agent: agent.Options{ApprovalTimeout: 50 * time.Millisecond}, files: map[string]string{"a.txt": "a"},
		answer: func(req *chatscript.Request) chatscript.Reply {
			if req.LastUser() == "write" && len(toolMessages(req)) == 0 {
				return calls("write_file", `{"path":"x.txt","content":"x"}`)
			}
			return text("served: " + req.LastUser())
		}})
	asking := make(chan struct{})
	gone := as("walks-away")
	gone.Allow = true
	var once sync.Once
	gone.OnPermission = func(ctx context.Context, _ domain.PermissionPrompt) {
		once.Do(func() { close(asking) })
		<-ctx.Done() // nobody answers
	}
	first := r.submit(t.Context(), "write", gone)
	await(t, asking, "the permission prompt")
	// While the prompt waits, others are served.
	if got := r.turn(t, "other", as("other")); got != "served: other" {
		t.Errorf("another principal's turn = %q", got)
	}
	if env, err := r.session.InvokeTool(t.Context(), "read_file", json.RawMessage(`{"path":"a.txt"}`), as("other")); err != nil || !env.Success {
		t.Errorf("another principal's tool call: %+v, %v", env, err)
	}
	got := await(t, first, "the turn whose prompt went unanswered")
	if got.err != nil || !strings.Contains(got.res.Response, "went unanswered") {
		t.Errorf("turn = %q, %v; want a response saying the prompt went unanswered", got.res.Response, got.err)
	}
	if _, exists := r.file(t, "x.txt"); exists {
		t.Error("an unanswered prompt wrote the file")
	}
	if log := r.log.String(); !strings.Contains(log, "prompt unanswered") || !strings.Contains(log, "tool=write_file") {
		t.Errorf("the log does not record the unanswered prompt:\n%s", log)
	}
}

// TestOllamaShapesInATurn: two calls streamed at index 0 and ended with
// finish_reason "stop" (Ollama) both run, and the turn goes on to its
// answer (issue 19, item 5); the endpoint's token usage is logged per turn.
func TestOllamaShapesInATurn(t *testing.T) {
	step := calls("read_file", `{"path":"a.txt"}`, "read_file", `{"path":"b.txt"}`)
	step.SameIndex, step.Finish = true, "stop"
	step.Usage = &chatscript.Usage{Prompt: 100, Completion: 10}
	final := text("both read")
	final.Usage = &chatscript.Usage{Prompt: 150, Completion: 5}
	r := newRig(t, rigOptions{files: map[string]string{"a.txt": "alpha", "b.txt": "beta"}, script: []chatscript.Reply{step, final}})
	reqs := r.turnRequests(t, "read both", nil, "both read", 2)
	tm := toolMessages(reqs[1])
	if len(tm) != 2 {
		t.Fatalf("%d tool messages, want 2", len(tm))
	}
	for i, want := range []string{"alpha", "beta"} {
		if ok, res, _ := envelopeOf(t, tm[i]); !ok || !strings.Contains(string(res), want) {
			t.Errorf("call %d = %s, want %s read", i, tm[i].Content, want)
		}
	}
	if log := r.log.String(); !strings.Contains(log, "inputTokens=250") || !strings.Contains(log, "outputTokens=15") {
		t.Errorf("the turn's token usage is not logged:\n%s", log)
	}
}

// TestBusyRefusalOneTurn: with MaxTurns 1 the busy refusal speaks of one
// turn in the singular ("1 turn is running", issue 33).
func TestBusyRefusalOneTurn(t *testing.T) {
	arrived := make(chan string, 1)
	release := make(chan struct{})
	r := newRig(t, rigOptions{agent: agent.Options{MaxTurns: 1},
		answer: func(req *chatscript.Request) chatscript.Reply {
			return chatscript.Reply{Text: "noted", Mid: func(ctx context.Context) {
				arrived <- req.LastUser()
				select {
				case <-release:
				case <-ctx.Done():
				}
			}}
		}})
	alice := r.submit(t.Context(), "first of alice", as("alice"))
	await(t, arrived, "alice's request")
	_, err := r.session.Submit(t.Context(), ports.Submission{Prompt: "first of bob"}, as("bob"))
	if msg := clientMessage(err); !errorsIsRefused(err) || !strings.Contains(msg, "session is busy: 1 turn is running, the most it runs at once") {
		t.Errorf("bob's turn beyond MaxTurns 1: %q, want a busy refusal naming 1 turn in the singular", msg)
	}
	close(release)
	if got := await(t, alice, "alice's turn"); got.err != nil {
		t.Errorf("alice's turn: %v", got.err)
	}
}
