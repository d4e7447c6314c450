package interop

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// refusedSubmit matches the text of agent_submit's tool error while no model
// backend is configured.
var refusedSubmit = regexp.MustCompile(`(?i)refus|configur`)

// TestGoSDKClient drives the binary with the official Go SDK client, once
// per protocol era.
//
// go-sdk v1.8.0's Client.Connect opts into 2026-07-28 when
// ClientSessionOptions.ProtocolVersion is "2026-07-28" (also its default):
// it sends server/discover and, when that succeeds with a mutually supported
// modern version, skips initialize and stamps every later request's _meta.
// When server/discover fails it silently falls back to initialize at
// 2025-11-25, so the test asserts the negotiated version
// (ClientSession.InitializeResult().ProtocolVersion) and, from the recorded
// wire traffic, that no initialize was sent and that the server answered
// every request as a modern one.
func TestGoSDKClient(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			testGoSDKClient(t, version)
		})
	}
}

func testGoSDKClient(t *testing.T, version string) {
	modern := version >= "2026-07-28"
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()

	ws := newWorkspace(t)
	stderr := &lockedBuffer{}
	logStderrOnFailure(t, stderr)
	cmd := serverCommand(ctx, ws)
	cmd.Stderr = stderr
	rec := &recordingTransport{inner: &mcp.CommandTransport{Command: cmd}}

	client := mcp.NewClient(&mcp.Implementation{Name: "agentmcp-interop-go-sdk", Version: "v1.8.0"}, nil)
	cs, err := client.Connect(ctx, rec, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect at %s: %v", version, err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = cs.Close()
		}
	}()

	// The negotiated version.
	ir := cs.InitializeResult()
	if ir == nil {
		t.Fatal("InitializeResult() = nil after Connect")
	}
	if ir.ProtocolVersion != version {
		t.Fatalf("negotiated protocol version = %q, want %q (client sent %v)", ir.ProtocolVersion, version, rec.methods())
	}
	if ir.Capabilities == nil || ir.Capabilities.Tools == nil {
		t.Errorf("server capabilities = %+v, want tools", ir.Capabilities)
	} else if ir.Capabilities.Prompts != nil || ir.Capabilities.Resources != nil {
		t.Errorf("server capabilities = %+v, want tools only", ir.Capabilities)
	}
	if ir.ServerInfo == nil || ir.ServerInfo.Name == "" {
		t.Errorf("server info = %+v, want a name", ir.ServerInfo)
	}

	runClientScenario(ctx, t, cs, ws)

	// How the session really went over the wire.
	if modern {
		checkModernTraffic(t, rec)
	} else {
		checkLegacyTraffic(t, rec, version)
	}

	// Closing stdin must make the server exit 0 (the transport waits for it,
	// and reports a non-zero status or a needed SIGTERM as an error).
	closed = true
	if err := cs.Close(); err != nil {
		t.Errorf("closing the session (server exit): %v", err)
	}
}

// runClientScenario lists the tools and calls read_file, an unknown tool and
// agent_submit, checking each answer.
func runClientScenario(ctx context.Context, t *testing.T, cs *mcp.ClientSession, ws workspace) {
	t.Helper()

	// tools/list: names in order, submission tool last, exactly as the contract says.
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		schema, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatalf("tool %s: marshalling inputSchema: %v", tool.Name, err)
		}
		var root struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(schema, &root); err != nil || root.Type != "object" {
			t.Errorf("tool %s: inputSchema %s has no root type object", tool.Name, schema)
		}
		if tool.OutputSchema != nil {
			t.Errorf("tool %s advertises an outputSchema", tool.Name)
		}
		if tool.Name == "agent_submit" {
			if tool.Description != wantSubmitDescription {
				t.Errorf("agent_submit description = %q, want %q", tool.Description, wantSubmitDescription)
			}
			if eq, err := jsonEqual(schema, []byte(wantSubmitSchema)); err != nil || !eq {
				t.Errorf("agent_submit inputSchema = %s, want %s", schema, wantSubmitSchema)
			}
		}
	}
	if !slices.Equal(names, wantTools) {
		t.Fatalf("tools/list names = %q, want %q", names, wantTools)
	}
	if tools.NextCursor != "" {
		t.Errorf("tools/list nextCursor = %q, want none", tools.NextCursor)
	}

	// read_file on the real file: an envelope holding its content.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": ws.file}})
	if err != nil {
		t.Fatalf("tools/call read_file: %v", err)
	}
	text := singleText(t, "read_file", res)
	if res.IsError {
		t.Fatalf("read_file isError = true: %s", text)
	}
	if res.StructuredContent != nil {
		t.Errorf("read_file has structuredContent %v, want none", res.StructuredContent)
	}
	checkReadFileEnvelope(t, text, ws)

	// An unknown tool: a tool error, not a JSON-RPC error.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("tools/call no_such_tool: want a tool error, got the call error %v", err)
	}
	text = singleText(t, "no_such_tool", res)
	if !res.IsError || text != "Unknown tool: no_such_tool" {
		t.Errorf("no_such_tool = {isError:%v text:%q}, want {isError:true text:%q}", res.IsError, text, "Unknown tool: no_such_tool")
	}

	// agent_submit without a model backend: refused, as a tool error.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "agent_submit", Arguments: map[string]any{"prompt": "Say hello."}})
	if err != nil {
		t.Fatalf("tools/call agent_submit: want a tool error, got the call error %v", err)
	}
	text = singleText(t, "agent_submit", res)
	if !res.IsError || !refusedSubmit.MatchString(text) {
		t.Errorf("agent_submit = {isError:%v text:%q}, want a tool error saying it is refused / not configured", res.IsError, text)
	}
}

