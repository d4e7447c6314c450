package engine

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// Headers are the Streamable HTTP request headers that the modern revision
// compares with the body (docs/SPEC.md §4; MCP 2026-07-28 "Standard headers"). Values
// are as received; the engine trims them and decodes =?base64?…?= itself.
// Streams pass nil.
type Headers struct {
	ProtocolVersion, Method, Name          string
	HasProtocolVersion, HasMethod, HasName bool
}

// inbound is one request after decoding and era resolution.
type inbound struct {
	id      ID
	method  string
	params  map[string]json.RawMessage // nil when params is absent
	meta    map[string]json.RawMessage // params._meta members; nil when absent
	array   bool                       // params was an array (MCP wants objects)
	modern  bool
	version string // legacy: the revision in force; modern: the requested one
}

// parseParams splits a request's params into members, refusing duplicates
// among them and among _meta's members (docs/SPEC.md §4: members compared with
// headers are matched exactly; a duplicate is -32600).
func parseParams(m *message) (*inbound, *Error) {
	in := &inbound{id: m.id, method: m.method}
	if m.params == nil {
		return in, nil
	}
	if m.params[0] == '[' {
		in.array = true
		return in, nil
	}
	in.params = make(map[string]json.RawMessage, 4)
	err := objectMembers(m.params, func(name string, v json.RawMessage) error {
		in.params[name] = v
		return nil
	})
	if err != nil {
		return in, newError(CodeInvalidRequest, "Invalid Request: duplicate member in params")
	}
	if raw, ok := in.params["_meta"]; ok && len(raw) > 0 && raw[0] == '{' {
		in.meta = make(map[string]json.RawMessage, 4)
		if objectMembers(raw, func(name string, v json.RawMessage) error {
			in.meta[name] = v
			return nil
		}) != nil {
			return in, newError(CodeInvalidRequest, "Invalid Request: duplicate member in params._meta")
		}
	}
	return in, nil
}

// isModern resolves the era of one request (docs/SPEC.md §4): modern when _meta
// holds the protocolVersion key (any value), or an HTTP MCP-Protocol-Version
// header names anything that is not a legacy revision.
func isModern(in *inbound, h *Headers) bool {
	if _, ok := in.meta[metaProtocolVersion]; ok {
		return true
	}
	if h != nil && h.HasProtocolVersion && !IsLegacyVersion(headerValue(h.ProtocolVersion)) {
		return true
	}
	return false
}

// validateModern runs the modern checks in docs/SPEC.md §4's order and returns the
// HTTP status that goes with a failure (400, or 404 for -32601).
func validateModern(in *inbound, h *Headers) (*Error, int) {
	vraw, hasV := in.meta[metaProtocolVersion]
	_, hasCaps := in.meta[metaClientCapabilities]
	if in.meta == nil || !hasV || !hasCaps {
		return newError(CodeInvalidParams, "Invalid params: params._meta must carry "+metaProtocolVersion+" and "+metaClientCapabilities), 400
	}
	var version string
	if json.Unmarshal(vraw, &version) != nil || vraw[0] != '"' {
		return newError(CodeInvalidParams, "Invalid params: "+metaProtocolVersion+" must be a string"), 400
	}
	if caps := in.meta[metaClientCapabilities]; caps[0] != '{' {
		return newError(CodeInvalidParams, "Invalid params: "+metaClientCapabilities+" must be an object"), 400
	}
	in.version = version
	if h != nil {
		if e := checkHeaders(in, version, h); e != nil {
			return e, 400
		}
	}
	if version != ModernVersion {
		data, _ := json.Marshal(struct {
			Supported []string `json:"supported"`
			Requested string   `json:"requested"`
		}{SupportedVersions, version})
		return &Error{Code: CodeUnsupportedProtocolVe, Message: "Unsupported protocol version", Data: data}, 400
	}
	switch in.method {
	case "server/discover", "tools/list", "tools/call":
		return nil, 0
	}
	return methodNotFound(in.method), 404
}

