package domain

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/agentmcp/agentmcp/internal/jsonrpc"
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

// Content is one MCP content block. agentmcp only produces text blocks: a
// runtime tool's result is an envelope, never structuredContent; only the
// submission tool of a session that keeps conversations adds
// structuredContent beside its text (docs/SPEC.md §2, §3).
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

// AppendEnvelope appends e as MarshalJSON(e) writes it (docs/SPEC.md §1:
// these names, in this order, absent optionals left out), written straight
// into b with internal/jsonrpc's encoders rather than through reflection:
// the envelope is rendered on every tools/call. It fails, as MarshalJSON
// does, when Result or Metadata is not valid JSON or Duration is not
// finite. A test holds it to MarshalJSON byte for byte.
func AppendEnvelope(b []byte, e Envelope) ([]byte, error) {
	b = strconv.AppendBool(append(b, `{"success":`...), e.Success)
	if e.ToolName != "" {
		b = jsonrpc.AppendString(append(b, `,"toolName":`...), e.ToolName)
	}
	var err error
	if len(e.Result) > 0 {
		if b, err = jsonrpc.AppendRaw(append(b, `,"result":`...), e.Result); err != nil {
			return b, err
		}
	}
	if e.Error != "" {
		b = jsonrpc.AppendString(append(b, `,"error":`...), e.Error)
	}
	if e.Duration != nil {
		if math.IsNaN(*e.Duration) || math.IsInf(*e.Duration, 0) {
			return b, errors.New("json: unsupported value: duration is not finite")
		}
		b = jsonrpc.AppendFloat(append(b, `,"duration":`...), *e.Duration)
	}
	if e.ExecutionID != "" {
		b = jsonrpc.AppendString(append(b, `,"executionId":`...), e.ExecutionID)
	}
	if len(e.Metadata) > 0 {
		if b, err = jsonrpc.AppendRaw(append(b, `,"metadata":`...), e.Metadata); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}
