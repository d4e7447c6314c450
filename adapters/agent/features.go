package agent

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// The agent's server features (docs/SPEC.md §2, §9): the inner session's
// resources (the workspace's files) with the caller's own conversations
// beside them, subscriptions to both (the inner session's own for its
// resources), three prompts a person uses as slash commands, and
// completion of their conversation arguments. Everything is read from the
// Store by the asking principal's ref (ports.RefOf), so a principal never
// sees another's conversation.

// Conversation resource URIs.
const (
	conversationPrefix   = "agentmcp://conversations/"
	conversationTemplate = conversationPrefix + "{name}"
	changesTemplate      = conversationPrefix + "{name}/turns/{n}/changes"
	runningTemplate      = conversationPrefix + "{name}/running"
	runningSuffix        = "/running"
)

// ViewURI is the turn view's resource: an MCP App view (SEP-1865) of
// MIME type domain.AppMIMEType, which the submission tool links for a
// client that renders apps (engine.ViewOptions; docs/SPEC.md §2 "The turn
// view").
const ViewURI = "ui://agentmcp/turn"

// viewHTML is the view: one self-contained HTML document, built from
// web/view by web/build.mjs (docs/ARCHITECTURE.md "The turn view").
//
//go:embed view/turn.html
var viewHTML string

// viewMeta is the view's _meta.ui: an empty CSP allowance (it loads
// nothing from the network: no connect, resource, frame or base URI
// domain) and a border from the host.
var viewMeta = json.RawMessage(`{"ui":{"csp":{"connectDomains":[],"resourceDomains":[],"frameDomains":[],"baseUriDomains":[]},"prefersBorder":true}}`)

func viewResource() ports.Resource {
	return ports.Resource{URI: ViewURI, Name: "turn-view", Title: "Agent turn",
		Description: "A live view of an agent turn: its steps, tool calls, changed files with their diffs, and its answer",
		MIMEType:    domain.AppMIMEType, Size: int64(len(viewHTML)), Meta: viewMeta}
}

// Prompt names.
const (
	promptDelegate = "delegate"
	promptContinue = "continue"
	promptReview   = "review"
)

// maxListed bounds the conversations listed and completed per principal.
const maxListed = 1000

// Features are the inner session's features with the agent's own: the
// inner resources and their subscriptions survive the wrapping, and
// conversations, prompts and completion are added.
func (s *Session) Features() ports.Features {
	inner := ports.FeaturesOf(s.inner)
	f := features{s: s, inner: inner}
	return ports.Features{Resources: f, Prompts: f, Completer: f, Subscriber: f}
}

type features struct {
	s     *Session
	inner ports.Features
}

func (f features) names(ctx context.Context, p ports.Principal) ([]string, error) {
	ref := ports.RefOf(f.s.opts.Root, p)
	infos, err := f.s.opts.Store.List(ctx, ports.ConversationFilter{Root: ref.Root, Principal: ref.Principal, Limit: maxListed})
	if err != nil {
		return nil, err
	}
	names := make([]string, len(infos))
	for i, in := range infos {
		names[i] = in.Ref.Name
	}
	return names, nil
}

// ListResources lists the inner session's resources, then the turn view,
// then each of the principal's conversations, the most recently updated
// first.
func (f features) ListResources(ctx context.Context, p ports.Principal) ([]ports.Resource, error) {
	var list []ports.Resource
	if f.inner.Resources != nil {
		inner, err := f.inner.Resources.ListResources(ctx, p)
		if err != nil {
			return nil, err
		}
		list = append(list, inner...)
	}
	list = append(list, viewResource())
	names, err := f.names(ctx, p)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		list = append(list, ports.Resource{URI: conversationPrefix + n, Name: "conversation " + n,
			Description: "The agent's conversation " + strconv.Quote(n) + ": its turns as Markdown", MIMEType: "text/markdown", Size: -1})
	}
	return list, nil
}

