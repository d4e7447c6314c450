package domain

import (
	"bytes"
	"encoding/json"
	"errors"
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
	return Tool{Name: s.Name, Title: s.Title, Description: s.Description, InputSchema: SubmitInputSchema, Annotations: s.Annotations.Clone()}
}

// InvalidArgumentsMessage is the tool-error text for a submission whose
// arguments break the schema (docs/SPEC.md §3.2); the session is not called.
func (s SubmitTool) InvalidArgumentsMessage() string {
	return s.Name + " requires a non-empty string prompt and no other arguments"
}

// SubmitPrompt extracts the prompt from a submission's arguments (a JSON
// object). ok is false unless the object holds exactly one member, "prompt",
// whose value is a non-empty string.
func SubmitPrompt(arguments json.RawMessage) (prompt string, ok bool) {
	a := bytes.TrimSpace(arguments)
	if len(a) == 0 || a[0] != '{' {
		return "", false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(a, &m) != nil || len(m) != 1 {
		return "", false
	}
	raw, has := m["prompt"]
	if !has || json.Unmarshal(raw, &prompt) != nil || prompt == "" {
		return "", false
	}
	// A duplicated "prompt" key collapses in the map; count members to refuse it.
	if n, err := countMembers(a); err != nil || n != 1 {
		return "", false
	}
	return prompt, true
}

// countMembers counts the members of a JSON object, duplicates included.
func countMembers(obj []byte) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil {
		return 0, err
	}
	n := 0
	for dec.More() {
		if _, err := dec.Token(); err != nil {
			return 0, err
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}
