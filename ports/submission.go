package ports

import (
	"encoding/json"
	"strings"

	"github.com/agentmcp/agentmcp/domain"
)

// Submission is one agent_submit's arguments (docs/SPEC.md §2, §9), as
// the engine has validated them: Prompt is never empty; Conversation and
// ForkFrom are "" or follow [domain.CheckConversationName]'s rule.
type Submission struct {
	// Prompt is the text the turn answers.
	Prompt string

	// Conversation names the caller's conversation the turn continues,
	// created on first use; "" is the default conversation
	// ([domain.DefaultConversation]). A name is the caller's own: another
	// principal's conversation of the same name is another conversation.
	Conversation string

	// ForkFrom, when set, starts Conversation (which must be set and must
	// not exist yet) as a copy of the history of the caller's conversation
	// of that name, which must exist.
	ForkFrom string
}

// ConversationSession is the optional interface of a [Session] whose Submit
// keeps named conversations: it honours [Submission.Conversation] and
// [Submission.ForkFrom] and fills [TurnResult.Report] on every successful
// turn. The engine advertises the conversation and fork_from arguments and
// the submission tool's outputSchema only for a session that reports true
// (docs/SPEC.md §2, §9); every other session keeps the {prompt} tool and a
// text result, so library sessions and their transcripts are unchanged.
type ConversationSession interface {
	Session

	// Conversations reports whether Submit keeps named conversations and
	// reports its turns. A decorator answers for what it wraps.
	Conversations() bool
}

// HasConversations reports whether s implements [ConversationSession] and
// says it keeps named conversations.
func HasConversations(s Session) bool {
	c, ok := s.(ConversationSession)
	return ok && c.Conversations()
}

// TurnReport is what one finished turn did, as agent_submit's
// structuredContent carries it beside the response (docs/SPEC.md §9). The
// JSON names are the wire's.
type TurnReport struct {
	// Conversation is the name of the conversation the turn joined
	// ([domain.DefaultConversation] when the submission named none).
	Conversation string `json:"conversation"`

	// Turn is the turn's number within its conversation, from 1; turns
	// dropped by the history budget still count, and a fork's first turn
	// follows the turns it copied.
	Turn int `json:"turn"`

	// ChangedFiles are the files the turn's write_file and edit_file
	// calls changed, each once, in the order first changed.
	ChangedFiles []ChangedFile `json:"changed_files"`

	// ToolCalls are the turn's tool calls in the order they ran.
	ToolCalls []ToolCallReport `json:"tool_calls"`

	// Usage sums the turn's token counts; 0 when the endpoint reported none.
	Usage TokenUsage `json:"usage"`

	// Stopped says why the turn stopped before the model finished its
	// answer; "" when it finished.
	Stopped StopReason `json:"stopped,omitempty"`
}

// ChangedFile is one file a turn changed, in lines of its unified diff.
type ChangedFile struct {
	Path    string `json:"path"`    // as the tool names it: slash-separated, relative to the workspace root
	Added   int    `json:"added"`   // lines added
	Removed int    `json:"removed"` // lines removed
}

// ToolCallReport is one tool call of a turn: the tool's name (an unknown
// tool's as the model wrote it, cut to 128 bytes) and whether it succeeded.
type ToolCallReport struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
}

// StopReason is why a turn stopped before the model finished its answer
// (docs/SPEC.md §9 "What ends a turn"). Every value is in [StopReasons].
type StopReason string

const (
	// StopMaxSteps: the turn reached its model-step bound.
	StopMaxSteps StopReason = "max_steps"
	// StopPromptUnanswered: a prompt of its tools went unanswered for the
	// approval timeout.
	StopPromptUnanswered StopReason = "prompt_unanswered"
	// StopSuperseded: a new submission of its conversation came while a
	// prompt of its tools waited.
	StopSuperseded StopReason = "superseded"
)

// StopReasons is every [StopReason] a report can carry, for the
// outputSchema's enum.
var StopReasons = []StopReason{StopMaxSteps, StopPromptUnanswered, StopSuperseded}

