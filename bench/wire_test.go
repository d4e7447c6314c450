package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// The workload: tools/call echo {"text":"hello world"}.
const (
	echoText = "hello world"

	// protoLegacy is the 2025-era wire: no initialize over HTTP, the
	// version in the MCP-Protocol-Version header only.
	protoLegacy = "2025-11-25"
	// protoModern is the 2026-07-28 wire: the version, client info and
	// capabilities in every request's _meta, plus Mcp-Method / Mcp-Name.
	protoModern = "2026-07-28"

	modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"agentmcp-bench","version":"0"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}},`

	callPrefix       = `{"jsonrpc":"2.0","id":`
	callSuffix       = `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello world"}}}`
	callSuffixModern = `,"method":"tools/call","params":{` + modernMeta + `"name":"echo","arguments":{"text":"hello world"}}}`

	initializeLine  = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"agentmcp-bench","version":"0"}}}`
	initializedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// appendCall appends one tools/call request with the given id (no newline).
func appendCall(dst []byte, id int64, modern bool) []byte {
	dst = append(dst, callPrefix...)
	dst = strconv.AppendInt(dst, id, 10)
	if modern {
		return append(dst, callSuffixModern...)
	}
	return append(dst, callSuffix...)
}

// rpcResponse is what the harness decodes from every answer. Decoding is the
// same for every server, so its cost is part of the harness floor.
type rpcResponse struct {
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

// errNotResponse marks a message that carries no id (a notification): the
// stdio reader skips it.
var errNotResponse = errors.New("not a response")

// callText checks that msg is the successful answer to request id and
// returns its single text block. It fails on a wrong jsonrpc version, a
// wrong id, a JSON-RPC error, isError, or anything but one text block.
func callText(msg []byte, id int64) (string, error) {
	var r rpcResponse
	if err := json.Unmarshal(msg, &r); err != nil {
		return "", fmt.Errorf("undecodable answer: %v: %.200s", err, msg)
	}
	if len(r.ID) == 0 || string(r.ID) == "null" {
		if r.Result == nil && r.Error == nil {
			return "", errNotResponse
		}
		return "", fmt.Errorf("answer without id: %.200s", msg)
	}
	if r.JSONRPC != "2.0" {
		return "", fmt.Errorf("jsonrpc %q: %.200s", r.JSONRPC, msg)
	}
	var want [20]byte
	if !bytes.Equal(r.ID, strconv.AppendInt(want[:0], id, 10)) {
		return "", fmt.Errorf("id %s, want %d", r.ID, id)
	}
	if r.Error != nil {
		return "", fmt.Errorf("JSON-RPC error: %s", r.Error)
	}
	if r.Result == nil {
		return "", fmt.Errorf("no result: %.200s", msg)
	}
	if r.Result.IsError {
		return "", fmt.Errorf("isError: %.200s", msg)
	}
	if len(r.Result.Content) != 1 || r.Result.Content[0].Type != "text" {
		return "", fmt.Errorf("want one text block: %.200s", msg)
	}
	return r.Result.Content[0].Text, nil
}

// checkEnvelope checks that text is agentmcp's success envelope of the echo
// tool: {"success":true,"toolName":"echo","result":{"text":"hello world"}}
// (agentmcp answers every runtime tool with its execution envelope as the
// text block; docs/SPEC.md §2). The benchmarks check it in full once, then compare
// every later answer with it byte for byte.
func checkEnvelope(text string) error {
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
	if env.Success == nil || !*env.Success || env.ToolName != "echo" || env.Result.Text == nil || *env.Result.Text != echoText {
		return fmt.Errorf("not the echo success envelope: %.200s", text)
	}
	return nil
}

// sseData returns the data of the first server-sent event in body whose
// data is a JSON-RPC message with an id: the answer. Events without an id
// (notifications) and comments are skipped.
func sseData(body []byte) ([]byte, bool) {
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
