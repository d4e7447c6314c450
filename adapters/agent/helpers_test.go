package agent_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/agent"
	"github.com/agentmcp/agentmcp/adapters/openai"
	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/internal/syncbuf"
	"github.com/agentmcp/agentmcp/internal/waitfor"
	"github.com/agentmcp/agentmcp/ports"
	"github.com/agentmcp/agentmcp/ports/porttest"
)

// patience bounds a wait before a test fails; it never paces a test.
const patience = 10 * time.Second

// fakeKey is a recognisable API key: it must never appear in an error or a
// log line.
const fakeKey = "sk-agentmcp-FAKEKEY-0123456789abcdef"

// rig is an agent-backed session over a real workspace and the real
// OpenAI-compatible adapter, talking to a scripted endpoint.
type rig struct {
	root    string
	ws      *workspace.Session
	srv     *chatscript.Server
	session *agent.Session
	log     *syncbuf.Buffer

	mu     sync.Mutex
	sleeps []time.Duration // retry waits asked of the clock
}

type rigOptions struct {
	files  map[string]string
	agent  agent.Options
	model  openai.Options // Model and BaseURL are filled in
	answer func(*chatscript.Request) chatscript.Reply
	script []chatscript.Reply
	url    string // a base URL instead of the scripted server's
	// resources, when set, has the workspace serve its files as
	// resources of that kind.
	resources workspace.ResourceURIs
}

func newRig(t *testing.T, o rigOptions) *rig {
	t.Helper()
	r := &rig{root: t.TempDir(), log: &syncbuf.Buffer{}}
	for name, content := range o.files {
		p := filepath.Join(r.root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logger := slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ws, err := workspace.New(workspace.Options{Root: r.root, Logger: logger, Resources: o.resources})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	r.ws = ws
	switch {
	case o.answer != nil:
		r.srv = chatscript.New(t, o.answer)
	case o.url == "":
		r.srv = chatscript.Script(t, o.script...)
	}
	mo := o.model
	if mo.Model == "" {
		mo.Model = "scripted-model"
	}
	mo.BaseURL = o.url
	if r.srv != nil {
		mo.BaseURL = r.srv.URL
	}
	mo.Logger = logger
	if mo.Sleep == nil {
		mo.Sleep = func(ctx context.Context, d time.Duration) error {
			r.mu.Lock()
			r.sleeps = append(r.sleeps, d)
			r.mu.Unlock()
			return ctx.Err()
		}
	}
	model, err := openai.New(mo)
	if err != nil {
		t.Fatal(err)
	}
	ao := o.agent
	ao.Logger = logger
	if ao.Workspace == "" {
		ao.Workspace = "testspace"
	}
	r.session, err = agent.New(ws, model, ao)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) retryWaits() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.sleeps...)
}

func (r *rig) file(t *testing.T, name string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.root, filepath.FromSlash(name)))
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

type submitResult struct {
	res ports.TurnResult
	err error
}

// submit runs one turn and finishes c when it returns.
func (r *rig) submit(ctx context.Context, prompt string, c *caller) <-chan submitResult {
	ch := make(chan submitResult, 1)
	go func() {
		res, err := r.session.Submit(ctx, ports.Submission{Prompt: prompt}, c)
		c.Finish()
		ch <- submitResult{res, err}
	}()
	return ch
}

// turn runs one turn to its end and fails the test on an error.
func (r *rig) turn(t *testing.T, prompt string, c *caller) string {
	t.Helper()
	if c == nil {
		c = newCaller()
	}
	got := await(t, r.submit(t.Context(), prompt, c), "the turn")
	if got.err != nil {
		t.Fatalf("Submit(%q): %v\nlog:\n%s", prompt, got.err, r.log.String())
	}
	return got.res.Response
}

// turnRequests runs one turn, checks it answered want, and returns the
// requests the model endpoint got, which must be n.
func (r *rig) turnRequests(t *testing.T, prompt string, c *caller, want string, n int) []*chatscript.Request {
	t.Helper()
	if got := r.turn(t, prompt, c); got != want {
		t.Fatalf("response = %q", got)
	}
	reqs := r.srv.Requests()
	if len(reqs) != n {
		t.Fatalf("%d requests, want %d", len(reqs), n)
	}
	return reqs
}

// failTurn runs one turn that must fail inside the turn (not be refused)
// and returns its client-visible message.
func (r *rig) failTurn(t *testing.T, prompt string) string {
	t.Helper()
	got := await(t, r.submit(t.Context(), prompt, newCaller()), "the failing turn")
	if got.err == nil {
		t.Fatalf("Submit(%q) = %q, want a failure", prompt, got.res.Response)
	}
	if errorsIsRefused(got.err) {
		t.Fatalf("Submit(%q) was refused (%v), want a failure inside the turn", prompt, got.err)
	}
	return clientMessage(got.err)
}

// await receives from ch within patience.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	return waitfor.Value(t, ch, patience, what)
}

// caller is a porttest.Recorder that also keeps each progress message.
type caller struct {
	*porttest.Recorder
	mu     sync.Mutex
	msgs   []string
	onMsg  func(msg string)
	values []float64
}

func newCaller() *caller { return &caller{Recorder: &porttest.Recorder{}} }

func (c *caller) Progress(ctx context.Context, progress, total float64, message string) {
	c.mu.Lock()
	c.msgs = append(c.msgs, message)
	c.values = append(c.values, progress)
	on := c.onMsg
	c.mu.Unlock()
	c.Recorder.Progress(ctx, progress, total, message)
	if on != nil {
		on(message)
	}
}

func (c *caller) messages() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.msgs...)
}

func (c *caller) progressValues() []float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]float64(nil), c.values...)
}

// text replies a plain answer.
func text(s string) chatscript.Reply { return chatscript.Reply{Text: s} }

// calls replies tool calls (name, arguments pairs), with ids call_1, …
func calls(pairs ...string) chatscript.Reply {
	var r chatscript.Reply
	for i := 0; i+1 < len(pairs); i += 2 {
		r.Calls = append(r.Calls, chatscript.Call{ID: "call_" + string(rune('a'+i/2)), Name: pairs[i], Arguments: pairs[i+1]})
	}
	return r
}

// toolMessages returns a request's tool messages, in order.
func toolMessages(r *chatscript.Request) []chatscript.Message {
	var out []chatscript.Message
	for _, m := range r.Messages {
		if m.Role == "tool" {
			out = append(out, m)
		}
	}
	return out
}

// envelopeOf decodes a tool message's content as an execution envelope.
func envelopeOf(t *testing.T, m chatscript.Message) (success bool, result json.RawMessage, errText string) {
	t.Helper()
	var env struct {
		Success  bool            `json:"success"`
		ToolName string          `json:"toolName"`
		Result   json.RawMessage `json:"result"`
		Error    string          `json:"error"`
	}
	if err := json.Unmarshal([]byte(m.Content), &env); err != nil {
		t.Fatalf("tool message %q is not an envelope: %v", m.Content, err)
	}
	return env.Success, env.Result, env.Error
}

// roles is a request's message roles, joined.
func roles(r *chatscript.Request) string {
	var out []string
	for _, m := range r.Messages {
		out = append(out, m.Role)
	}
	return strings.Join(out, " ")
}

// contents is every message content of a request, joined by newlines.
func contents(r *chatscript.Request) string {
	var out []string
	for _, m := range r.Messages {
		out = append(out, m.Content)
	}
	return strings.Join(out, "\n")
}