// checkHeaders compares MCP-Protocol-Version, Mcp-Method and (tools/call)
// Mcp-Name with the body (-32020 HeaderMismatch).
func checkHeaders(in *inbound, version string, h *Headers) *Error {
	mismatch := func(what string) *Error {
		return newError(CodeHeaderMismatch, "Header mismatch: "+what)
	}
	if !h.HasProtocolVersion || headerValue(h.ProtocolVersion) != version {
		return mismatch("MCP-Protocol-Version must equal params._meta protocolVersion")
	}
	if !h.HasMethod || headerValue(h.Method) != in.method {
		return mismatch("Mcp-Method must equal the method")
	}
	if in.method == "tools/call" {
		var name string
		if raw, ok := in.params["name"]; ok {
			_ = json.Unmarshal(raw, &name)
		}
		if !h.HasName || headerValue(h.Name) != name {
			return mismatch("Mcp-Name must equal params.name")
		}
	}
	return nil
}

// capabilities is exactly {"tools":{}} (docs/SPEC.md §2).
type capabilities struct {
	Tools struct{} `json:"tools"`
}

type resultMeta struct {
	ServerInfo serverInfo `json:"io.modelcontextprotocol/serverInfo"`
}

type initializeResult struct {
	ProtocolVersion string       `json:"protocolVersion"`
	Capabilities    capabilities `json:"capabilities"`
	ServerInfo      serverInfo   `json:"serverInfo"`
	Instructions    string       `json:"instructions,omitempty"`
}

type discoverResult struct {
	ResultType        string       `json:"resultType"`
	SupportedVersions []string     `json:"supportedVersions"`
	Capabilities      capabilities `json:"capabilities"`
	Instructions      string       `json:"instructions,omitempty"`
	TTLMs             int64        `json:"ttlMs"`
	CacheScope        string       `json:"cacheScope"`
	Meta              *resultMeta  `json:"_meta"`
}

type listToolsResult struct {
	ResultType string        `json:"resultType,omitempty"`
	Tools      []domain.Tool `json:"tools"`
	TTLMs      *int64        `json:"ttlMs,omitempty"`
	CacheScope string        `json:"cacheScope,omitempty"`
	Meta       *resultMeta   `json:"_meta,omitempty"`
}

type callToolResult struct {
	ResultType string `json:"resultType,omitempty"`
	domain.ToolResult
	Meta *resultMeta `json:"_meta,omitempty"`
}

type emptyResult struct{}

// negotiate answers initialize's protocolVersion: the client's when it is a
// legacy revision we serve, else the latest legacy one (docs/SPEC.md §4).
func negotiate(params map[string]json.RawMessage) (string, *Error) {
	var v string
	raw, ok := params["protocolVersion"]
	if !ok || json.Unmarshal(raw, &v) != nil || raw[0] != '"' {
		return "", newError(CodeInvalidParams, "Invalid params: initialize needs a string protocolVersion")
	}
	if IsLegacyVersion(v) {
		return v, nil
	}
	return LatestLegacyVersion, nil
}

func (e *Engine) initializeResult(version string) initializeResult {
	return initializeResult{ProtocolVersion: version, ServerInfo: e.info, Instructions: e.instr}
}

// call is what a carrier offers one request while it runs.
type call struct {
	ctx context.Context
	// caller is the Caller the session gets; req is this request's own
	// (progress to this client; finished when the answer is written).
	caller ports.Caller
	req    *callCaller
	// principal binds input-required rounds (docs/SPEC.md §6): the remote principal,
	// the loopback host, or the stdio stream.
	principal string
	// onParked is told when this request answered input_required for pc
	// (stdio maps the request id to the chain for notifications/cancelled).
	onParked func(pc *parkedCall)
}

// dispatch serves one request whose era is resolved and whose modern checks
// passed. initialize and ping are the carriers' (they touch stream state).
func (e *Engine) dispatch(c *call, in *inbound) (any, *Error) {
	if in.array {
		return nil, newError(CodeInvalidParams, "Invalid params: params must be an object")
	}
	switch in.method {
	case "server/discover":
		return discoverResult{
			ResultType: "complete", SupportedVersions: SupportedVersions, Instructions: e.instr,
			TTLMs: e.ttlMs, CacheScope: "private", Meta: &resultMeta{e.info},
		}, nil
	case "tools/list":
		return e.listTools(c.ctx, in)
	case "tools/call":
		return e.callTool(c, in)
	}
	return nil, methodNotFound(in.method)
}

