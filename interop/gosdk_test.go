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
// per carrier (stdio: CommandTransport on "serve stdio"; http:
// StreamableClientTransport on "serve http", the bearer token from
// --token-file added by its http.Client) and protocol era.
//
// go-sdk v1.8.0's Client.Connect opts into 2026-07-28 when
// ClientSessionOptions.ProtocolVersion is "2026-07-28" (also its default):
// it sends server/discover and, when that succeeds with a mutually supported
// modern version, skips initialize and stamps every later request's _meta.
// When server/discover fails it silently falls back to initialize at
// 2025-11-25, so the test asserts the negotiated version
// (ClientSession.InitializeResult().ProtocolVersion) and, from the recorded
// wire traffic, that no initialize was sent and that the server answered
// every request as a modern one. Over HTTP it also asserts, in both eras,
// that the host stayed stateless: no response carried Mcp-Session-Id and the
// session has no id.
func TestGoSDKClient(t *testing.T) {
	for _, carrier := range []string{"stdio", "http"} {
		t.Run(carrier, func(t *testing.T) {
			t.Parallel()
			for _, version := range []string{"2025-11-25", modernVersion} {
				t.Run(version, func(t *testing.T) {
					t.Parallel()
					testGoSDKClient(t, carrier, version)
				})
			}
		})
	}
}

func testGoSDKClient(t *testing.T, carrier, version string) {
	modern := version >= modernVersion
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()

	ws := newWorkspace(t)
	stderr := serverStderr(t)
	c := newGoSDKCarrier(ctx, t, carrier, ws, stderr)
	client := mcp.NewClient(&mcp.Implementation{Name: "agentmcp-interop-go-sdk", Version: "v1.8.0"}, nil)
	cs := c.connect(ctx, t, client, version)

	ir := cs.InitializeResult()
	// The workspace's files are resources (docs/SPEC.md §2); without the
	// agent there are no prompts and no completions.
	// Subscriptions are declared where updates are delivered: on a stream in
	// the legacy era, on every carrier in 2026-07-28 (subscriptions/listen).
	wantSubscribe := carrier == "stdio" || modern
	if ir.Capabilities == nil || ir.Capabilities.Tools == nil || ir.Capabilities.Resources == nil {
		t.Errorf("server capabilities = %+v, want tools and resources", ir.Capabilities)
	} else if ir.Capabilities.Prompts != nil || ir.Capabilities.Completions != nil {
		t.Errorf("server capabilities = %+v, want tools and resources only", ir.Capabilities)
	} else if ir.Capabilities.Resources.Subscribe != wantSubscribe || ir.Capabilities.Resources.ListChanged {
		t.Errorf("server resources capability = %+v, want subscribe %v and no listChanged", ir.Capabilities.Resources, wantSubscribe)
	}
	if ir.ServerInfo == nil || ir.ServerInfo.Name == "" {
		t.Errorf("server info = %+v, want a name", ir.ServerInfo)
	}

	runClientScenario(ctx, t, cs, ws)

	// How the session really went over the wire.
	if modern {
		checkModernTraffic(t, c.rec)
	} else {
		checkLegacyTraffic(t, c.rec, version)
	}
	c.close(t)
}

// goSDKCarrier is a go-sdk client transport to a fresh agentmcp server on
// one carrier, recording the JSON-RPC traffic (and, on http, every HTTP
// exchange).
type goSDKCarrier struct {
	name      string
	version   string            // the protocol version asked for, once connected
	rec       *wireRecorder     // the client's JSON-RPC traffic
	host      *httpHost         // http: the "serve http" process
	exchanges *exchangeRecorder // http: every HTTP exchange of the client
	transport mcp.Transport     // what the client connects with

	cs     *mcp.ClientSession
	closed bool
}

