package agent_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/agent"
	"github.com/agentmcp/agentmcp/adapters/memstore"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/ports"
)

// submitIn runs one turn of sub to its end and fails the test on an error.
func (r *rig) submitIn(t *testing.T, sub ports.Submission, c *caller) ports.TurnResult {
	t.Helper()
	if c == nil {
		c = newCaller()
	}
	res, err := r.session.Submit(t.Context(), sub, c)
	c.Finish()
	if err != nil {
		t.Fatalf("Submit(%+v): %v\nlog:\n%s", sub, err, r.log.String())
	}
	return res
}

// recall answers each prompt with every user message the request carried:
// what the model was shown of the conversation.
func recall(req *chatscript.Request) chatscript.Reply {
	var seen []string
	for _, m := range req.Messages {
		if m.Role == "user" {
			seen = append(seen, m.Content)
		}
	}
	return text(strings.Join(seen, "|"))
}

// TestNamedConversations: two named conversations interleaved keep their
// memories apart, and apart from the default one, which "default" names
// too; a fork remembers what its parent knew and the parent never sees the
// fork's later turns; another principal's conversation of the same name is
// its own; each turn's report names its conversation and its number; a
// restart on the same store keeps every named conversation.
func TestNamedConversations(t *testing.T) {
	store := memstore.New(memstore.Options{})
	o := rigOptions{agent: agent.Options{Store: store, Root: "/work/a"}, answer: recall}
	r := newRig(t, o)
	steps := []struct {
		sub       ports.Submission
		who       string
		want      string
		conv      string
		turn      int
		forkedOff bool
	}{
		{ports.Submission{Prompt: "a1", Conversation: "task-a"}, "", "a1", "task-a", 1, false},
		{ports.Submission{Prompt: "b1", Conversation: "task.b"}, "", "b1", "task.b", 1, false},
		{ports.Submission{Prompt: "a2", Conversation: "task-a"}, "", "a1|a2", "task-a", 2, false},
		{ports.Submission{Prompt: "d1"}, "", "d1", "default", 1, false},
		{ports.Submission{Prompt: "d2", Conversation: "default"}, "", "d1|d2", "default", 2, false},
		{ports.Submission{Prompt: "b2", Conversation: "task.b"}, "", "b1|b2", "task.b", 2, false},
		{ports.Submission{Prompt: "f1", Conversation: "try_A", ForkFrom: "task-a"}, "", "a1|a2|f1", "try_A", 3, true},
		{ports.Submission{Prompt: "a3", Conversation: "task-a"}, "", "a1|a2|a3", "task-a", 3, false},
		{ports.Submission{Prompt: "f2", Conversation: "try_A"}, "", "a1|a2|f1|f2", "try_A", 4, false},
		{ports.Submission{Prompt: "alice", Conversation: "task-a"}, "alice", "alice", "task-a", 1, false},
	}
	for _, s := range steps {
		c := newCaller()
		if s.who != "" {
			c = as(s.who)
		}
		res := r.submitIn(t, s.sub, c)
		if res.Response != s.want {
			t.Errorf("%+v as %q answered from %q, want %q", s.sub, s.who, res.Response, s.want)
		}
		if res.Report == nil || res.Report.Conversation != s.conv || res.Report.Turn != s.turn || res.Report.Stopped != "" {
			t.Errorf("%+v: report %+v, want conversation %s turn %d", s.sub, res.Report, s.conv, s.turn)
		}
	}
	if !r.session.Conversations() || !ports.HasConversations(r.session) {
		t.Error("the agent does not say it keeps conversations")
	}

	restarted := newRig(t, o)
	for _, s := range []struct{ name, want string }{
		{"task-a", "a1|a2|a3|again"}, {"task.b", "b1|b2|again"}, {"try_A", "a1|a2|f1|f2|again"}, {"default", "d1|d2|again"},
	} {
		if got := restarted.submitIn(t, ports.Submission{Prompt: "again", Conversation: s.name}, nil).Response; got != s.want {
			t.Errorf("after a restart %s answered from %q, want %q", s.name, got, s.want)
		}
	}
}