func (e *Engine) listTools(ctx context.Context, in *inbound) (any, *Error) {
	if _, ok := in.params["cursor"]; ok {
		return nil, newError(CodeInvalidParams, "Invalid params: tools/list has one page; cursor is not supported")
	}
	cat, err := e.catalog(ctx)
	if err != nil {
		return nil, newError(CodeInternalError, domain.ClientMessage(err))
	}
	r := listToolsResult{Tools: cat.Tools()}
	if in.modern {
		ttl := e.ttlMs
		r.ResultType, r.TTLMs, r.CacheScope, r.Meta = "complete", &ttl, "private", &resultMeta{e.info}
	}
	return r, nil
}

// callTool is docs/SPEC.md §3 in order.
func (e *Engine) callTool(c *call, in *inbound) (any, *Error) {
	var name string
	raw, ok := in.params["name"]
	if !ok || raw[0] != '"' || json.Unmarshal(raw, &name) != nil {
		return nil, newError(CodeInvalidParams, "Invalid params: tools/call needs a string name")
	}
	args := json.RawMessage(`{}`)
	if a, ok := in.params["arguments"]; ok {
		if a[0] != '{' {
			return nil, newError(CodeInvalidParams, "Invalid params: arguments must be an object")
		}
		args = a
	}
	if in.modern {
		if e.roundsOn(in) {
			return e.callWithRounds(c, in, name, args)
		}
		if e := checkRoundParams(in); e != nil {
			return nil, e
		}
	}
	result, rerr := e.runTool(c, name, args)
	if rerr != nil {
		return nil, rerr
	}
	r := callToolResult{ToolResult: result}
	if in.modern {
		r.ResultType, r.Meta = "complete", &resultMeta{e.info}
	}
	return r, nil
}

// checkRoundParams refuses input-required round members where no round can
// exist (asking is off, or this client cannot answer forms): inputResponses
// must be an object and requestState a string, and any requestState is
// unknown (-32602).
func checkRoundParams(in *inbound) *Error {
	if r, ok := in.params["inputResponses"]; ok && r[0] != '{' {
		return newError(CodeInvalidParams, "Invalid params: inputResponses must be an object")
	}
	if s, ok := in.params["requestState"]; ok {
		if s[0] != '"' {
			return newError(CodeInvalidParams, "Invalid params: requestState must be a string")
		}
		return newError(CodeInvalidParams, "Invalid params: unknown or expired requestState")
	}
	return nil
}

var errShutdownResult = domain.ToolError(ErrShuttingDown.Error())

// runTool resolves the tool and runs it: a tool result, or a JSON-RPC error
// for a submission that failed inside its turn (docs/SPEC.md §3.2).
func (e *Engine) runTool(c *call, name string, args json.RawMessage) (domain.ToolResult, *Error) {
	if e.isStopping() || errors.Is(context.Cause(c.ctx), ErrShuttingDown) {
		return errShutdownResult, nil
	}
	cat, err := e.catalog(c.ctx)
	if err != nil {
		return domain.ToolError(domain.ClientMessage(err)), nil
	}
	if cat.IsSubmit(name) {
		prompt, ok := domain.SubmitPrompt(args)
		if !ok {
			return domain.ToolError(e.submit.InvalidArgumentsMessage()), nil
		}
		turn, err := e.session.Submit(c.ctx, prompt, c.caller)
		switch {
		case errors.Is(context.Cause(c.ctx), ErrShuttingDown):
			return errShutdownResult, nil
		case err == nil:
			return domain.TextResult(turn.Response), nil
		case errors.Is(err, ports.ErrRefused):
			return domain.ToolError(domain.ClientMessage(err)), nil
		default:
			return domain.ToolResult{}, newError(CodeInternalError, domain.ClientMessage(err))
		}
	}
	if !cat.Has(name) {
		return domain.ToolError(domain.UnknownToolMessage(name)), nil
	}
	env, err := e.session.InvokeTool(c.ctx, name, args, c.caller)
	if errors.Is(context.Cause(c.ctx), ErrShuttingDown) {
		return errShutdownResult, nil
	}
	if err != nil {
		return domain.ToolError(domain.ClientMessage(err)), nil
	}
	result, err := domain.RenderEnvelope(env)
	if err != nil {
		return domain.ToolError("tool result could not be encoded"), nil
	}
	return result, nil
}
