// Package wire is the workload every bench row sends, tools/call echo
// {"text":"hello world"}, and the check every answer must pass: the
// request's id, no error, exactly one text block, and (through [Expect]) the
// expected text byte for byte. A broken server must never look fast.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The workload and its two wires.
const (
	// EchoText is what the echo tool is asked to echo, and what the peers
	// answer with.
	EchoText = "hello world"

	// ProtoLegacy is the 2025-era wire: over HTTP no initialize, the version
	// in the MCP-Protocol-Version header only; over stdio one initialize.
	ProtoLegacy = "2025-11-25"
	// ProtoModern is the 2026-07-28 wire: the version, client info and
	// capabilities in every request's _meta, plus the Mcp-Method and
	// Mcp-Name headers over HTTP.
	ProtoModern = "2026-07-28"

	modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"agentmcp-bench","version":"0"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}},`

	callPrefix = `{"jsonrpc":"2.0","id":`

	// InitializeLine and InitializedLine are the stdio handshake (2025-11-25),
	// sent before the first call. The initialize request has id 1.
	InitializeLine  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agentmcp-bench","version":"0"}}}`
	InitializedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}`

	// EnvelopeText is agentmcp's answer text: its execution envelope of the
	// echo tool (docs/SPEC.md §2: every runtime tool's result is its
	// envelope as a text block).
	EnvelopeText = `{"success":true,"toolName":"echo","result":{"text":"hello world"}}`
)

// Wires lists the HTTP wires every HTTP row is run on.
var Wires = []string{ProtoLegacy, ProtoModern}

// Modern reports whether wire is the 2026-07-28 wire; it panics on a wire
// it does not know, so a typo cannot silently pick the legacy one.
func Modern(wire string) bool {
	switch wire {
	case ProtoLegacy:
		return false
	case ProtoModern:
		return true
	}
	panic("wire: unknown wire " + strconv.Quote(wire))
}

// AppendCall appends one tools/call echo request with the given id (no
// newline): [Echo]'s request.
func AppendCall(dst []byte, id int64, modern bool) []byte { return Echo.AppendRequest(dst, id, modern) }

// HTTPHeaders returns the MCP request headers of [Echo] on a wire, in a
// fixed order, without Host, Content-Length or Authorization.
func HTTPHeaders(modern bool) [][2]string { return Echo.HTTPHeaders(modern) }

// response is what the harness decodes from every answer. Decoding is the
// same for every server, so its cost is part of the floor.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  *struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	} `json:"result"`
	Error json.RawMessage `json:"error"`
}

// ErrNotResponse marks a message that carries no id and no result or error
// (a notification): readers skip it.
var ErrNotResponse = errors.New("not a response")

// Parse checks that msg is a successful tools/call answer and returns its
// integer id and its single text block. It fails on undecodable JSON, a
// jsonrpc other than "2.0", an id that is not an integer, a JSON-RPC error,
// isError, or anything but exactly one text block; a notification is
// ErrNotResponse.
func Parse(msg []byte) (id int64, text string, err error) {
	var r response
	if err := json.Unmarshal(msg, &r); err != nil {
		return 0, "", fmt.Errorf("undecodable answer: %v: %.200s", err, msg)
	}
	if len(r.ID) == 0 || string(r.ID) == "null" {
		if r.Result == nil && r.Error == nil {
			return 0, "", ErrNotResponse
		}
		return 0, "", fmt.Errorf("answer without id: %.200s", msg)
	}
	if r.JSONRPC != "2.0" {
		return 0, "", fmt.Errorf("jsonrpc %q: %.200s", r.JSONRPC, msg)
	}
	id, err = strconv.ParseInt(string(r.ID), 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("id %s is not an integer: %.200s", r.ID, msg)
	}
	if r.Error != nil {
		return id, "", fmt.Errorf("JSON-RPC error: %s", r.Error)
	}
	if r.Result == nil {
		return id, "", fmt.Errorf("no result: %.200s", msg)
	}
	if r.Result.IsError {
		return id, "", fmt.Errorf("isError: %.200s", msg)
	}
	if len(r.Result.Content) != 1 || r.Result.Content[0].Type != "text" {
		return id, "", fmt.Errorf("want one text block: %.200s", msg)
	}
	return id, r.Result.Content[0].Text, nil
}

// CallText is Parse for the answer to request id: any other id fails.
func CallText(msg []byte, id int64) (string, error) {
	got, text, err := Parse(msg)
	if err != nil {
		return "", err
	}
	if got != id {
		return "", fmt.Errorf("id %d, want %d", got, id)
	}
	return text, nil
}

// Expect checks the first answer's text of a server and returns it: every
// later answer must equal it byte for byte. It must be either the peers'
// "hello world" or agentmcp's echo success envelope, decoded and checked in
// full (success, toolName, result.text).
func Expect(text string) (string, error) {
	if text == EchoText {
		return text, nil
	}
	if err := CheckEnvelope(text); err != nil {
		return "", fmt.Errorf("first answer is neither %q nor agentmcp's echo envelope: %w", EchoText, err)
	}
	return text, nil
}

// CheckEnvelope checks that text is agentmcp's success envelope of the echo
// tool, {"success":true,"toolName":"echo","result":{"text":"hello world"}}.
func CheckEnvelope(text string) error {
	var env struct {
		Success  *bool  `json:"success"`
		ToolName string `json:"toolName"`
		Result   struct {
			Text *string `json:"text"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(text), &env); err != nil {
		return fmt.Errorf("text is not an envelope: %v: %.200s", err, text)
	}
	if env.Success == nil || !*env.Success || env.ToolName != "echo" || env.Result.Text == nil || *env.Result.Text != EchoText {
		return fmt.Errorf("not the echo success envelope: %.200s", text)
	}
	return nil
}

// SSEData returns the data of the first server-sent event in body whose
// data is a JSON-RPC message with an id: the answer. Events without an id
// (notifications) and comments are skipped.
func SSEData(body []byte) ([]byte, bool) {
	for len(body) > 0 {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimPrefix(data, []byte{' '})
		if bytes.Contains(data, []byte(`"id":`)) {
			return data, true
		}
	}
	return nil, false
}

// HTTPAnswer returns the JSON-RPC answer in an HTTP response's body, given
// its status and Content-Type: the body itself, or the data of its event
// stream's answer. Any status but 200 is an error, with the body's start.
func HTTPAnswer(status int, contentType string, body []byte) ([]byte, error) {
	if status != 200 {
		return nil, fmt.Errorf("status %d: %.200s", status, body)
	}
	if !strings.HasPrefix(contentType, "text/event-stream") {
		return body, nil
	}
	data, ok := SSEData(body)
	if !ok {
		return nil, fmt.Errorf("event stream without an answer: %.200s", body)
	}
	return data, nil
}

// RawID returns the raw id of a request written by [AppendCall] (or the
// initialize line): what the bare servers copy into their canned answer.
func RawID(msg []byte) ([]byte, bool) {
	_, rest, ok := bytes.Cut(msg, []byte(`"id":`))
	if !ok {
		return nil, false
	}
	end := bytes.IndexByte(rest, ',')
	if end < 0 {
		return nil, false
	}
	return rest[:end], true
}

// AppendBareAnswer appends the bare servers' canned answer to the request
// whose raw id is given (no newline).
func AppendBareAnswer(dst, rawID []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, rawID...)
	return append(dst, `,"result":{"content":[{"type":"text","text":"hello world"}]}}`...)
}
