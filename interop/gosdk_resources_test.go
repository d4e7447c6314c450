package interop

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resourceFixture is the workspace and agent the resource tests serve
// (docs/SPEC.md §2): greeting.txt (UTF-8 text), pixel.png (a real PNG, a
// blob), hello.txt (which the agent's scripted turn overwrites), and a
// secret file beside the root that no read may return.
type resourceFixture struct {
	ws     workspace
	root   string // the root's path with links resolved, as its URIs name it
	prefix string // file://<root>/: every file's URI starts with it
	png    []byte
	secret string // the secret file's content
	ep     *chatEndpoint
	flags  []string // serve's flags after --root: the agent, asking the client
}

// helloBefore is hello.txt's content before the agent's turn.
const helloBefore = "before the agent\n"

func newResourceFixture(t *testing.T) resourceFixture {
	t.Helper()
	f := resourceFixture{ws: newWorkspace(t), ep: newChatEndpoint(t)}
	var err error
	if f.root, err = filepath.EvalSymlinks(f.ws.root); err != nil {
		t.Fatal(err)
	}
	f.prefix = "file://" + f.root + "/"
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: 0xff, A: 0xff})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	f.png = buf.Bytes()
	f.secret = "SECRET-" + rand.Text()
	for name, content := range map[string]string{
		filepath.Join(f.root, "pixel.png"):            string(f.png),
		filepath.Join(f.root, "hello.txt"):            helloBefore,
		filepath.Join(filepath.Dir(f.root), "secret"): f.secret,
	} {
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.flags = []string{"--ask-client", "--model", "scripted", "--model-url", f.ep.url, "--state-dir", t.TempDir()}
	return f
}

// escapes are URIs that try to leave the workspace in every spelling
// (docs/SPEC.md §2): each must be -32602 with data.uri, and nothing of the
// secret beside the root may come back.
func (f resourceFixture) escapes() []string {
	parent := filepath.Dir(f.root)
	return []string{
		f.prefix + "../secret",
		f.prefix + "%2e%2e/secret",
		f.prefix + "%2E%2E%2Fsecret",
		f.prefix + "..%2fsecret",
		f.prefix + "x/%2e%2e/%2e%2e/secret",
		f.prefix + "%252e%252e/secret",     // double-encoded: a literal "%2e%2e" name
		f.prefix + "%252e%252e%252fsecret", // double-encoded slash too
		f.prefix + "..\\secret",            // a backslash is a name's byte on Unix
		f.prefix + "..%5Csecret",
		f.prefix + "%c0%ae%c0%ae/secret", // overlong UTF-8 dots
		f.prefix + "/" + parent + "/secret",
		"file://" + parent + "/secret",
		"file://localhost" + f.root + "/greeting.txt",
		"file://evil.example" + parent + "/secret",
		f.prefix + "greeting.txt%00",
		f.prefix + "greeting.txt\x00",
		f.prefix + "greeting.txt?x=../secret",
	}
}

// checkConversationMarkdown checks agentmcp://conversations/docs after the
// agent's one turn, which overwrote hello.txt.
func checkConversationMarkdown(t *testing.T, text string) {
	t.Helper()
	for _, want := range []string{"# Conversation docs", "## Turn 1", "Write hello.txt", "called `write_file`", "I wrote hello.txt.", "changed `hello.txt`"} {
		if !strings.Contains(text, want) {
			t.Errorf("agentmcp://conversations/docs lacks %q:\n%s", want, text)
		}
	}
}

// checkChangesDiff checks the unified diff of that turn's changes.
func checkChangesDiff(t *testing.T, text string) {
	t.Helper()
	for _, want := range []string{"hello.txt", "-" + strings.TrimSuffix(helloBefore, "\n"), "+" + strings.TrimSuffix(wroteContent, "\n")} {
		if !strings.Contains(text, want) {
			t.Errorf("the turn's changes lack %q:\n%s", want, text)
		}
	}
}