func (f features) ResourceTemplates(ctx context.Context, p ports.Principal) ([]ports.ResourceTemplate, error) {
	var list []ports.ResourceTemplate
	if f.inner.Resources != nil {
		inner, err := f.inner.Resources.ResourceTemplates(ctx, p)
		if err != nil {
			return nil, err
		}
		list = append(list, inner...)
	}
	return append(list,
		ports.ResourceTemplate{URITemplate: conversationTemplate, Name: "conversation", Title: "Agent conversation",
			Description: "One of your conversations with the agent, its turns as Markdown", MIMEType: "text/markdown"},
		ports.ResourceTemplate{URITemplate: changesTemplate, Name: "turn-changes", Title: "A turn's changes",
			Description: "The unified diff of the files one turn of a conversation changed", MIMEType: "text/x-diff"},
		ports.ResourceTemplate{URITemplate: runningTemplate, Name: "running-turn", Title: "The running turn",
			Description: "The live state of a conversation's running turn (or the last that ended): steps, streamed text, tool calls, the prompt awaiting approval with its diff, usage", MIMEType: "application/json"},
	), nil
}

// ReadResource reads a conversation or a turn's changes, and hands any
// other URI to the inner session.
func (f features) ReadResource(ctx context.Context, uri string, p ports.Principal) ([]ports.ResourceContents, error) {
	if uri == ViewURI {
		return []ports.ResourceContents{{URI: uri, MIMEType: domain.AppMIMEType, Text: viewHTML, Meta: viewMeta}}, nil
	}
	rest, ok := strings.CutPrefix(uri, conversationPrefix)
	if !ok {
		if f.inner.Resources == nil {
			return nil, ports.ErrResourceNotFound
		}
		return f.inner.Resources.ReadResource(ctx, uri, p)
	}
	if name, ok := strings.CutSuffix(rest, runningSuffix); ok {
		return f.readRunning(uri, name, p)
	}
	name, turn, changes := rest, 0, false
	if n, tail, ok := strings.Cut(rest, "/turns/"); ok {
		num, ok := strings.CutSuffix(tail, "/changes")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, ports.ErrResourceNotFound
		}
		name, turn, changes = n, v, true
	}
	if domain.CheckConversationName("conversation", name) != nil {
		return nil, ports.ErrResourceNotFound
	}
	turns, err := f.s.opts.Store.Load(ctx, ports.RefOf(f.s.opts.Root, p).Named(name))
	if err != nil {
		return nil, err
	}
	if len(turns) == 0 {
		return nil, fmt.Errorf("%w: you have no conversation %q", ports.ErrResourceNotFound, name)
	}
	if !changes {
		return []ports.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: transcriptMarkdown(name, turns)}}, nil
	}
	i := slices.IndexFunc(turns, func(t ports.Turn) bool { return t.Number == turn })
	if i < 0 {
		return nil, fmt.Errorf("%w: conversation %q keeps no turn %d", ports.ErrResourceNotFound, name, turn)
	}
	return []ports.ResourceContents{{URI: uri, MIMEType: "text/x-diff", Text: turnDiff(turns[i])}}, nil
}

// readRunning reads the live state of the principal's conversation name:
// its running turn, else the last that ended since the server started.
func (f features) readRunning(uri, name string, p ports.Principal) ([]ports.ResourceContents, error) {
	if domain.CheckConversationName("conversation", name) != nil {
		return nil, ports.ErrResourceNotFound
	}
	l := f.s.liveOf(convKey{p, name})
	if l == nil {
		return nil, errNoLive(name)
	}
	b, err := l.snapshot()
	if err != nil {
		return nil, err
	}
	return []ports.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(b)}}, nil
}

// SubscribeResource subscribes to one of the principal's conversations
// (told each time this session stores a turn of it; a turn stored by
// another process sharing the store is not seen) or to a turn's changes
// (held and never told: a stored turn never changes), after the checks of
// a read; any other URI is the inner session's (not found when it serves
// no subscriptions).
func (f features) SubscribeResource(ctx context.Context, uri string, p ports.Principal, updated func()) (func(), error) {
	rest, ok := strings.CutPrefix(uri, conversationPrefix)
	if !ok {
		if f.inner.Resources == nil || f.inner.Subscriber == nil {
			return nil, ports.ErrResourceNotFound
		}
		return f.inner.Subscriber.SubscribeResource(ctx, uri, p, updated)
	}
	if _, err := f.ReadResource(ctx, uri, p); err != nil {
		return nil, err
	}
	if strings.Contains(rest, "/") { // .../turns/{n}/changes
		return func() {}, nil
	}
	return f.s.watchers.add(ports.RefOf(f.s.opts.Root, p).Named(rest), updated), nil
}

