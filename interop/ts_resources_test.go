package interop

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tsStep is one step of ts/resources.mjs's scenario.
type tsStep struct {
	Op      string         `json:"op"`
	Params  any            `json:"params,omitempty"`
	Answers []promptAnswer `json:"answers,omitempty"`
}

// tsStepReport is what the script reports of one step.
type tsStepReport struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    *int            `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	Prompts []json.RawMessage `json:"prompts"`
}

// TestTypeScriptSDKResources: the official TypeScript SDK client (its own
// revision, 2025-11-25), whose methods validate every result against the
// SDK's schemas, against the CLI's agent (docs/SPEC.md §2), over stdio and
// over the loopback host: the templates, a text file and a PNG blob
// (image/png, base64 that decodes to the file), every escape from the
// root refused with -32602 and data.uri, one turn in the conversation
// "docs" and one in "notes", the file read fresh after the turn, both
// conversations listed, docs' Markdown and its turn 1 changes, each
// prompt (review embedding those changes), and completion of continue's
// conversation argument and the conversation template's name. Over stdio
// the client approves the turn's write (elicitation); over HTTP a
// 2025-era client cannot be asked (docs/SPEC.md §6), so the write is
// refused and the turn changes nothing: review then has nothing to embed.
func TestTypeScriptSDKResources(t *testing.T) {
	t.Parallel()
	node := tsNode(t)
	for _, carrier := range []string{"stdio", "http"} {
		t.Run(carrier, func(t *testing.T) {
			t.Parallel()
			testTSResources(t, node, carrier)
		})
	}
}

func testTSResources(t *testing.T, node, carrier string) {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	f := newResourceFixture(t)
	approve := carrier == "stdio"

	var steps []tsStep
	at := map[string]int{} // a step's label → its index
	add := func(label, op string, params any, answers ...promptAnswer) {
		at[label] = len(steps)
		steps = append(steps, tsStep{Op: op, Params: params, Answers: answers})
	}
	read := func(uri string) map[string]string { return map[string]string{"uri": uri} }
	add("templates", "templates", nil)
	add("resources before", "resources", nil)
	add("greeting", "read", read(f.prefix+f.ws.file))
	add("pixel", "read", read(f.prefix+"pixel.png"))
	add("hello before", "read", read(f.prefix+"hello.txt"))
	for _, uri := range f.escapes() {
		add("escape "+uri, "read", read(uri))
	}
	add("write turn", "submit", map[string]string{"prompt": "Write hello.txt with a greeting.", "conversation": "docs"}, allowOnce, overwriteFile)
	add("hello after", "read", read(f.prefix+"hello.txt"))
	add("notes turn", "submit", map[string]string{"prompt": "hello", "conversation": "notes"})
	add("resources after", "resources", nil)
	add("conversation", "read", read("agentmcp://conversations/docs"))
	add("changes", "read", read("agentmcp://conversations/docs/turns/1/changes"))
	add("no turn 2", "read", read("agentmcp://conversations/docs/turns/2/changes"))
	add("prompts", "prompts", nil)
	add("delegate", "prompt", map[string]any{"name": "delegate", "arguments": map[string]string{"task": "tidy the notes"}})
	add("continue", "prompt", map[string]any{"name": "continue", "arguments": map[string]string{"conversation": "docs", "task": "add a line"}})
	add("review docs", "prompt", map[string]any{"name": "review", "arguments": map[string]string{"conversation": "docs"}})
	add("review notes", "prompt", map[string]any{"name": "review", "arguments": map[string]string{"conversation": "notes"}})
	add("complete all", "complete", map[string]any{"ref": map[string]string{"type": "ref/prompt", "name": "continue"}, "argument": map[string]string{"name": "conversation", "value": ""}})
	add("complete d", "complete", map[string]any{"ref": map[string]string{"type": "ref/prompt", "name": "continue"}, "argument": map[string]string{"name": "conversation", "value": "d"}})
	add("complete template", "complete", map[string]any{"ref": map[string]string{"type": "ref/resource", "uri": "agentmcp://conversations/{name}"}, "argument": map[string]string{"name": "name", "value": "n"}})

	scenario := map[string]any{"steps": steps}
	stderr := serverStderr(t)
	var host *httpHost
	if carrier == "stdio" {
		scenario["command"] = binPath
		scenario["args"] = append([]string{"serve", "stdio", "--root", f.ws.root}, f.flags...)
	} else {
		host = startHTTPHost(ctx, t, f.ws, stderr, f.flags...)
		scenario["url"], scenario["tokenFile"] = host.url, host.tokenFile
	}
	cmd, reportPath := tsScenarioCmd(ctx, t, node, "resources.mjs", scenario)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("node resources.mjs over %s: %v\n%s", carrier, err, out.String())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node resources.mjs output (on stdio, the server's stderr included):\n%s", out.String())
		}
	})
	checkNoDataRace(t, out.Bytes())
	var report struct {
		Capabilities    map[string]json.RawMessage `json:"capabilities"`
		Steps           []tsStepReport             `json:"steps"`
		Wire            json.RawMessage            `json:"wire"`
		TransportErrors []string                   `json:"transportErrors"`
	}
	readTSReport(t, reportPath, &report)
	if len(report.Steps) != len(steps) || len(report.TransportErrors) > 0 {
		t.Fatalf("report: %d steps of %d, transport errors %q", len(report.Steps), len(steps), report.TransportErrors)
	}
	for _, c := range []string{"resources", "prompts", "completions"} {
		if report.Capabilities[c] == nil {
			t.Errorf("capabilities %v lack %s", report.Capabilities, c)
		}
	}

	// result decodes step label's result into v, failing t on an error.
	result := func(label string, v any) bool {
		t.Helper()
		s := report.Steps[at[label]]
		if s.Error != nil || json.Unmarshal(s.Result, v) != nil {
			t.Errorf("%s: result %s, error %+v", label, s.Result, s.Error)
			return false
		}
		return true
	}
	refused := func(label, uri string) {
		t.Helper()
		s := report.Steps[at[label]]
		var data struct{ URI string }
		if s.Error == nil || s.Error.Code == nil || *s.Error.Code != -32602 {
			t.Errorf("%s: result %s, error %+v; want -32602", label, s.Result, s.Error)
		} else if uri != "" && (json.Unmarshal(s.Error.Data, &data) != nil || data.URI != uri) {
			t.Errorf("%s: data %s, want its uri", label, s.Error.Data)
		}
	}
	type contents struct {
		Contents []struct{ URI, MIMEType, Text, Blob string }
	}
	one := func(label, uri string) (mime, text, blob string) {
		t.Helper()
		var c contents
		if !result(label, &c) {
			return
		}
		if len(c.Contents) != 1 || c.Contents[0].URI != uri {
			t.Errorf("%s: contents %+v, want one of %s", label, c.Contents, uri)
			return
		}
		return c.Contents[0].MIMEType, c.Contents[0].Text, c.Contents[0].Blob
	}

	var tl struct {
		ResourceTemplates []struct{ URITemplate string }
	}
	if result("templates", &tl) {
		var got []string
		for _, tpl := range tl.ResourceTemplates {
			got = append(got, tpl.URITemplate)
		}
		if want := []string{f.prefix + "{+path}", "agentmcp://conversations/{name}", "agentmcp://conversations/{name}/turns/{n}/changes", "agentmcp://conversations/{name}/running"}; !slices.Equal(got, want) {
			t.Errorf("templates %q, want %q", got, want)
		}
	}
	var rl struct {
		Resources []struct{ URI, MIMEType string }
	}
	// Before any turn only the turn view (docs/SPEC.md §2 "The turn view") is listed.
	if result("resources before", &rl) && (len(rl.Resources) != 1 || rl.Resources[0].URI != "ui://agentmcp/turn" || rl.Resources[0].MIMEType != "text/html;profile=mcp-app") {
		t.Errorf("resources/list before any turn: %+v, want the turn view alone", rl.Resources)
	}
	if mime, text, blob := one("greeting", f.prefix+f.ws.file); mime != "text/plain; charset=utf-8" || text != f.ws.content || blob != "" {
		t.Errorf("greeting.txt: %q %q %q", mime, text, blob)
	}
	if mime, text, blob := one("pixel", f.prefix+"pixel.png"); mime != "image/png" || text != "" || blob != base64.StdEncoding.EncodeToString(f.png) {
		t.Errorf("pixel.png: mimeType %q, text %q, blob %q; want image/png and the file in base64", mime, text, blob)
	}
	if _, text, _ := one("hello before", f.prefix+"hello.txt"); text != helloBefore {
		t.Errorf("hello.txt before the turn: %q", text)
	}
	for _, uri := range f.escapes() {
		refused("escape "+uri, uri)
	}

	wantWrite, wantHello := "I wrote hello.txt.", wroteContent
	if !approve {
		wantWrite, wantHello = "The write was not allowed.", helloBefore
	}
	var turn struct {
		Content []struct{ Text string }
		IsError bool
	}
	if result("write turn", &turn) && (turn.IsError || len(turn.Content) != 1 || turn.Content[0].Text != wantWrite) {
		t.Errorf("the write turn answered %+v, want %q", turn, wantWrite)
	}
	if n := len(report.Steps[at["write turn"]].Prompts); approve != (n == 2) {
		t.Errorf("the write turn asked the client %d times (approve %v)", n, approve)
	}
	if _, text, _ := one("hello after", f.prefix+"hello.txt"); text != wantHello {
		t.Errorf("hello.txt after the turn: %q, want %q", text, wantHello)
	}
	if result("notes turn", &turn) && (turn.IsError || len(turn.Content) != 1 || turn.Content[0].Text != "still here: hello") {
		t.Errorf("the notes turn answered %+v", turn)
	}
	if result("resources after", &rl) {
		var got []string
		for _, r := range rl.Resources {
			got = append(got, r.URI+" "+r.MIMEType)
		}
		if want := []string{"ui://agentmcp/turn text/html;profile=mcp-app", "agentmcp://conversations/notes text/markdown", "agentmcp://conversations/docs text/markdown"}; !slices.Equal(got, want) {
			t.Errorf("resources/list %q, want %q", got, want)
		}
	}
	mime, conv, _ := one("conversation", "agentmcp://conversations/docs")
	if mime != "text/markdown" {
		t.Errorf("the conversation's mimeType %q", mime)
	}
	mime, diff, _ := one("changes", "agentmcp://conversations/docs/turns/1/changes")
	if mime != "text/x-diff" {
		t.Errorf("the changes' mimeType %q", mime)
	}
	if approve {
		checkConversationMarkdown(t, conv)
		checkChangesDiff(t, diff)
	} else if !strings.Contains(conv, "# Conversation docs") || !strings.Contains(conv, "The write was not allowed.") || diff != "" {
		t.Errorf("after the refused write: conversation %q, changes %q", conv, diff)
	}
	refused("no turn 2", "agentmcp://conversations/docs/turns/2/changes")

	var pl mcp.ListPromptsResult // the same JSON, decoded by go-sdk's types
	if result("prompts", &pl) {
		if got := promptSignatures(pl.Prompts); !slices.Equal(got, wantPrompts) {
			t.Errorf("prompts/list %q, want %q", got, wantPrompts)
		}
	}
	type message struct {
		Role    string
		Content struct {
			Type     string
			Text     string
			Resource *struct{ URI, MIMEType, Text string }
		}
	}
	var pr struct{ Messages []message }
	if result("delegate", &pr) && (len(pr.Messages) != 1 || !strings.Contains(pr.Messages[0].Content.Text, "tidy the notes")) {
		t.Errorf("delegate: %+v", pr.Messages)
	}
	if result("continue", &pr) && (len(pr.Messages) != 1 || !strings.Contains(pr.Messages[0].Content.Text, `conversation "docs"`) || !strings.Contains(pr.Messages[0].Content.Text, "add a line")) {
		t.Errorf("continue: %+v", pr.Messages)
	}
	if approve {
		if result("review docs", &pr) {
			if len(pr.Messages) != 2 || pr.Messages[1].Content.Type != "resource" || pr.Messages[1].Content.Resource == nil ||
				pr.Messages[1].Content.Resource.URI != "agentmcp://conversations/docs/turns/1/changes" || pr.Messages[1].Content.Resource.Text != diff {
				t.Errorf("review: %+v, want the turn's changes embedded as read", pr.Messages)
			}
		}
	} else {
		refused("review docs", "")
	}
	refused("review notes", "")

	var comp struct{ Completion struct{ Values []string } }
	for label, want := range map[string][]string{"complete all": {"notes", "docs"}, "complete d": {"docs"}, "complete template": {"notes"}} {
		if result(label, &comp) && !slices.Equal(comp.Completion.Values, want) {
			t.Errorf("%s: %q, want %q", label, comp.Completion.Values, want)
		}
	}

	if bytes.Contains(report.Wire, []byte(f.secret)) {
		t.Error("the secret beside the root went over the wire")
	}
	if host != nil {
		if err := host.stop(); err != nil {
			t.Errorf("stopping serve http: %v", err)
		}
		checkNoDataRace(t, []byte(stderr.String()))
	}
}
