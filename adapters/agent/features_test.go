package agent_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/agent"
	"github.com/agentmcp/agentmcp/adapters/memstore"
	"github.com/agentmcp/agentmcp/ports"
)

// featureRig is an agent over a workspace that serves its files as
// agentmcp://workspace/ resources, with a store holding conversations of
// two principals: alice's "fix" (two turns, the second changing a.txt)
// and the local principal's "default".
func featureRig(t *testing.T) (ports.Features, ports.Principal) {
	t.Helper()
	store := memstore.New(memstore.Options{})
	r := newRig(t, rigOptions{files: map[string]string{"a.txt": "new\n"}, agent: agent.Options{Store: store, Root: "/root"}})
	alice := ports.Principal{Issuer: "https://issuer", Subject: "alice", Client: "c"}
	msgs := func(prompt, answer string) []ports.Message {
		return []ports.Message{{Role: ports.RoleUser, Content: prompt}, {Role: ports.RoleAssistant, ToolCalls: []ports.ToolCall{{ID: "1", Name: "edit_file"}}},
			{Role: ports.RoleTool, ToolCallID: "1", Content: "{}"}, {Role: ports.RoleAssistant, Content: answer}}
	}
	aliceFix := ports.RefOf("/root", alice).Named("fix")
	for _, turn := range []ports.Turn{
		{Messages: msgs("look", "looked")},
		{Messages: msgs("fix a.txt", "fixed"), Changes: []ports.FileDiff{{Path: "a.txt", Added: 1, Removed: 1, Diff: "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new\n"}}},
	} {
		if _, err := store.Append(t.Context(), aliceFix, turn, ports.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Append(t.Context(), ports.RefOf("/root", ports.Principal{}), ports.Turn{Messages: msgs("local secret", "ok")}, ports.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	return r.session.Features(), alice
}

// TestAgentConversationResources: a principal lists and reads its own
// conversations (Markdown) and a turn's changes (the stored diff), never
// another principal's; the workspace's own resources survive the wrapping.
func TestAgentConversationResources(t *testing.T) {
	f, alice := featureRig(t)
	ctx := t.Context()
	list, err := f.Resources.ListResources(ctx, alice)
	if err != nil || len(list) != 2 || list[0].URI != agent.ViewURI || list[1].URI != "agentmcp://conversations/fix" {
		t.Fatalf("alice's list = %+v, %v", list, err)
	}
	c, err := f.Resources.ReadResource(ctx, "agentmcp://conversations/fix", alice)
	if err != nil || c[0].MIMEType != "text/markdown" || !strings.Contains(c[0].Text, "## Turn 2") || !strings.Contains(c[0].Text, "fix a.txt") || !strings.Contains(c[0].Text, "`edit_file`") {
		t.Fatalf("read fix = %+v, %v", c, err)
	}
	c, err = f.Resources.ReadResource(ctx, "agentmcp://conversations/fix/turns/2/changes", alice)
	if err != nil || c[0].MIMEType != "text/x-diff" || !strings.Contains(c[0].Text, "+new") {
		t.Fatalf("read changes = %+v, %v", c, err)
	}
	for _, uri := range []string{
		"agentmcp://conversations/default",             // the local principal's, not alice's
		"agentmcp://conversations/fix/turns/9/changes", // no such turn
		"agentmcp://conversations/fix/turns/x/changes",
		"agentmcp://conversations/../x",
	} {
		if _, err := f.Resources.ReadResource(ctx, uri, alice); !errors.Is(err, ports.ErrResourceNotFound) {
			t.Errorf("%s: %v, want not found", uri, err)
		}
	}
	local, _ := f.Resources.ReadResource(ctx, "agentmcp://conversations/default", ports.Principal{})
	if len(local) != 1 || !strings.Contains(local[0].Text, "local secret") {
		t.Fatalf("the local principal's own conversation: %+v", local)
	}
	if _, err := f.Resources.ReadResource(ctx, "agentmcp://conversations/fix", ports.Principal{}); !errors.Is(err, ports.ErrResourceNotFound) {
		t.Errorf("alice's conversation reached the local principal: %v", err)
	}
	tpl, err := f.Resources.ResourceTemplates(ctx, alice)
	if err != nil || len(tpl) != 3 || tpl[0].URITemplate != "agentmcp://conversations/{name}" || tpl[2].URITemplate != "agentmcp://conversations/{name}/running" {
		t.Fatalf("templates (a bare workspace has none of its own) = %+v, %v", tpl, err)
	}
}

// TestAgentPrompts: delegate and continue embed their arguments; review
// embeds the last turn's diff as a resource; continue's conversation
// argument completes from the principal's own names only.
func TestAgentPrompts(t *testing.T) {
	f, alice := featureRig(t)
	ctx := t.Context()
	ps, _ := f.Prompts.ListPrompts(ctx, alice)
	if len(ps) != 3 || ps[0].Name != "delegate" || ps[1].Name != "continue" || ps[2].Name != "review" {
		t.Fatalf("prompts = %+v", ps)
	}
	res, err := f.Prompts.GetPrompt(ctx, "continue", map[string]string{"conversation": "fix", "task": "add tests"}, alice)
	if err != nil || !strings.Contains(res.Messages[0].Content.Text, `"fix"`) || !strings.Contains(res.Messages[0].Content.Text, "add tests") {
		t.Fatalf("continue = %+v, %v", res, err)
	}
	res, err = f.Prompts.GetPrompt(ctx, "review", map[string]string{"conversation": "fix"}, alice)
	if err != nil || len(res.Messages) != 2 || res.Messages[1].Content.Resource == nil ||
		res.Messages[1].Content.Resource.URI != "agentmcp://conversations/fix/turns/2/changes" || !strings.Contains(res.Messages[1].Content.Resource.Text, "+new") {
		t.Fatalf("review = %+v, %v", res, err)
	}
	for _, tc := range []struct {
		name string
		args map[string]string
	}{
		{"delegate", nil},
		{"continue", map[string]string{"conversation": "fix"}},
		{"review", nil}, // alice has no default conversation
		{"review", map[string]string{"conversation": "Bad Name"}},
		{"nope", nil},
	} {
		if _, err := f.Prompts.GetPrompt(ctx, tc.name, tc.args, alice); !errors.Is(err, ports.ErrInvalidPrompt) {
			t.Errorf("%s %v: %v, want ErrInvalidPrompt", tc.name, tc.args, err)
		}
	}
	comp, err := f.Completer.Complete(ctx, ports.CompletionRequest{RefType: "ref/prompt", Name: "continue", Argument: "conversation", Value: "f"}, alice)
	if err != nil || len(comp.Values) != 1 || comp.Values[0] != "fix" {
		t.Fatalf("complete = %+v, %v", comp, err)
	}
	comp, _ = f.Completer.Complete(ctx, ports.CompletionRequest{RefType: "ref/prompt", Name: "continue", Argument: "conversation", Value: ""}, ports.Principal{})
	if len(comp.Values) != 1 || comp.Values[0] != "default" {
		t.Fatalf("the local principal completes %v, want only its own", comp.Values)
	}
}