// wantPrompts are the agent's prompts as promptSignatures renders them.
var wantPrompts = []string{"delegate(task!)", "continue(conversation!,task!)", "review(conversation?)"}

// promptSignatures renders each prompt as name(argument!,argument?), "!"
// marking a required argument.
func promptSignatures(ps []*mcp.Prompt) []string {
	var out []string
	for _, p := range ps {
		var args []string
		for _, a := range p.Arguments {
			args = append(args, a.Name+map[bool]string{true: "!", false: "?"}[a.Required])
		}
		out = append(out, p.Name+"("+strings.Join(args, ",")+")")
	}
	return out
}

// TestGoSDKResources: the official Go SDK client, over stdio in both eras
// and over the loopback host at 2026-07-28, against the CLI's agent (docs/SPEC.md §2):
// it lists the templates (the workspace's file:// one first, then the
// conversations'), reads a text file and a PNG (a blob, image/png), is
// refused every escape from the root with -32602 and data.uri, runs one
// turn in the conversation "docs" that overwrites hello.txt (approved
// through the client) and one in "notes", then reads hello.txt fresh (on
// 2026-07-28 the SDK caches reads for their ttlMs: 0), lists both
// conversations, reads docs' Markdown and its turn 1 changes, gets each
// prompt (review embeds those changes) and completes continue's
// conversation argument and the conversation template's name from the
// principal's names.
func TestGoSDKResources(t *testing.T) {
	t.Parallel()
	// Over HTTP only a 2026-07-28 client can approve the agent's write
	// (input-required rounds, docs/SPEC.md §6): a 2025-era one cannot be
	// asked.
	for _, run := range []struct{ carrier, version string }{
		{"stdio", "2025-11-25"}, {"stdio", modernVersion}, {"http", modernVersion},
	} {
		t.Run(run.carrier+"/"+run.version, func(t *testing.T) {
			t.Parallel()
			testGoSDKResources(t, run.carrier, run.version)
		})
	}
}

