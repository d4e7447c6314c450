// Package turnjson is the stored form of a finished turn's messages and
// file changes, JSON that the durable conversation stores
// (adapters/sqlite, adapters/postgres) write and read alike, so a
// conversation means the same in either:
//
//	messages: [{"role", "content", "tool_calls": [{"id", "name", "arguments"}], "tool_call_id"}]
//	changes:  [{"path", "added", "removed", "diff"}]; none is no value (SQL NULL)
//
// It also reads the rows both stores select alike: [ScanTurns] (a
// conversation's turns) and [Kept] (what its byte bound keeps).
package turnjson

import (
	"encoding/json"

	"github.com/agentmcp/agentmcp/ports"
)

// message is a ports.Message as stored.
type message struct {
	Role       ports.Role `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// EncodeMessages is msgs as stored.
func EncodeMessages(msgs []ports.Message) ([]byte, error) {
	out := make([]message, len(msgs))
	for i, m := range msgs {
		out[i] = message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			out[i].ToolCalls = append(out[i].ToolCalls, toolCall(c))
		}
	}
	return json.Marshal(out)
}

// DecodeMessages reads what EncodeMessages wrote.
func DecodeMessages(b []byte) ([]ports.Message, error) {
	var in []message
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, err
	}
	out := make([]ports.Message, len(in))
	for i, m := range in {
		out[i] = ports.Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			out[i].ToolCalls = append(out[i].ToolCalls, ports.ToolCall(c))
		}
	}
	return out, nil
}

// fileDiff is a ports.FileDiff as stored.
type fileDiff struct {
	Path    string `json:"path"`
	Added   int    `json:"added"`
	Removed int    `json:"removed"`
	Diff    string `json:"diff"`
}

// EncodeChanges is changes as stored: nil when there are none (SQL NULL).
func EncodeChanges(changes []ports.FileDiff) ([]byte, error) {
	if len(changes) == 0 {
		return nil, nil
	}
	out := make([]fileDiff, len(changes))
	for i, c := range changes {
		out[i] = fileDiff(c)
	}
	return json.Marshal(out)
}

// DecodeChanges reads what EncodeChanges wrote; nil is none.
func DecodeChanges(b []byte) ([]ports.FileDiff, error) {
	if b == nil {
		return nil, nil
	}
	var in []fileDiff
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, err
	}
	out := make([]ports.FileDiff, len(in))
	for i, c := range in {
		out[i] = ports.FileDiff(c)
	}
	return out, nil
}
