package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/agent"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/ports"
)

// live is the running resource's JSON as the view reads it.
type live struct {
	ID, Conversation, State, Prompt string
	Steps                           []struct {
		Step      int
		Text      string
		TextBytes int                            `json:"text_bytes"`
		ToolCalls []struct{ Name, State string } `json:"tool_calls"`
	}
	Pending *struct {
		Tool      string
		Arguments []struct {
			Name, Kind, Value string
			CutFrom           int `json:"value_cut_from"`
		}
	}
	ChangedPaths []string `json:"changed_paths"`
	Response     *string
	Turn         int
	ChangedFiles []ports.ChangedFile `json:"changed_files"`
}

func readLive(t *testing.T, f ports.Features, name string, p ports.Principal) (live, error) {
	t.Helper()
	c, err := f.Resources.ReadResource(t.Context(), "agentmcp://conversations/"+name+"/running", p)
	if err != nil {
		return live{}, err
	}
	if len(c) != 1 || c[0].MIMEType != "application/json" {
		t.Fatalf("running resource = %+v", c)
	}
	var l live
	if err := json.Unmarshal([]byte(c[0].Text), &l); err != nil {
		t.Fatalf("running resource is not JSON: %v: %s", err, c[0].Text)
	}
	return l, nil
}

// TestLiveTurn: the running resource follows a turn as it goes — the
// step's streamed text while it streams, the tool call and the prompt
// awaiting approval with its diff, then the finished turn's response and
// report — for its own principal only; the view resource is the embedded
// HTML with the app MIME type and an empty CSP allowance (docs/SPEC.md §2
// "The turn view").
func TestLiveTurn(t *testing.T) {
	resume := make(chan struct{})
	r := newRig(t, rigOptions{files: map[string]string{"a.txt": "old\n"}, agent: agent.Options{TextInterval: time.Millisecond}, script: []chatscript.Reply{
		{Text: "Reading <script>alert(1)</script> now", MidAfterText: 2, Mid: func(ctx context.Context) {
			select {
			case <-resume:
			case <-ctx.Done():
			}
		}, Calls: []chatscript.Call{{ID: "c1", Name: "edit_file", Arguments: `{"path":"a.txt","old_text":"old","new_text":"new"}`}}},
		text("Done: a.txt says new."),
		text("Again."),
	}})
	f := r.session.Features()
	me := ports.Principal{}
	alice := ports.Principal{Issuer: "https://issuer", Subject: "alice", Client: "c"}
	if _, err := readLive(t, f, "default", me); !errors.Is(err, ports.ErrResourceNotFound) {
		t.Fatalf("before any turn: %v, want not found", err)
	}
	asked, approve := make(chan struct{}), make(chan struct{})
	c := newCaller()
	c.Allow = true
	// The step's text reached the progress report, so the view's state
	// too (the turn writes that first).
	streaming := make(chan struct{})
	var once sync.Once
	c.onMsg = func(msg string) {
		if strings.HasPrefix(msg, "model step 1: Reading") {
			once.Do(func() { close(streaming) })
		}
	}
	c.OnPermission = func(ctx context.Context, _ domain.PermissionPrompt) {
		close(asked)
		<-approve
	}
	done := r.submit(t.Context(), "fix a.txt", c)

	await(t, streaming, "the model's stream")
	l, err := readLive(t, f, "default", me)
	if err != nil || l.State != "running" || l.Prompt != "fix a.txt" || len(l.Steps) != 1 || l.Steps[0].Text != "Reading " {
		t.Fatalf("mid-stream: %+v, %v; want step 1 with its first 8 bytes", l, err)
	}
	if _, err := readLive(t, f, "default", alice); !errors.Is(err, ports.ErrResourceNotFound) {
		t.Errorf("another principal reads it: %v", err)
	}
	close(resume)
	await(t, asked, "the permission prompt")
	l, _ = readLive(t, f, "default", me)
	if l.State != "waiting" || l.Pending == nil || l.Pending.Tool != "edit_file" || !strings.Contains(l.Steps[0].Text, "<script>alert(1)</script> now") ||
		len(l.Steps[0].ToolCalls) != 1 || l.Steps[0].ToolCalls[0].State != "running" {
		t.Fatalf("awaiting approval: %+v", l)
	}
	var diff string
	for _, a := range l.Pending.Arguments {
		if a.Name == "diff" && a.Kind == "lines" {
			diff = a.Value
		}
	}
	if !strings.Contains(diff, "-old") || !strings.Contains(diff, "+new") {
		t.Errorf("the pending diff = %q", diff)
	}
	close(approve)
	got := await(t, done, "the turn")
	if got.err != nil {
		t.Fatal(got.err)
	}
	l, _ = readLive(t, f, "default", me)
	if l.State != "finished" || l.Response == nil || *l.Response != "Done: a.txt says new." || l.Turn != 1 || l.Pending != nil ||
		len(l.Steps) != 2 || l.Steps[0].ToolCalls[0].State != "ok" || len(l.ChangedFiles) != 1 || l.ChangedFiles[0].Path != "a.txt" ||
		len(l.ChangedPaths) != 1 {
		t.Fatalf("finished: %+v", l)
	}
	first := l.ID
	r.turn(t, "again", nil)
	if l, _ = readLive(t, f, "default", me); l.ID == first || l.Prompt != "again" {
		t.Errorf("the next turn: %+v, want a new id", l)
	}

	v, err := f.Resources.ReadResource(t.Context(), agent.ViewURI, alice)
	if err != nil || len(v) != 1 || v[0].MIMEType != "text/html;profile=mcp-app" || !strings.Contains(v[0].Text, "<html") ||
		!strings.Contains(string(v[0].Meta), `"connectDomains":[]`) || len(v[0].Text) >= 1<<20 {
		t.Fatalf("the view = %.200v, %v", v, err)
	}
}