// TestConversationRefusals: a conversation name of every illegal shape, a
// fork_from that names its own conversation, nothing, or comes without a
// conversation, a fork onto a conversation that exists, one conversation
// past the per-principal bound, and a 1 MB name are each a refusal that
// names the rule: no model request, the store exactly as it was, and other
// principals' conversations untouched; a principal cannot fork another's
// conversation. At the bound, continuing a conversation still works.
func TestConversationRefusals(t *testing.T) {
	store := memstore.New(memstore.Options{})
	r := newRig(t, rigOptions{agent: agent.Options{Store: store, Root: "/work/a", MaxConversationsPerPrincipal: 3}, answer: recall})
	r.submitIn(t, ports.Submission{Prompt: "one"}, nil)
	r.submitIn(t, ports.Submission{Prompt: "two", Conversation: "two"}, nil)
	r.submitIn(t, ports.Submission{Prompt: "mine", Conversation: "secret"}, as("alice"))
	before, _ := store.List(t.Context(), ports.ConversationFilter{})
	requests := len(r.srv.Requests())

	rule := domain.ConversationNameRule
	long := strings.Repeat("n", 1<<20)
	cases := []struct {
		name string
		sub  ports.Submission
		who  string
		want []string // parts of the refusal
	}{
		{"empty-looking space", ports.Submission{Conversation: " "}, "", []string{`conversation " "`, rule}},
		{"65 characters", ports.Submission{Conversation: strings.Repeat("a", 65)}, "", []string{"(65 bytes)", rule}},
		{"slash", ports.Submission{Conversation: "../etc"}, "", []string{`conversation "../etc"`, rule}},
		{"colon", ports.Submission{Conversation: "remote:x"}, "", []string{rule}},
		{"newline", ports.Submission{Conversation: "a\nb"}, "", []string{`"a\nb"`, rule}},
		{"NUL", ports.Submission{Conversation: "a\x00b"}, "", []string{rule}},
		{"terminal escape", ports.Submission{Conversation: "\x1b]0;x\x07"}, "", []string{rule}},
		{"non-ASCII", ports.Submission{Conversation: "tâche"}, "", []string{rule}},
		{"invalid UTF-8", ports.Submission{Conversation: "\xff"}, "", []string{rule}},
		{"1 MB name", ports.Submission{Conversation: long}, "", []string{"(1048576 bytes)", rule}},
		{"1 MB fork_from", ports.Submission{Conversation: "new", ForkFrom: long}, "", []string{"fork_from", rule}},
		{"bad fork_from", ports.Submission{Conversation: "new", ForkFrom: "a b"}, "", []string{`fork_from "a b"`, rule}},
		{"fork_from itself", ports.Submission{Conversation: "two", ForkFrom: "two"}, "", []string{`fork_from "two" names the conversation itself`}},
		{"fork_from default onto default", ports.Submission{Conversation: "default", ForkFrom: "default"}, "", []string{"names the conversation itself"}},
		{"fork_from without conversation", ports.Submission{ForkFrom: "two"}, "", []string{"fork_from needs conversation"}},
		{"fork_from nothing", ports.Submission{Conversation: "new", ForkFrom: "missing"}, "", []string{`fork_from "missing" names no conversation`}},
		{"fork onto an existing one", ports.Submission{Conversation: "two", ForkFrom: "default"}, "", []string{`conversation "two" already exists`}},
		{"another principal's", ports.Submission{Conversation: "stolen", ForkFrom: "secret"}, "", []string{`fork_from "secret" names no conversation`}},
		{"past the bound", ports.Submission{Conversation: "three"}, "", []string{`conversation "three" would be one more than the 3 conversations`}},
		{"a fork past the bound", ports.Submission{Conversation: "three", ForkFrom: "two"}, "", []string{"would be one more than the 3"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.sub.Prompt = "refused"
			who := newCaller()
			if c.who != "" {
				who = as(c.who)
			}
			// "three" is the caller's third conversation only once the
			// bound case runs: make it so.
			if strings.Contains(c.name, "bound") {
				r.submitIn(t, ports.Submission{Prompt: "filler", Conversation: "filler"}, nil)
				before, _ = store.List(t.Context(), ports.ConversationFilter{})
				requests = len(r.srv.Requests())
			}
			_, err := r.session.Submit(t.Context(), c.sub, who)
			who.Finish()
			if !errorsIsRefused(err) {
				t.Fatalf("Submit = %v, want a refusal", err)
			}
			msg := clientMessage(err)
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("refusal %q lacks %q", msg, w)
				}
			}
			if len(msg) > 500 || strings.Contains(msg, "\n") {
				t.Errorf("refusal is %d bytes or several lines: %.200q", len(msg), msg)
			}
			if n := len(r.srv.Requests()); n != requests {
				t.Errorf("a refused submission reached the model (%d requests, was %d)", n, requests)
			}
			if after, _ := store.List(t.Context(), ports.ConversationFilter{}); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("a refused submission changed the store:\n%v\nwas %v", after, before)
			}
		})
	}
	if turns, _ := store.Load(t.Context(), ports.RefOf("/work/a", ports.Principal{Issuer: "https://issuer.example", Subject: "alice", Client: "client"}).Named("secret")); len(turns) != 1 {
		t.Errorf("alice's conversation after the refusals: %v", turns)
	}
	// At the bound, the conversations held go on; another principal has
	// a bound of its own.
	if got := r.submitIn(t, ports.Submission{Prompt: "three", Conversation: "two"}, nil).Response; got != "two|three" {
		t.Errorf("continuing a conversation at the bound: %q", got)
	}
	if got := r.submitIn(t, ports.Submission{Prompt: "hers", Conversation: "three"}, as("alice")).Response; got != "hers" {
		t.Errorf("another principal within its own bound: %q", got)
	}
}

