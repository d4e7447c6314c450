package domain

import (
	"encoding/json"
	"errors"

	"github.com/agentmcp/agentmcp/internal/jsonrpc"
)

// SubmitTool is the identity of the submission tool through which MCP clients
// hand a prompt to the session (docs/SPEC.md §2). The zero value means the defaults.
type SubmitTool struct {
	Name        string // default DefaultSubmitName
	Description string // default DefaultSubmitDescription
	Title       string // default DefaultSubmitTitle
	// Annotations default to [DefaultSubmitAnnotations].
	Annotations *ToolAnnotations

	// outputSchema, set by [SubmitTool.WithConversations], makes the tool
	// the conversational one: conversation and fork_from arguments and
	// this outputSchema.
	outputSchema json.RawMessage
}

const (
	DefaultSubmitName        = "agent_submit"
	DefaultSubmitDescription = "Submit a prompt to the agent and await its turn"
	DefaultSubmitTitle       = "Ask the agent"
)

// DefaultSubmitAnnotations describes a turn honestly to a client that gates
// on hints: not read-only (the agent's tools may write, with the user's
// approval), possibly destructive, not idempotent (every prompt is a new
// turn of a running conversation), and open-world (the agent talks to a
// model endpoint, which may be a hosted service).
func DefaultSubmitAnnotations() *ToolAnnotations {
	return &ToolAnnotations{ReadOnlyHint: Hint(false), DestructiveHint: Hint(true), IdempotentHint: Hint(false), OpenWorldHint: Hint(true)}
}

// SubmitInputSchema is the submission tool's input schema, byte for byte as
// docs/SPEC.md §2 fixes it.
var SubmitInputSchema = json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","minLength":1}},"required":["prompt"],"additionalProperties":false}`)

// SubmitConversationInputSchema is the input schema of the submission tool
// of a session that keeps named conversations (docs/SPEC.md §2, §9):
// SubmitInputSchema's prompt plus the optional conversation and fork_from,
// each a name of [CheckConversationName]'s rule.
var SubmitConversationInputSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"prompt":{"type":"string","minLength":1},` +
	`"conversation":{"type":"string","pattern":"^[A-Za-z0-9._-]{1,64}$","description":"The conversation this turn continues, created on first use; omitted: \"default\""},` +
	`"fork_from":{"type":"string","pattern":"^[A-Za-z0-9._-]{1,64}$","description":"Start conversation, which must be new, as a copy of this existing conversation"}},` +
	`"required":["prompt"],"additionalProperties":false}`)

// ErrInvalidSubmitName is returned when a SubmitTool name breaks the MCP
// tool-name rule; construction of every carrier fails with it.
var ErrInvalidSubmitName = errors.New("submit tool name must contain 1-128 ASCII letters, digits, dots, hyphens or underscores")

// Resolve fills defaults and validates the name.
func (s SubmitTool) Resolve() (SubmitTool, error) {
	if s.Name == "" {
		s.Name = DefaultSubmitName
	}
	if s.Description == "" {
		s.Description = DefaultSubmitDescription
	}
	if s.Title == "" {
		s.Title = DefaultSubmitTitle
	}
	if s.Annotations == nil {
		s.Annotations = DefaultSubmitAnnotations()
	}
	if !ValidToolName(s.Name) {
		return SubmitTool{}, ErrInvalidSubmitName
	}
	return s, nil
}

// WithConversations returns s as the submission tool of a session that
// keeps named conversations (ports.HasConversations): it advertises
// [SubmitConversationInputSchema] and outputSchema, and its
// [SubmitTool.Arguments] reads conversation and fork_from. The engine
// calls it; outputSchema is ports.TurnResultSchema.
func (s SubmitTool) WithConversations(outputSchema json.RawMessage) SubmitTool {
	s.outputSchema = outputSchema
	return s
}

// Conversations reports whether s is the conversational submission tool.
func (s SubmitTool) Conversations() bool { return s.outputSchema != nil }

// Tool returns the advertised tool: {prompt} and no outputSchema, or for
// the conversational tool its input schema and outputSchema.
func (s SubmitTool) Tool() Tool {
	t := Tool{Name: s.Name, Title: s.Title, Description: s.Description, InputSchema: SubmitInputSchema, Annotations: s.Annotations.Clone(), TaskSupport: TaskOptional}
	if s.Conversations() {
		t.InputSchema, t.OutputSchema = SubmitConversationInputSchema, s.outputSchema
	}
	return t
}

// InvalidArgumentsMessage is the tool-error text for a submission whose
// arguments break the schema (docs/SPEC.md §3.2); the session is not called.
func (s SubmitTool) InvalidArgumentsMessage() string {
	if s.Conversations() {
		return s.Name + " requires a non-empty string prompt, optional string conversation and fork_from, and no other arguments"
	}
	return s.Name + " requires a non-empty string prompt and no other arguments"
}

// SubmitArguments are a submission's arguments as [SubmitTool.Arguments]
// read them: Prompt is never empty; Conversation and ForkFrom are "" (not
// given) or follow [CheckConversationName]'s rule.
type SubmitArguments struct {
	Prompt, Conversation, ForkFrom string
}

// Arguments reads and checks a submission's arguments (a JSON object), the
// one place they are checked (docs/SPEC.md §3.2). Every member is named at
// most once (a duplicated name is refused, not collapsed to the last value
// as encoding/json would); prompt is a non-empty string; for the
// conversational tool conversation and fork_from may be given, each a
// string; no other member is. The error is client-visible:
// [SubmitTool.InvalidArgumentsMessage] for a shape, or a
// [ConversationNameError] for a name that breaks the rule. Relations
// between names (fork_from without conversation, a fork of itself, of
// nothing, onto an existing conversation) are the session's to refuse:
// only it knows which conversations exist.
func (s SubmitTool) Arguments(arguments json.RawMessage) (SubmitArguments, error) {
	var a SubmitArguments
	ms, dup, valid := jsonrpc.CheckedMembers(arguments, nil)
	if !valid || dup {
		return a, errors.New(s.InvalidArgumentsMessage())
	}
	var prompt, conversation, forkFrom bool // given
	for _, m := range ms {
		var dst *string
		switch {
		case m.Name == "prompt":
			dst, prompt = &a.Prompt, true
		case m.Name == "conversation" && s.Conversations():
			dst, conversation = &a.Conversation, true
		case m.Name == "fork_from" && s.Conversations():
			dst, forkFrom = &a.ForkFrom, true
		}
		if dst == nil || !jsonrpc.IsString(m.Value) {
			return SubmitArguments{}, errors.New(s.InvalidArgumentsMessage())
		}
		*dst = jsonrpc.Unquote(m.Value)
	}
	if !prompt || a.Prompt == "" {
		return SubmitArguments{}, errors.New(s.InvalidArgumentsMessage())
	}
	if conversation {
		if err := CheckConversationName("conversation", a.Conversation); err != nil {
			return SubmitArguments{}, err
		}
	}
	if forkFrom {
		if err := CheckConversationName("fork_from", a.ForkFrom); err != nil {
			return SubmitArguments{}, err
		}
	}
	return a, nil
}
