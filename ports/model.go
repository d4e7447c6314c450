package ports

import (
	"context"
	"errors"

	"github.com/agentmcp/agentmcp/domain"
)

// Model is the driven port of the reference agent (docs/SPEC.md §9): one
// chat step of a language model. The agent loop depends on this port only,
// so another provider is one more adapter.
//
// The shapes follow OpenAI Chat Completions' terms
// (https://platform.openai.com/docs/api-reference/chat): a conversation of
// messages with roles, a catalog of function tools, and an assistant
// message that carries text, tool calls, or both.
//
// Implementations must be safe for concurrent use. Their error messages are
// client-visible (a failed turn is JSON-RPC -32603 with the error's first
// line, docs/SPEC.md §3), so they name the endpoint and the cause and never
// carry a credential, a prompt or a tool result.
type Model interface {
	// Step sends req and returns the assistant's message. When the endpoint
	// streams, each piece of assistant text is passed to req.OnText as it
	// arrives, before Step returns; the returned message holds the whole
	// text either way.
	//
	// Cancelling ctx cancels the request at once and Step returns ctx's
	// error (wrapped). An answer with no choice at all is [ErrNoChoices]
	// (wrapped), so the caller can tell the model instead of failing.
	// Any other error fails the step: the endpoint could not be reached,
	// refused the request (a bad key, an unknown model), kept failing after
	// its retries, or answered something that is not a chat completion.
	//
	// An error's message may repeat what the endpoint wrote (cleaned of
	// credentials), which may quote the request; the form a log may hold is
	// the error's [log/slog.LogValuer] value when it has one (the same facts
	// without anything the endpoint wrote). A caller logs nothing else of
	// the error but its kind (docs/SPEC.md §9).
	Step(ctx context.Context, req ModelRequest) (AssistantMessage, error)

	// Describe names the model and the endpoint for logs and messages: never
	// a credential.
	Describe() ModelDescription
}

// ModelDescription names a model and its endpoint.
type ModelDescription struct {
	Model    string // the model name sent in each request
	Endpoint string // the base URL without credentials, query or fragment
}

// ModelRequest is one chat step's input.
type ModelRequest struct {
	// Messages is the conversation so far, oldest first: a system message,
	// then user, assistant and tool messages. Every assistant message with
	// tool calls is followed by one tool message per call, in the calls'
	// order.
	Messages []Message

	// Tools is the catalog the model may call: each tool's name,
	// description and inputSchema (sent as the function's parameters).
	Tools []domain.Tool

	// OnText, when not nil, receives the assistant's text as it streams,
	// one delta at a time, from the goroutine that called Step.
	OnText func(delta string)
}

// Role is a message's author, as Chat Completions names them.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one message of a conversation.
type Message struct {
	Role Role

	// Content is the message's text; an assistant message with tool calls
	// may have none.
	Content string

	// ToolCalls are an assistant message's calls, in the model's order.
	ToolCalls []ToolCall

	// ToolCallID is, on a tool message, the ID of the call it answers.
	ToolCallID string
}

// ToolCall is one function call the model asked for.
type ToolCall struct {
	// ID is the model's identifier of the call; the tool message answering
	// it carries the same value.
	ID string

	// Name is the tool's name as the model wrote it (it may name no tool).
	Name string

	// Arguments is the JSON text the model wrote for the arguments. Models
	// sometimes write invalid JSON here: it is kept as written.
	Arguments string
}

// AssistantMessage is a chat step's output: the assistant's text and/or
// tool calls, and why the model stopped.
type AssistantMessage struct {
	Content   string
	ToolCalls []ToolCall

	// FinishReason is the endpoint's finish_reason ("stop", "tool_calls",
	// "length", "content_filter", …), or "" when it sent none. Some servers
	// say "stop" although they sent tool calls: the calls decide.
	FinishReason string

	// Usage is the step's token counts when the endpoint reported them, else
	// nil.
	Usage *TokenUsage
}

// TokenUsage is a step's token counts as the endpoint reported them
// (OpenTelemetry's gen_ai.usage.input_tokens and output_tokens; Chat
// Completions' prompt_tokens and completion_tokens).
type TokenUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// ErrNoChoices is the error kind of a model answer that held no choice (an
// empty "choices" list, or a stream that ended without one). The agent
// tells the model and goes on (docs/SPEC.md §9).
var ErrNoChoices = errors.New("the model endpoint answered with no choices")