// convWatchers are the subscriptions to conversations, by reference.
type convWatchers struct {
	mu   sync.Mutex
	subs map[ports.ConversationRef]map[*func()]bool
}

func (w *convWatchers) add(ref ports.ConversationRef, updated func()) func() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.subs == nil {
		w.subs = make(map[ports.ConversationRef]map[*func()]bool)
	}
	if w.subs[ref] == nil {
		w.subs[ref] = make(map[*func()]bool)
	}
	key := &updated
	w.subs[ref][key] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			delete(w.subs[ref], key)
			if len(w.subs[ref]) == 0 {
				delete(w.subs, ref)
			}
		})
	}
}

// updated tells ref's subscriptions that a turn of it was stored; updated
// only marks a subscription pending (ports.ResourceSubscriber), so it runs
// under w.mu.
func (w *convWatchers) updated(ref ports.ConversationRef) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for cb := range w.subs[ref] {
		(*cb)()
	}
}

// transcriptMarkdown renders a conversation's turns: each turn's prompt,
// the tools it called and its answer.
func transcriptMarkdown(name string, turns []ports.Turn) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Conversation %s\n", name)
	for _, t := range turns {
		fmt.Fprintf(&b, "\n## Turn %d\n", t.Number)
		for _, m := range t.Messages {
			switch {
			case m.Role == ports.RoleUser:
				fmt.Fprintf(&b, "\n**Prompt**\n\n%s\n", m.Content)
			case m.Role == ports.RoleAssistant && len(m.ToolCalls) > 0:
				for _, c := range m.ToolCalls {
					fmt.Fprintf(&b, "\n- called `%s`\n", c.Name)
				}
			case m.Role == ports.RoleAssistant:
				fmt.Fprintf(&b, "\n**Answer**\n\n%s\n", m.Content)
			}
		}
		for _, c := range t.Changes {
			fmt.Fprintf(&b, "\n- changed `%s` (+%d −%d)\n", c.Path, c.Added, c.Removed)
		}
	}
	return b.String()
}

