package agent

import (
	"fmt"

	"github.com/agentmcp/agentmcp/ports"
)

// messageSize is what a message counts against the history budget.
func messageSize(m ports.Message) int {
	n := len(m.Role) + len(m.Content) + len(m.ToolCallID)
	for _, tc := range m.ToolCalls {
		n += len(tc.ID) + len(tc.Name) + len(tc.Arguments)
	}
	return n
}

// noteBytes is the size below which shrinkTurn leaves a text or the
// arguments of a call as they are: a note replacing them is about as long.
const noteBytes = 256

// boundTurn returns a finished turn's messages bounded to budget bytes (as
// messageSize counts them): what a conversation keeps of a turn, and what
// anything that stores finished turns must keep too (docs/SPEC.md §9).
//
//  1. shrinkTurn: the tool results, call arguments and texts between the
//     prompt and the response, oldest first, are replaced by short notes
//     until it fits;
//  2. still too large (a huge prompt or response): only the prompt and the
//     response stay, each cut to half the budget.
//
// Either way the result is a valid conversation: every tool call is
// followed by its result. msgs is a finished turn: the prompt first, the
// response (an assistant message without calls) last; it is shrunk in
// place.
func boundTurn(msgs []ports.Message, budget int) []ports.Message {
	if len(msgs) < 2 {
		return msgs
	}
	last := messageSize(msgs[len(msgs)-1])
	shrinkTurn(msgs[:len(msgs)-1], budget-last)
	if turnSize(msgs) <= budget {
		return msgs
	}
	prompt, answer := msgs[0], msgs[len(msgs)-1]
	half := (budget - len(prompt.Role) - len(answer.Role)) / 2
	prompt.Content = capText(prompt.Content, half)
	answer.Content = capText(answer.Content, half)
	prompt.ToolCalls, prompt.ToolCallID, answer.ToolCalls, answer.ToolCallID = nil, "", nil, ""
	return []ports.Message{prompt, answer}
}

// shrinkTurn replaces, oldest message first, each tool result, call
// arguments and text longer than noteBytes by a short note, until the
// messages fit budget or nothing is left to shrink; the prompt (msgs[0]) is
// never touched. It shrinks msgs in place (they are the turn's own; a
// message's calls are copied before they change) and returns it.
func shrinkTurn(msgs []ports.Message, budget int) []ports.Message {
	total := turnSize(msgs)
	for i := 1; total > budget && i < len(msgs); i++ {
		m := &msgs[i]
		before := messageSize(*m)
		switch {
		case m.Role == ports.RoleTool && len(m.Content) > noteBytes:
			m.Content = fmt.Sprintf("[agentmcp: this result (%d bytes) was dropped to keep the turn within %d bytes; call the tool again if you need it]", len(m.Content), budget)
		case len(m.Content) > noteBytes:
			m.Content = capText(m.Content, noteBytes)
		}
		if len(m.ToolCalls) > 0 {
			calls := make([]ports.ToolCall, len(m.ToolCalls))
			copy(calls, m.ToolCalls)
			for k := range calls {
				if n := len(calls[k].Arguments); n > noteBytes {
					calls[k].Arguments = fmt.Sprintf(`{"agentmcp_note":"arguments (%d bytes) dropped to keep the turn within its bound"}`, n)
				}
			}
			m.ToolCalls = calls
		}
		total += messageSize(*m) - before
	}
	return msgs
}

func turnSize(msgs []ports.Message) int {
	n := 0
	for _, m := range msgs {
		n += messageSize(m)
	}
	return n
}