// TestTurnReport: a turn's report lists its tool calls in order with
// whether each succeeded, the files its write_file and edit_file changed
// with line counts, its token usage summed over the steps, and no stop;
// the store keeps each file's unified diff beside the turn's messages and
// counts it in the turn's bytes. A turn that reaches its step bound
// reports stopped max_steps; one without tool calls reports empty lists
// and zero usage.
func TestTurnReport(t *testing.T) {
	store := memstore.New(memstore.Options{})
	r := newRig(t, rigOptions{agent: agent.Options{Store: store, Root: "/work/a", MaxSteps: 4},
		files: map[string]string{"notes.txt": "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"},
		answer: func(req *chatscript.Request) chatscript.Reply {
			done := len(toolMessages(req))
			switch {
			case req.LastUser() == "loop":
				return calls("read_file", `{"path":"notes.txt"}`)
			case req.LastUser() == "plain":
				return text("plain answer")
			case done == 0:
				r := calls("read_file", `{"path":"notes.txt"}`, "no_such_tool", `{}`)
				r.Usage = &chatscript.Usage{Prompt: 10, Completion: 2}
				return r
			case done == 2:
				r := calls("write_file", `{"path":"new.txt","content":"hello\nworld\n"}`, "edit_file", `{"path":"notes.txt","old_text":"four","new_text":"FOUR"}`)
				r.Usage = &chatscript.Usage{Prompt: 20, Completion: 3}
				return r
			}
			r := text("changed two files")
			r.Usage = &chatscript.Usage{Prompt: 30, Completion: 4}
			return r
		}})
	c := newCaller()
	c.Allow = true
	res := r.submitIn(t, ports.Submission{Prompt: "change things"}, c)
	got := res.Report
	want := &ports.TurnReport{Conversation: "default", Turn: 1,
		ChangedFiles: []ports.ChangedFile{{Path: "new.txt", Added: 2}, {Path: "notes.txt", Added: 1, Removed: 1}},
		ToolCalls:    []ports.ToolCallReport{{Name: "read_file", OK: true}, {Name: "no_such_tool"}, {Name: "write_file", OK: true}, {Name: "edit_file", OK: true}},
		Usage:        ports.TokenUsage{InputTokens: 60, OutputTokens: 9}}
	if res.Response != "changed two files" || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("report %+v\nwant %+v", got, want)
	}
	turns, _ := store.Load(t.Context(), ports.RefOf("/work/a", ports.Principal{}))
	if len(turns) != 1 || len(turns[0].Changes) != 2 {
		t.Fatalf("stored: %+v", turns)
	}
	wantDiffs := []string{
		"--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n",
		"--- a/notes.txt\n+++ b/notes.txt\n@@ -1,7 +1,7 @@\n one\n two\n three\n-four\n+FOUR\n five\n six\n seven\n",
	}
	msgBytes := 0
	for _, m := range turns[0].Messages {
		msgBytes += len(m.Role) + len(m.Content) + len(m.ToolCallID)
		for _, tc := range m.ToolCalls {
			msgBytes += len(tc.ID) + len(tc.Name) + len(tc.Arguments)
		}
	}
	diffBytes := 0
	for i, d := range turns[0].Changes {
		if d.Diff != wantDiffs[i] {
			t.Errorf("stored diff %d:\n%s\nwant\n%s", i, d.Diff, wantDiffs[i])
		}
		diffBytes += len(d.Path) + len(d.Diff)
	}
	if turns[0].Bytes != msgBytes+diffBytes {
		t.Errorf("the turn counts %d bytes, want its messages' %d and its diffs' %d", turns[0].Bytes, msgBytes, diffBytes)
	}

	res = r.submitIn(t, ports.Submission{Prompt: "loop"}, newCaller())
	if res.Report.Stopped != ports.StopMaxSteps || len(res.Report.ToolCalls) != 4 || res.Report.Turn != 2 {
		t.Errorf("a turn at its step bound: %+v", res.Report)
	}
	res = r.submitIn(t, ports.Submission{Prompt: "plain"}, newCaller())
	if rep := res.Report; rep.ToolCalls == nil || rep.ChangedFiles == nil || len(rep.ToolCalls)+len(rep.ChangedFiles) != 0 || rep.Usage != (ports.TokenUsage{}) {
		t.Errorf("a turn without tools: %+v, want empty (not nil) lists and zero usage", rep)
	}
}