// TestLiveBounds: a model that streams megabytes and a prompt of 1 MB
// cost the running resource its bounds only: the step keeps the end of its
// text, the prompt its start, each saying how much there was.
func TestLiveBounds(t *testing.T) {
	huge := strings.Repeat("é", 1<<15) // 64 KiB of two-byte runes
	r := newRig(t, rigOptions{script: []chatscript.Reply{text(huge + "END")}})
	prompt := strings.Repeat("p", 1<<20)
	if got := await(t, r.submit(t.Context(), prompt, newCaller()), "the turn"); got.err != nil {
		t.Fatalf("the turn failed: %.300v", got.err)
	}
	c, err := r.session.Features().Resources.ReadResource(t.Context(), "agentmcp://conversations/default/running", ports.Principal{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c[0].Text) > 200<<10 {
		t.Errorf("the running resource is %d bytes", len(c[0].Text))
	}
	var l struct {
		Prompt        string
		PromptCutFrom int `json:"prompt_cut_from"`
		Steps         []struct {
			Text      string
			TextBytes int `json:"text_bytes"`
		}
		Response    string
		ResponseCut int `json:"response_cut_from"`
	}
	if err := json.Unmarshal([]byte(c[0].Text), &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Prompt) != agent.MaxLiveText || l.PromptCutFrom != 1<<20 {
		t.Errorf("prompt: %d bytes cut from %d", len(l.Prompt), l.PromptCutFrom)
	}
	if s := l.Steps[0]; !strings.HasSuffix(s.Text, "éEND") || len(s.Text) > agent.MaxLiveStepText || s.TextBytes != 1<<16+3 {
		t.Errorf("step text: %d bytes (of %d), ends %q", len(s.Text), s.TextBytes, s.Text[len(s.Text)-8:])
	}
	if l.ResponseCut != 1<<16+3 || len(l.Response) > agent.MaxLiveText {
		t.Errorf("response: %d bytes cut from %d", len(l.Response), l.ResponseCut)
	}
}

// panicModel panics in its first step, after some text.
type panicModel struct{}

func (panicModel) Step(_ context.Context, req ports.ModelRequest) (ports.AssistantMessage, error) {
	req.OnText("half")
	panic("the model adapter broke")
}
func (panicModel) Describe() ports.ModelDescription { return ports.ModelDescription{Model: "panic"} }

// TestLiveSettlesAPanic: a turn whose Submit unwinds in a panic (the
// engine recovers it) is shown failed, never running for ever.
func TestLiveSettlesAPanic(t *testing.T) {
	r := newRig(t, rigOptions{script: []chatscript.Reply{text("unused")}})
	s, err := agent.New(r.ws, panicModel{}, agent.Options{})
	if err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() { recover() }()
		s.Submit(t.Context(), ports.Submission{Prompt: "p"}, newCaller())
	}()
	l, err := readLive(t, s.Features(), "default", ports.Principal{})
	if err != nil || l.State != "failed" || len(l.Steps) != 1 || l.Steps[0].Text != "half" {
		t.Fatalf("after the panic: %+v, %v", l, err)
	}
}
