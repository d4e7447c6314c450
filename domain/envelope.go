package domain

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Envelope is the execution envelope a runtime tool returns (docs/SPEC.md §1). It is
// serialised with these JSON names in this order, absent optionals omitted;
// the field order below is the wire order.
type Envelope struct {
	Success     bool            `json:"success"`
	ToolName    string          `json:"toolName,omitempty"`
	Result      json.RawMessage `json:"result,omitempty"` // any JSON value; nil = absent
	Error       string          `json:"error,omitempty"`
	Duration    *float64        `json:"duration,omitempty"` // milliseconds
	ExecutionID string          `json:"executionId,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"` // a JSON object; nil = absent
}

// Content is one MCP content block. agentmcp only produces text blocks:
// results are envelopes, never structuredContent (docs/SPEC.md §2).
type Content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// ToolResult is an MCP CallToolResult as agentmcp produces it. IsError is a
// pointer because the submission tool's success omits it while an envelope
// always states it (docs/SPEC.md §3).
type ToolResult struct {
	Content []Content `json:"content"`
	IsError *bool     `json:"isError,omitempty"`
}

var (
	trueValue  = true
	falseValue = false
)

// ToolError is {"content":[{"type":"text","text":message}],"isError":true}.
func ToolError(message string) ToolResult {
	return ToolResult{Content: []Content{{Type: "text", Text: message}}, IsError: &trueValue}
}

// TextResult is the submission tool's success: the turn's response as one
// text block, no isError ("" stays "").
func TextResult(text string) ToolResult {
	return ToolResult{Content: []Content{{Type: "text", Text: text}}}
}

// RenderEnvelope renders e as {"content":[{"type":"text","text":<e>}],
// "isError":!e.Success} (docs/SPEC.md §3.4).
func RenderEnvelope(e Envelope) (ToolResult, error) {
	text, err := MarshalJSON(e)
	if err != nil {
		return ToolResult{}, err
	}
	isErr := &falseValue
	if !e.Success {
		isErr = &trueValue
	}
	return ToolResult{Content: []Content{{Type: "text", Text: string(text)}}, IsError: isErr}, nil
}

// MaxClientMessage bounds the part of an error message a client sees.
const MaxClientMessage = 500

// ClientMessage returns what a client may see of a session error: its first
// line, at most 500 bytes, cut on a UTF-8 boundary (docs/SPEC.md §1).
func ClientMessage(err error) string {
	msg := err.Error()
	if i := strings.IndexAny(msg, "\r\n"); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > MaxClientMessage {
		cut := MaxClientMessage
		for cut > 0 && !utf8Start(msg[cut]) {
			cut--
		}
		msg = msg[:cut]
	}
	return msg
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// MarshalJSON is json.Marshal without HTML escaping: "<", ">" and "&" stay
// as written, as JavaScript's JSON.stringify leaves them, so envelope text
// reads as the session wrote it. The result is compact, without a newline.
func MarshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