// TestTurnDiffsBounded: the diffs a turn keeps are at most
// MaxTurnDiffBytes in all: the one that passes it is cut at a line's end
// and later ones dropped, each with a note, while the report's line
// counts stay whole; a file written twice is one diff, from its first
// content to its last.
func TestTurnDiffsBounded(t *testing.T) {
	store := memstore.New(memstore.Options{})
	big := strings.Repeat("a line of the big file\n", 2000) // 48000 bytes: two of them and a header fit 64 KiB, not three
	r := newRig(t, rigOptions{agent: agent.Options{Store: store, Root: "/work/a"}, answer: func(req *chatscript.Request) chatscript.Reply {
		switch len(toolMessages(req)) {
		case 0:
			return calls("write_file", fmt.Sprintf(`{"path":"one.txt","content":%q}`, big), "write_file", fmt.Sprintf(`{"path":"two.txt","content":%q}`, big),
				"write_file", fmt.Sprintf(`{"path":"three.txt","content":%q}`, big), "write_file", fmt.Sprintf(`{"path":"four.txt","content":%q}`, big),
				"write_file", `{"path":"one.txt","content":"short\n"}`)
		}
		return text("wrote")
	}})
	c := newCaller()
	c.Allow = true
	c.Answer = func(domain.AskPrompt) domain.Answer { return domain.Answer{Text: "overwrite", Answered: true} }
	res := r.submitIn(t, ports.Submission{Prompt: "write big"}, c)
	want := []ports.ChangedFile{{Path: "one.txt", Added: 1}, {Path: "two.txt", Added: 2000}, {Path: "three.txt", Added: 2000}, {Path: "four.txt", Added: 2000}}
	if fmt.Sprint(res.Report.ChangedFiles) != fmt.Sprint(want) {
		t.Errorf("changed files %+v, want %+v", res.Report.ChangedFiles, want)
	}
	turns, _ := store.Load(t.Context(), ports.RefOf("/work/a", ports.Principal{}))
	d := turns[0].Changes
	total := 0
	for _, c := range d {
		total += len(c.Diff)
	}
	if len(d) != 4 || d[0].Diff != "--- /dev/null\n+++ b/one.txt\n@@ -0,0 +1 @@\n+short\n" || strings.Contains(d[1].Diff, "[agentmcp") ||
		!strings.Contains(d[2].Diff, "+a line of the big file\n[agentmcp: diff cut at ") || !strings.HasSuffix(d[2].Diff, " of 48049 bytes: a turn keeps 65536 bytes of diffs]\n") ||
		d[3].Diff != "[agentmcp: the diff of four.txt (48048 bytes) was dropped: a turn keeps 65536 bytes of diffs]\n" ||
		d[3].Added != 2000 || total > agent.MaxTurnDiffBytes+200 {
		t.Errorf("stored diffs: %d files, %d bytes; %.120q … %q", len(d), total, d[2].Diff[max(len(d[2].Diff)-120, 0):], d[3].Diff)
	}
}