func testGoSDKResources(t *testing.T, carrier, version string) {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	f := newResourceFixture(t)
	c := newGoSDKCarrier(ctx, t, carrier, f.ws, serverStderr(t), f.flags...)
	script := &elicitScript{}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentmcp-interop-resources", Version: "v1"}, &mcp.ClientOptions{ElicitationHandler: script.handle})
	cs := c.connect(ctx, t, client, version)

	caps := cs.InitializeResult().Capabilities
	if caps == nil || caps.Resources == nil || caps.Prompts == nil || caps.Completions == nil {
		t.Fatalf("capabilities %+v, want resources, prompts and completions", caps)
	}

	tl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatalf("resources/templates/list: %v", err)
	}
	var templates []string
	for _, tpl := range tl.ResourceTemplates {
		templates = append(templates, tpl.URITemplate)
	}
	wantTemplates := []string{f.prefix + "{+path}", "agentmcp://conversations/{name}", "agentmcp://conversations/{name}/turns/{n}/changes", "agentmcp://conversations/{name}/running"}
	if !slices.Equal(templates, wantTemplates) {
		t.Errorf("templates %q, want %q", templates, wantTemplates)
	}
	// Before any turn only the turn view (docs/SPEC.md §2 "The turn view") is listed.
	if rl, err := cs.ListResources(ctx, nil); err != nil || len(rl.Resources) != 1 || rl.Resources[0].URI != "ui://agentmcp/turn" || rl.Resources[0].MIMEType != "text/html;profile=mcp-app" {
		t.Errorf("resources/list before any turn = %+v, %v; want the turn view alone", rl, err)
	}

	read := func(uri string) *mcp.ResourceContents {
		t.Helper()
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("resources/read %s: %v", uri, err)
		}
		if len(res.Contents) != 1 || res.Contents[0].URI != uri {
			t.Fatalf("resources/read %s = %+v, want one content of that uri", uri, res.Contents)
		}
		return res.Contents[0]
	}
	if got := read(f.prefix + f.ws.file); got.Text != f.ws.content || got.MIMEType != "text/plain; charset=utf-8" || got.Blob != nil {
		t.Errorf("greeting.txt = %+v", got)
	}
	if got := read(f.prefix + "pixel.png"); !bytes.Equal(got.Blob, f.png) || got.MIMEType != "image/png" || got.Text != "" {
		t.Errorf("pixel.png = {mimeType %q, %d bytes of blob, text %q}, want image/png and its %d bytes", got.MIMEType, len(got.Blob), got.Text, len(f.png))
	}
	if got := read(f.prefix + "hello.txt"); got.Text != helloBefore {
		t.Errorf("hello.txt before the turn = %q", got.Text)
	}
	refusedRead := func(uri string) {
		t.Helper()
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != -32602 {
			t.Errorf("resources/read %q: %v, want -32602", uri, err)
			return
		}
		var data struct{ URI string }
		if json.Unmarshal(we.Data, &data) != nil || data.URI != uri {
			t.Errorf("resources/read %q: data %s, want its uri", uri, we.Data)
		}
	}
	for _, uri := range f.escapes() {
		if carrier == "http" && strings.ContainsRune(uri, 0) {
			// go-sdk v1.8.0 puts the uri in Mcp-Name as it is, and a NUL
			// is no header byte: its own transport refuses to send it.
			continue
		}
		refusedRead(uri)
	}

	turn := func(prompt, conv string, answers []promptAnswer, want string) {
		t.Helper()
		script.begin(answers)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "agent_submit", Arguments: map[string]any{"prompt": prompt, "conversation": conv}})
		prompts := script.end()
		if err != nil {
			t.Fatalf("agent_submit %q: %v", prompt, err)
		}
		if text := singleText(t, "agent_submit", res); res.IsError || text != want {
			t.Fatalf("agent_submit %q = {isError:%v text:%q} (%d prompts), want %q", prompt, res.IsError, text, len(prompts), want)
		}
	}
	turn("Write hello.txt with a greeting.", "docs", []promptAnswer{allowOnce, overwriteFile}, "I wrote hello.txt.")
	if got := read(f.prefix + "hello.txt"); got.Text != wroteContent {
		t.Errorf("hello.txt after the agent's write = %q, want %q (a stale read)", got.Text, wroteContent)
	}
	turn("hello", "notes", nil, "still here: hello")

	rl, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatalf("resources/list: %v", err)
	}
	var listed []string
	for _, r := range rl.Resources {
		listed = append(listed, r.URI+" "+r.MIMEType)
	}
	if want := []string{"ui://agentmcp/turn text/html;profile=mcp-app", "agentmcp://conversations/notes text/markdown", "agentmcp://conversations/docs text/markdown"}; !slices.Equal(listed, want) {
		t.Errorf("resources/list = %q, want %q (the most recently updated first)", listed, want)
	}
	conv := read("agentmcp://conversations/docs")
	if conv.MIMEType != "text/markdown" {
		t.Errorf("the conversation's mimeType %q", conv.MIMEType)
	}
	checkConversationMarkdown(t, conv.Text)
	changes := read("agentmcp://conversations/docs/turns/1/changes")
	if changes.MIMEType != "text/x-diff" {
		t.Errorf("the changes' mimeType %q", changes.MIMEType)
	}
	checkChangesDiff(t, changes.Text)
	refusedRead("agentmcp://conversations/docs/turns/2/changes")
	refusedRead("agentmcp://conversations/nobody")

	pl, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	if got := promptSignatures(pl.Prompts); !slices.Equal(got, wantPrompts) {
		t.Errorf("prompts/list = %q, want %q", got, wantPrompts)
	}
	get := func(name string, args map[string]string) *mcp.GetPromptResult {
		t.Helper()
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("prompts/get %s %v: %v", name, args, err)
		}
		return res
	}
	text := func(m *mcp.PromptMessage) string {
		if tc, ok := m.Content.(*mcp.TextContent); ok && m.Role == "user" {
			return tc.Text
		}
		return ""
	}
	if res := get("delegate", map[string]string{"task": "tidy the notes"}); len(res.Messages) != 1 || !strings.Contains(text(res.Messages[0]), "tidy the notes") {
		t.Errorf("delegate = %+v", res.Messages)
	}
	if res := get("continue", map[string]string{"conversation": "docs", "task": "add a line"}); len(res.Messages) != 1 ||
		!strings.Contains(text(res.Messages[0]), `conversation "docs"`) || !strings.Contains(text(res.Messages[0]), "add a line") {
		t.Errorf("continue = %+v", res.Messages)
	}
	review := get("review", map[string]string{"conversation": "docs"})
	if len(review.Messages) != 2 || !strings.Contains(text(review.Messages[0]), "turn 1") {
		t.Fatalf("review = %+v, want the request and the embedded changes", review.Messages)
	}
	if er, ok := review.Messages[1].Content.(*mcp.EmbeddedResource); !ok || er.Resource == nil ||
		er.Resource.URI != "agentmcp://conversations/docs/turns/1/changes" || er.Resource.MIMEType != "text/x-diff" || er.Resource.Text != changes.Text {
		t.Errorf("review's second message %+v, want the turn's changes embedded as read", review.Messages[1].Content)
	}
	for _, bad := range []struct {
		name string
		args map[string]string
	}{{"review", map[string]string{"conversation": "notes"}}, {"delegate", nil}, {"nope", nil}} {
		_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: bad.name, Arguments: bad.args})
		if we := (*jsonrpc.Error)(nil); !errors.As(err, &we) || we.Code != -32602 {
			t.Errorf("prompts/get %s %v: %v, want -32602", bad.name, bad.args, err)
		}
	}

	complete := func(ref *mcp.CompleteReference, arg, value string) []string {
		t.Helper()
		res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: arg, Value: value}})
		if err != nil {
			t.Fatalf("completion/complete %+v %s=%q: %v", ref, arg, value, err)
		}
		return res.Completion.Values
	}
	cont := &mcp.CompleteReference{Type: "ref/prompt", Name: "continue"}
	for value, want := range map[string][]string{"": {"notes", "docs"}, "d": {"docs"}, "x": {}} {
		if got := complete(cont, "conversation", value); !slices.Equal(got, want) {
			t.Errorf("continue's conversation %q completes to %q, want %q", value, got, want)
		}
	}
	if got := complete(&mcp.CompleteReference{Type: "ref/resource", URI: "agentmcp://conversations/{name}"}, "name", "n"); !slices.Equal(got, []string{"notes"}) {
		t.Errorf("the conversation template's name completes to %q, want [notes]", got)
	}

	// What went over the wire: a read never cached (ttlMs 0 on
	// 2026-07-28, no hint on 2025-11-25), and nothing of the secret.
	for _, req := range c.rec.requests() {
		if req.Method != "resources/read" {
			continue
		}
		resp, ok := c.rec.responseTo(req)
		if !ok || resp.Error != nil {
			continue
		}
		var hints struct {
			TTLMs      *int64 `json:"ttlMs"`
			CacheScope string `json:"cacheScope"`
		}
		json.Unmarshal(resp.Result, &hints)
		if modern := version == modernVersion; modern != (hints.TTLMs != nil && *hints.TTLMs == 0 && hints.CacheScope == "private") || !modern && hints.TTLMs != nil {
			t.Errorf("resources/read answered %.200s at %s: want ttlMs 0 and cacheScope private on 2026-07-28 only", resp.Result, version)
		}
	}
	if strings.Contains(c.rec.dump(), f.secret) {
		t.Error("the secret beside the root went over the wire")
	}
	c.close(t)
}
