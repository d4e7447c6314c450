package domain

// PermissionPrompt asks whoever drives a call to allow one tool call (docs/SPEC.md §1).
// Tool is a catalog tool name; Summary is the session's one-line description
// of the call; Arguments are facts about it that the engine renders safely
// (see Argument); Agent names a background agent when the prompt is not the
// caller's own. Within is the engine's, not the session's: the name of the
// submission tool when the prompt is raised within a submission (the agent
// asks, in a turn the person started); the engine sets it.
type PermissionPrompt struct {
	Tool      string
	Summary   string
	Arguments []Argument
	Agent     string
	Within    string
}

// AskPrompt asks whoever drives a call a question (docs/SPEC.md §1). Options, when
// non-empty, are the only valid answers. A Masked ask (a secret) is never sent
// to an MCP client: it is cancelled.
type AskPrompt struct {
	Question string
	Options  []string
	Masked   bool
	Agent    string
}

// Decision answers a PermissionPrompt. The zero value is Deny, so anything
// that fails to produce an answer denies.
type Decision int

const (
	Deny Decision = iota
	AllowOnce
)

// Answer answers an AskPrompt. The zero value is a cancelled ask.
type Answer struct {
	Text     string
	Answered bool // false: cancelled
}