// TestSupersede: a new submission of a conversation whose turn waits on a
// prompt ends that turn as ApprovalTimeout would: the prompt settles
// closed at once (nothing written, the rest of its step not run), the old
// turn answers that it stopped because a new prompt came, with stopped
// "superseded", its work joins the conversation, and the new turn runs at
// once from it. A late answer to the withdrawn prompt writes nothing. A
// turn of another conversation is not superseded, and a computing turn
// still refuses as busy.
func TestSupersede(t *testing.T) {
	store := memstore.New(memstore.Options{})
	hold, streaming := make(chan struct{}), make(chan struct{})
	r := newRig(t, rigOptions{agent: agent.Options{Store: store, Root: "/work/a"}, answer: func(req *chatscript.Request) chatscript.Reply {
		switch u := req.LastUser(); {
		case u == "write" && len(toolMessages(req)) == 0:
			return calls("write_file", `{"path":"x.txt","content":"x"}`, "write_file", `{"path":"y.txt","content":"y"}`)
		case u == "compute":
			return chatscript.Reply{Text: "computed", Mid: func(ctx context.Context) {
				close(streaming)
				select {
				case <-hold:
				case <-ctx.Done():
				}
			}}
		}
		return recall(req)
	}})
	asking := make(chan struct{})
	late := make(chan domain.Decision, 1)
	first := newCaller()
	first.Allow = true
	var once sync.Once
	first.OnPermission = func(ctx context.Context, _ domain.PermissionPrompt) {
		once.Do(func() { close(asking) })
		<-ctx.Done() // the person has walked away
	}
	old := make(chan submitResult, 1)
	go func() {
		res, err := r.session.Submit(t.Context(), ports.Submission{Prompt: "write", Conversation: "work"}, first)
		old <- submitResult{res, err}
	}()
	await(t, asking, "the first turn's prompt")

	// Another conversation of the same principal runs beside it.
	if got := r.submitIn(t, ports.Submission{Prompt: "aside", Conversation: "other"}, nil).Response; got != "aside" {
		t.Errorf("another conversation's turn = %q", got)
	}
	select {
	case <-old:
		t.Fatal("a turn of another conversation superseded the waiting one")
	default:
	}

	next := r.submitIn(t, ports.Submission{Prompt: "next", Conversation: "work"}, nil)
	got := await(t, old, "the superseded turn")
	first.Finish()
	if got.err != nil || got.res.Report == nil || got.res.Report.Stopped != ports.StopSuperseded ||
		!strings.Contains(got.res.Response, "a new prompt came for this conversation while write_file awaited approval") {
		t.Fatalf("the superseded turn: %q, %+v, %v", got.res.Response, got.res.Report, got.err)
	}
	if rep := got.res.Report; len(rep.ToolCalls) != 1 || rep.ToolCalls[0].OK || len(rep.ChangedFiles) != 0 || rep.Turn != 1 {
		t.Errorf("the superseded turn's report: %+v; want write_file's denied call alone and nothing changed", rep)
	}
	if next.Response != "write|next" || next.Report.Turn != 2 {
		t.Errorf("the new turn answered from %q (turn %d), want the superseded turn's prompt then its own", next.Response, next.Report.Turn)
	}
	for _, f := range []string{"x.txt", "y.txt"} {
		if _, exists := r.file(t, f); exists {
			t.Errorf("%s was written: a superseded prompt must write nothing", f)
		}
	}
	late <- first.RequestPermission(context.Background(), domain.PermissionPrompt{Tool: "write_file"})
	if d := <-late; d != domain.Deny {
		t.Errorf("a late answer through the finished call: %v, want Deny", d)
	}
	if _, exists := r.file(t, "x.txt"); exists {
		t.Error("a late answer wrote the file")
	}
	reqs := r.srv.Requests()
	var kept string
	for _, m := range reqs[len(reqs)-1].Messages {
		kept += m.Content + "\n"
	}
	if !strings.Contains(kept, "not run: the turn stopped before this call") || !strings.Contains(kept, "Permission denied") {
		t.Errorf("the new turn's request lacks the superseded turn's work:\n%s", kept)
	}
	if log := r.log.String(); !strings.Contains(log, "turn superseded") || !strings.Contains(log, "stopped=superseded") {
		t.Errorf("the log does not record the supersede:\n%s", log)
	}

	// A computing turn is not superseded: the submission is refused.
	computing := r.submit(t.Context(), "compute", newCaller())
	await(t, streaming, "the computing turn's model request")
	if _, err := r.session.Submit(t.Context(), ports.Submission{Prompt: "again"}, newCaller()); !errorsIsRefused(err) || !strings.Contains(clientMessage(err), "busy") {
		t.Errorf("a submission while the turn computes: %v, want the busy refusal", err)
	}
	close(hold)
	if got := await(t, computing, "the computing turn"); got.err != nil || got.res.Report.Stopped != "" {
		t.Errorf("the computing turn: %+v, %v", got.res.Report, got.err)
	}
}