// singleText returns the text of res's one text content block.
func singleText(t *testing.T, call string, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content blocks, want 1: %+v", call, len(res.Content), res.Content)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content block is %T, want text", call, res.Content[0])
	}
	return tc.Text
}

// checkLegacyTraffic checks that the session began with initialize at
// version, followed by notifications/initialized, and never used the modern
// era's discovery.
func checkLegacyTraffic(t *testing.T, rec *recordingTransport, version string) {
	t.Helper()
	reqs := rec.requests()
	methods := rec.methods()
	if len(reqs) < 2 || reqs[0].Method != "initialize" || reqs[1].Method != "notifications/initialized" {
		t.Fatalf("client sent %q, want initialize then notifications/initialized first", methods)
	}
	var params struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(reqs[0].Params, &params); err != nil || params.ProtocolVersion != version {
		t.Errorf("initialize params = %s, want protocolVersion %q", reqs[0].Params, version)
	}
	if slices.Contains(methods, "server/discover") {
		t.Errorf("client sent %q: server/discover on a %s session", methods, version)
	}
	for _, req := range reqs {
		meta, err := paramsMeta(req)
		if err != nil {
			t.Errorf("%s params: %v", req.Method, err)
		}
		if _, ok := meta[metaProtocolVersion]; ok {
			t.Errorf("%s carries the modern _meta key %s on a %s session", req.Method, metaProtocolVersion, version)
		}
	}
}

// checkModernTraffic checks that the session was 2026-07-28 on the wire:
// server/discover first and no initialize; every request carried the
// per-request _meta; every answer was a modern result (resultType, and the
// server's info in _meta), and discovery listed the contract's versions.
func checkModernTraffic(t *testing.T, rec *recordingTransport) {
	t.Helper()
	reqs := rec.requests()
	methods := rec.methods()
	if len(reqs) == 0 || reqs[0].Method != "server/discover" {
		t.Fatalf("client sent %q, want server/discover first", methods)
	}
	if slices.Contains(methods, "initialize") || slices.Contains(methods, "notifications/initialized") {
		t.Fatalf("client sent %q: it fell back to the initialize handshake", methods)
	}
	for _, req := range reqs {
		if !req.ID.IsValid() {
			continue // notifications
		}
		meta, err := paramsMeta(req)
		if err != nil {
			t.Fatalf("%s params: %v", req.Method, err)
		}
		var v string
		if err := json.Unmarshal(meta[metaProtocolVersion], &v); err != nil || v != "2026-07-28" {
			t.Errorf("%s _meta[%s] = %s, want \"2026-07-28\"", req.Method, metaProtocolVersion, meta[metaProtocolVersion])
		}
		if _, ok := meta[metaClientCapabilities]; !ok {
			t.Errorf("%s _meta lacks %s", req.Method, metaClientCapabilities)
		}
		checkModernResult(t, rec, req)
	}
}

func checkModernResult(t *testing.T, rec *recordingTransport, req *jsonrpc.Request) {
	t.Helper()
	resp, ok := rec.responseTo(req)
	if !ok {
		t.Errorf("no response recorded for %s (id %v)", req.Method, req.ID.Raw())
		return
	}
	if resp.Error != nil {
		t.Errorf("%s answered with an error: %v", req.Method, resp.Error)
		return
	}
	var result struct {
		ResultType        string                     `json:"resultType"`
		Meta              map[string]json.RawMessage `json:"_meta"`
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      json.RawMessage            `json:"capabilities"`
	}
	if err := json.Unmarshal(resp.Result, &result); err != nil {
		t.Errorf("%s result: %v: %s", req.Method, err, resp.Result)
		return
	}
	if result.ResultType != "complete" {
		t.Errorf("%s result resultType = %q, want complete: %.300s", req.Method, result.ResultType, resp.Result)
	}
	if _, ok := result.Meta[metaServerInfo]; !ok {
		t.Errorf("%s result _meta lacks %s: %.300s", req.Method, metaServerInfo, resp.Result)
	}
	if req.Method == "server/discover" {
		if !slices.Equal(result.SupportedVersions, wantSupportedVersions) {
			t.Errorf("server/discover supportedVersions = %q, want %q", result.SupportedVersions, wantSupportedVersions)
		}
		if eq, err := jsonEqual(result.Capabilities, []byte(`{"tools":{}}`)); err != nil || !eq {
			t.Errorf("server/discover capabilities = %s, want {\"tools\":{}}", result.Capabilities)
		}
	}
}
