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

// Tool returns the advertised tool.
func (s SubmitTool) Tool() Tool {
	return Tool{Name: s.Name, Title: s.Title, Description: s.Description, InputSchema: SubmitInputSchema, Annotations: s.Annotations.Clone(), TaskSupport: TaskOptional}
}

// InvalidArgumentsMessage is the tool-error text for a submission whose
// arguments break the schema (docs/SPEC.md §3.2); the session is not called.
func (s SubmitTool) InvalidArgumentsMessage() string {
	return s.Name + " requires a non-empty string prompt and no other arguments"
}

// SubmitPrompt extracts the prompt from a submission's arguments (a JSON
// object). ok is false unless the object holds exactly one member, "prompt"
// (named once: a duplicated name is refused, not collapsed to the last
// value as encoding/json would), whose value is a non-empty string.
func SubmitPrompt(arguments json.RawMessage) (prompt string, ok bool) {
	ms, dup, valid := jsonrpc.CheckedMembers(arguments, nil)
	if !valid || dup || len(ms) != 1 || ms[0].Name != "prompt" || !jsonrpc.IsString(ms[0].Value) {
		return "", false
	}
	prompt = jsonrpc.Unquote(ms[0].Value)
	return prompt, prompt != ""
}