// newGoSDKCarrier starts "agentmcp serve <carrier> --root <ws>" with extra
// flags (over http, with --token-file), its stderr going to stderr, and
// prepares the client transport to it: CommandTransport for stdio; for
// http, StreamableClientTransport on the printed URL with an http.Client
// that adds the bearer token.
func newGoSDKCarrier(ctx context.Context, t *testing.T, carrier string, ws workspace, stderr *lockedBuffer, flags ...string) *goSDKCarrier {
	t.Helper()
	c := &goSDKCarrier{name: carrier, rec: &wireRecorder{}}
	switch carrier {
	case "stdio":
		cmd := serverCommand(ctx, ws, flags...)
		cmd.Stderr = stderr
		c.transport = &recordingTransport{inner: &mcp.CommandTransport{Command: cmd}, wire: c.rec}
	case "http":
		// The client's own transport, unwrapped: the JSON-RPC traffic is
		// recorded under its http.Client (wireRecorder says why).
		c.host = startHTTPHost(ctx, t, ws, stderr, flags...)
		hc := c.host.httpClient(t)
		c.exchanges = &exchangeRecorder{base: hc.Transport, wire: c.rec}
		hc.Transport = c.exchanges
		c.transport = &mcp.StreamableClientTransport{Endpoint: c.host.url, HTTPClient: hc}
	default:
		t.Fatalf("unknown carrier %q", carrier)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("wire:\n%s", c.rec.dump())
		}
	})
	return c
}

// connect connects client at version and checks that the negotiated
// protocol version is version: go-sdk falls back to initialize at
// 2025-11-25, without an error, when server/discover fails. The session is
// closed when the test ends unless close did it.
func (c *goSDKCarrier) connect(ctx context.Context, t *testing.T, client *mcp.Client, version string) *mcp.ClientSession {
	t.Helper()
	c.version = version
	cs, err := client.Connect(ctx, c.transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect at %s over %s: %v", version, c.name, err)
	}
	c.cs = cs
	t.Cleanup(func() {
		if !c.closed {
			_ = cs.Close()
		}
	})
	ir := cs.InitializeResult()
	if ir == nil {
		t.Fatal("InitializeResult() = nil after Connect")
	}
	if ir.ProtocolVersion != version {
		t.Fatalf("negotiated protocol version = %q, want %q (client sent %v)", ir.ProtocolVersion, version, c.rec.methods())
	}
	return cs
}

// close closes the session and checks how the carrier ended. On stdio,
// closing stdin must make the server exit 0 (CommandTransport waits for it
// and reports a non-zero status or a needed SIGTERM as an error). On http,
// the session must have no id, no HTTP response may have carried
// Mcp-Session-Id (docs/SPEC.md §4: stateless), and serve http must exit 0 on
// SIGTERM.
func (c *goSDKCarrier) close(t *testing.T) {
	t.Helper()
	if c.host != nil {
		if id := c.cs.ID(); id != "" {
			t.Errorf("the go-sdk session over HTTP has the id %q, want none (stateless host)", id)
		}
	}
	c.closed = true
	if err := c.cs.Close(); err != nil {
		t.Errorf("closing the session over %s: %v", c.name, err)
	}
	if c.host != nil {
		checkStatelessExchanges(t, c.exchanges, c.version)
		if err := c.host.stop(); err != nil {
			t.Errorf("stopping serve http: %v", err)
		}
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
func checkLegacyTraffic(t *testing.T, rec *wireRecorder, version string) {
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
func checkModernTraffic(t *testing.T, rec *wireRecorder) {
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

func checkModernResult(t *testing.T, rec *wireRecorder, req *jsonrpc.Request) {
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
		if eq, err := jsonEqual(result.Capabilities, []byte(`{"tools":{},"resources":{"subscribe":true},"extensions":{"io.modelcontextprotocol/tasks":{}}}`)); err != nil || !eq {
			t.Errorf("server/discover capabilities = %s, want tools, resources with subscribe and the tasks extension (docs/SPEC.md §2, §14)", result.Capabilities)
		}
	}
}