// TurnResultSchema is the submission tool's outputSchema for a
// [ConversationSession] (docs/SPEC.md §2, §9): the JSON Schema of the
// structuredContent object, "response" (the turn's answer text) merged with
// the [TurnReport]'s members under their JSON names; "stopped" is absent
// when the turn finished and otherwise one of [StopReasons]. Every other
// member is required and no other member appears.
var TurnResultSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"response":{"type":"string"},` +
	`"conversation":{"type":"string","minLength":1,"maxLength":64},` +
	`"turn":{"type":"integer","minimum":1},` +
	`"changed_files":{"type":"array","items":{"type":"object","properties":{"path":{"type":"string"},"added":{"type":"integer","minimum":0},"removed":{"type":"integer","minimum":0}},"required":["path","added","removed"],"additionalProperties":false}},` +
	`"tool_calls":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"ok":{"type":"boolean"}},"required":["name","ok"],"additionalProperties":false}},` +
	`"usage":{"type":"object","properties":{"input_tokens":{"type":"integer","minimum":0},"output_tokens":{"type":"integer","minimum":0}},"required":["input_tokens","output_tokens"],"additionalProperties":false},` +
	`"stopped":{"type":"string","enum":` + stopReasonsJSON() + `}},` +
	`"required":["response","conversation","turn","changed_files","tool_calls","usage"],"additionalProperties":false}`)

func stopReasonsJSON() string {
	q := make([]string, len(StopReasons))
	for i, r := range StopReasons {
		q[i] = `"` + string(r) + `"` // the values are plain ASCII words
	}
	return "[" + strings.Join(q, ",") + "]"
}

// AppendTurnResult appends the structuredContent object of a turn that
// answered response and did r (docs/SPEC.md §9): {"response":…} followed
// by r's members, changed_files and tool_calls as arrays even when empty,
// so it validates against [TurnResultSchema]; strings as
// [domain.MarshalJSON] writes them ("<" stays "<").
func AppendTurnResult(b []byte, response string, r TurnReport) ([]byte, error) {
	if r.ChangedFiles == nil {
		r.ChangedFiles = []ChangedFile{}
	}
	if r.ToolCalls == nil {
		r.ToolCalls = []ToolCallReport{}
	}
	resp, err := domain.MarshalJSON(response) // no HTML escaping, as the text block and the envelope
	if err != nil {
		return b, err
	}
	rep, err := domain.MarshalJSON(r)
	if err != nil {
		return b, err
	}
	b = append(append(append(b, `{"response":`...), resp...), ',')
	return append(b, rep[1:]...), nil // rep is an object with members: its '{' gives way
}

// FileChange is one change a tool call made to a file of the session
// (docs/SPEC.md §9 "Turn changes"), reported through [ReportChange].
type FileChange struct {
	// Path is the file as the tool names it: slash-separated, relative to
	// the session's root.
	Path string
	// Before is the file's content before the change: nil when it did not
	// exist (Created) or was not read (BeforeUnread).
	Before []byte
	// After is its content after the change.
	After []byte
	// Created: the file did not exist before.
	Created bool
	// BeforeUnread: the file existed but its content was not read (too
	// large to diff); Before is nil.
	BeforeUnread bool
}

// ChangeReporter is what a Caller offers when whoever drives the call keeps
// what the call changes in the session's files: the agent's Caller for
// its tools' calls, which keeps each turn's changes. A session reports
// through [ReportChange] and asks [WantsChanges] first, so it reads a
// file's old content only when someone keeps it. An MCP client's own
// Caller offers none.
type ChangeReporter interface {
	// FileChanged reports one change the call made. It is called on the
	// call's goroutine, after the change landed, and must not block. The
	// change's slices are the receiver's from then on.
	FileChanged(c FileChange)
}

// WantsChanges reports whether caller keeps file changes.
func WantsChanges(caller Caller) bool {
	_, ok := caller.(ChangeReporter)
	return ok
}

// ReportChange reports c to caller when it keeps file changes.
func ReportChange(caller Caller, c FileChange) {
	if r, ok := caller.(ChangeReporter); ok {
		r.FileChanged(c)
	}
}