func turnDiff(t ports.Turn) string {
	var b strings.Builder
	for _, c := range t.Changes {
		b.WriteString(c.Diff)
		if !strings.HasSuffix(c.Diff, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func (f features) ListPrompts(context.Context, ports.Principal) ([]ports.Prompt, error) {
	conv := ports.PromptArgument{Name: "conversation", Description: "The name of one of your conversations with the agent"}
	return []ports.Prompt{
		{Name: promptDelegate, Title: "Delegate to the agent", Description: "Hand a task to the agent working in the workspace",
			Arguments: []ports.PromptArgument{{Name: "task", Description: "What the agent should do", Required: true}}},
		{Name: promptContinue, Title: "Continue a conversation", Description: "Hand a follow-up to one of your named conversations with the agent",
			Arguments: []ports.PromptArgument{{Name: conv.Name, Description: conv.Description, Required: true}, {Name: "task", Description: "The follow-up", Required: true}}},
		{Name: promptReview, Title: "Review the last turn's changes", Description: "Review what the agent's last turn in a conversation changed (default: the default conversation)",
			Arguments: []ports.PromptArgument{conv}},
	}, nil
}

func (f features) GetPrompt(ctx context.Context, name string, args map[string]string, p ports.Principal) (ports.PromptResult, error) {
	need := func(k string) (string, error) {
		v, ok := args[k]
		if !ok || strings.TrimSpace(v) == "" {
			return "", fmt.Errorf("%w: prompt %s needs the argument %s", ports.ErrInvalidPrompt, name, k)
		}
		return v, nil
	}
	user := func(t string) ports.PromptMessage {
		return ports.PromptMessage{Role: "user", Content: ports.PromptContent{Type: "text", Text: t}}
	}
	switch name {
	case promptDelegate:
		task, err := need("task")
		if err != nil {
			return ports.PromptResult{}, err
		}
		return ports.PromptResult{Description: "Delegate a task to the agent", Messages: []ports.PromptMessage{
			user("Hand this task to the agent with its submission tool (agent_submit) and report its answer:\n\n" + task)}}, nil
	case promptContinue:
		conv, err := need("conversation")
		if err != nil {
			return ports.PromptResult{}, err
		}
		if err := domain.CheckConversationName("conversation", conv); err != nil {
			return ports.PromptResult{}, fmt.Errorf("%w: %s", ports.ErrInvalidPrompt, err)
		}
		task, err := need("task")
		if err != nil {
			return ports.PromptResult{}, err
		}
		return ports.PromptResult{Description: "Continue the conversation " + strconv.Quote(conv), Messages: []ports.PromptMessage{
			user(fmt.Sprintf("Hand this follow-up to the agent with its submission tool (agent_submit), with conversation %q, and report its answer:\n\n%s", conv, task))}}, nil
	case promptReview:
		conv := args["conversation"]
		if conv == "" {
			conv = domain.DefaultConversation
		}
		if err := domain.CheckConversationName("conversation", conv); err != nil {
			return ports.PromptResult{}, fmt.Errorf("%w: %s", ports.ErrInvalidPrompt, err)
		}
		turns, err := f.s.opts.Store.Load(ctx, ports.RefOf(f.s.opts.Root, p).Named(conv))
		if err != nil {
			return ports.PromptResult{}, err
		}
		if len(turns) == 0 {
			return ports.PromptResult{}, fmt.Errorf("%w: you have no conversation %q", ports.ErrInvalidPrompt, conv)
		}
		last := turns[len(turns)-1]
		if len(last.Changes) == 0 {
			return ports.PromptResult{}, fmt.Errorf("%w: the last turn of %q changed no file", ports.ErrInvalidPrompt, conv)
		}
		uri := fmt.Sprintf("%s%s/turns/%d/changes", conversationPrefix, conv, last.Number)
		return ports.PromptResult{Description: fmt.Sprintf("Review turn %d of %q", last.Number, conv), Messages: []ports.PromptMessage{
			user(fmt.Sprintf("Review these changes the agent made in turn %d of the conversation %q: are they correct, complete and safe? Point out anything to fix.", last.Number, conv)),
			{Role: "user", Content: ports.PromptContent{Type: "resource", Resource: &ports.ResourceContents{URI: uri, MIMEType: "text/x-diff", Text: turnDiff(last)}}},
		}}, nil
	}
	return ports.PromptResult{}, fmt.Errorf("%w: unknown prompt %q", ports.ErrInvalidPrompt, name)
}

// Complete completes the conversation arguments of continue and review,
// and the {name} of the conversation templates, from the principal's own
// conversation names; anything else goes to the inner session.
func (f features) Complete(ctx context.Context, req ports.CompletionRequest, p ports.Principal) (ports.Completion, error) {
	ours := req.RefType == "ref/prompt" && (req.Name == promptContinue || req.Name == promptReview) && req.Argument == "conversation" ||
		req.RefType == "ref/resource" && (req.URI == conversationTemplate || req.URI == changesTemplate) && req.Argument == "name"
	switch {
	case ours:
	case req.RefType == "ref/prompt" && req.Name == promptDelegate || req.RefType == "ref/prompt" && (req.Name == promptContinue || req.Name == promptReview):
		return ports.Completion{}, nil // free text: nothing to suggest
	case f.inner.Completer != nil:
		return f.inner.Completer.Complete(ctx, req, p)
	default:
		return ports.Completion{}, fmt.Errorf("%w: nothing to complete for %s%s", ports.ErrInvalidPrompt, req.Name, req.URI)
	}
	names, err := f.names(ctx, p)
	if err != nil {
		return ports.Completion{}, err
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, req.Value) {
			out = append(out, n)
		}
	}
	return ports.Completion{Values: out, Total: len(out)}, nil
}