// TestForkBesideParentTurn: a fork starts from what its parent held when
// the fork's turn began. A turn of the parent that runs beside the fork's
// and is appended first stays the parent's: the fork keeps the parent's
// turns it was shown, then its own, numbered after them.
func TestForkBesideParentTurn(t *testing.T) {
	store := memstore.New(memstore.Options{})
	forkStreaming, forkHold := make(chan struct{}), make(chan struct{})
	r := newRig(t, rigOptions{agent: agent.Options{Store: store, Root: "/work/a"}, answer: func(req *chatscript.Request) chatscript.Reply {
		switch u := req.LastUser(); {
		case u == "write" && len(toolMessages(req)) == 0:
			return calls("write_file", `{"path":"x.txt","content":"x"}`)
		case u == "f1":
			reply := recall(req)
			reply.Mid = func(ctx context.Context) {
				close(forkStreaming)
				select {
				case <-forkHold:
				case <-ctx.Done():
				}
			}
			return reply
		}
		return recall(req)
	}})
	r.submitIn(t, ports.Submission{Prompt: "p1"}, nil)

	asking, release := make(chan struct{}), make(chan struct{})
	parentCaller := newCaller()
	parentCaller.Allow = true
	parentCaller.OnPermission = func(ctx context.Context, _ domain.PermissionPrompt) {
		close(asking)
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
	parent := r.submit(t.Context(), "write", parentCaller)
	await(t, asking, "the parent turn's prompt")

	fork := make(chan submitResult, 1)
	go func() {
		res, err := r.session.Submit(t.Context(), ports.Submission{Prompt: "f1", Conversation: "try", ForkFrom: "default"}, newCaller())
		fork <- submitResult{res, err}
	}()
	await(t, forkStreaming, "the fork's model request")
	close(release)
	if got := await(t, parent, "the parent turn"); got.err != nil || got.res.Report.Turn != 2 {
		t.Fatalf("the parent turn: %+v, %v", got.res.Report, got.err)
	}
	close(forkHold)
	got := await(t, fork, "the fork's turn")
	if got.err != nil || got.res.Response != "p1|f1" || got.res.Report.Turn != 2 {
		t.Fatalf("the fork's turn: %q, %+v, %v; want it answered from p1 as turn 2", got.res.Response, got.res.Report, got.err)
	}
	var prompts []string
	turns, _ := store.Load(t.Context(), ports.RefOf("/work/a", ports.Principal{}).Named("try"))
	for _, turn := range turns {
		prompts = append(prompts, fmt.Sprintf("%d:%s", turn.Number, turn.Messages[0].Content))
	}
	if strings.Join(prompts, ",") != "1:p1,2:f1" {
		t.Errorf("the fork holds %v, want 1:p1,2:f1 (not the parent's turn that ran beside it)", prompts)
	}
	if got := r.submitIn(t, ports.Submission{Prompt: "p3"}, nil).Response; got != "p1|write|p3" {
		t.Errorf("the parent answered from %q, want its own turns", got)
	}
}
