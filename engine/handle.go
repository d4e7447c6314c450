package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/jsonrpc"
	"github.com/agentmcp/agentmcp/ports"
)

// Outcome is the kind of answer the engine gives one message or body; a
// framing maps it to its own terms (Streamable HTTP: a status).
type Outcome uint8

const (
	// Answered: a JSON-RPC response (or batch answer) to send; JSON-RPC
	// errors answering a well-formed request included (HTTP 200).
	Answered Outcome = iota
	// Accepted: nothing to answer — a notification, a response, a batch of
	// them (HTTP 202).
	Accepted
	// Invalid: the body is not JSON, not a valid request or batch, or failed
	// modern validation; the body is its JSON-RPC error (HTTP 400).
	Invalid
	// UnknownMethod: a modern request for a method that revision does not
	// have; the body is its -32601 (HTTP 404).
	UnknownMethod
	// Cancelled: the client cancelled the request or went away; nothing is
	// written (docs/SPEC.md §3 "Cancellation").
	Cancelled
)

// reply is the engine's answer to one message.
type reply struct {
	body []byte
	// code is the JSON-RPC error code when body is an error response; 0
	// otherwise. toolError marks a CallToolResult with isError true. Both
	// are for the Observer (error.type, docs/SPEC.md §13). The fields are
	// ordered so that a reply stays 32 bytes, as without them: every step
	// of the pipeline returns one by value.
	code      int32
	kind      Outcome
	toolError bool
}

var accepted = reply{kind: Accepted}

// answer is what a stream writes for r: its body, nothing for Accepted and
// Cancelled.
func (r reply) answer() []byte {
	if r.kind == Accepted || r.kind == Cancelled {
		return nil
	}
	return r.body
}

func answered(b []byte) reply { return reply{kind: Answered, body: b} }
func invalid(i jsonrpc.ID, e *Error) reply {
	return reply{kind: Invalid, body: jsonrpc.EncodeError(i, e), code: int32(e.Code)}
}
func answerErr(i jsonrpc.ID, e *Error) reply {
	return reply{kind: Answered, body: jsonrpc.EncodeError(i, e), code: int32(e.Code)}
}

// peer is whoever sent one message: what the pipeline needs of every
// sender, and its origin for what differs.
type peer struct {
	origin    origin
	principal ports.Principal
	// notify sends a notification related to one request (progress); nil
	// drops them.
	notify func([]byte)
	// batchSlots, when set, bounds how many elements of a batch run at once.
	batchSlots chan struct{}
}

// origin is what differs between the framings for the pipeline (in the
// spirit of x/tools jsonrpc2_v2's split: the connection's JSON-RPC side is
// internal/jsonrpc's Conn; the pipeline is only MCP): a stream (ServeConn)
// negotiates once, outlives each request and can ask a legacy client
// through elicitation/create; an exchange (Exchange) keeps nothing and
// carries its HTTP headers. The pipeline asks these questions and never
// which framing it serves.
type origin interface {
	// legacyVersion is the revision in force for a legacy request: the
	// negotiated one on a stream, MCP-Protocol-Version over HTTP.
	legacyVersion() string
	// headers are the request's MCP headers; nil on a stream.
	headers() *Headers
	// owner is who the calls it starts are bound to, with the principal
	// that sent them.
	owner() owner
	// initialized reports whether initialize was answered already;
	// initialize records one (false: it was answered already). An
	// exchange answers every initialize without keeping state.
	initialized() bool
	initialize(version string, caps []byte) bool
	// lasting reports whether it outlives each request, so notifications
	// can follow an answer (a 2025-11-25 task's) and its tasks are bound
	// to it (tasks/list).
	lasting() bool
	// subs is a stream's resource subscriptions; nil for an exchange,
	// which has no stream to send an update on (docs/SPEC.md §2).
	subs() *streamSubs
	// elicitor asks its legacy client through elicitation/create; nil when
	// it cannot be asked (docs/SPEC.md §6).
	elicitor() elicitFunc
	// rendersApps reports whether its legacy client declared the UI
	// extension (a stream's initialize capabilities; an exchange knows
	// none): docs/SPEC.md §2 "The turn view".
	rendersApps() bool
}

// elicitFunc sends a form to a legacy stream client and returns its
// ElicitResult, or nil when it could not be answered; task names the
// 2025-11-25 task it belongs to ("" for none).
type elicitFunc func(ctx context.Context, f domain.Form, task string) json.RawMessage

// inbound is one request after decoding and era resolution.
type inbound struct {
	id      jsonrpc.ID
	method  string
	params  []jsonrpc.Member // nil when params is absent
	meta    []jsonrpc.Member // params._meta's members; nil when absent
	array   bool             // params was an array (MCP wants objects)
	modern  bool
	version string // legacy: the revision in force; modern: the requested one
	// named is the call this request's answer names (a round's
	// requestState, a task's id): if that answer is dropped, nobody holds
	// the name, and abandon ends the call.
	named *call

	// Room for the members of params and _meta, so reading them allocates
	// nothing more in the common case (a tools/call has three of each;
	// more spill to the heap), and for a plain call and its progress: one
	// allocation per request.
	pbuf   [4]jsonrpc.Member
	mbuf   [4]jsonrpc.Member
	call   call
	report reporter
}

func (in *inbound) param(name string) ([]byte, bool) { return jsonrpc.Lookup(in.params, name) }

// clientCaps is a modern request's _meta client capabilities (nil when
// absent; validateModern checked it is an object).
func (in *inbound) clientCaps() []byte {
	caps, _ := in.metaValue(metaClientCapabilities)
	return caps
}
func (in *inbound) metaValue(name string) ([]byte, bool) {
	return jsonrpc.Lookup(in.meta, name)
}

// decode reads one frame that should be a JSON object: the message, or
// the answer to give at once (an error; nothing for a notification).
func decode(frame []byte) (jsonrpc.Message, reply, bool) {
	m, derr := jsonrpc.DecodeMessage(frame)
	switch {
	case derr == jsonrpc.ErrParse:
		return m, invalid(jsonrpc.ID{}, derr), false
	case derr != nil && m.IsNotification():
		return m, accepted, false // a notification never gets a reply, not even an error
	case derr != nil:
		return m, invalid(m.ID, derr), false
	}
	return m, reply{}, true
}

// accept runs the MCP steps of a request (m has a method and an id): it
// parses the params into in, resolves the era, validates and gates the
// method (docs/SPEC.md §4). It returns the method's row, or nil and the
// answer to give at once.
func (e *Engine) accept(p *peer, m *jsonrpc.Message, in *inbound, inBatch bool) (*method, reply) {
	if perr := parseParams(m, in); perr != nil {
		return nil, invalid(m.ID, perr)
	}
	h := p.origin.headers()
	in.modern = isModern(in, h)
	if !in.modern {
		in.version = p.origin.legacyVersion()
		md := e.lookup(in)
		if md == nil {
			return nil, answerErr(in.id, jsonrpc.MethodNotFound(in.method))
		}
		return md, reply{}
	}
	if inBatch {
		return nil, invalid(in.id, jsonrpc.InvalidRequest("batches are not part of "+ModernVersion))
	}
	md, verr := e.validateModern(in, h)
	if verr != nil {
		r := invalid(in.id, verr)
		if verr.Code == CodeMethodNotFound {
			r.kind = UnknownMethod
		}
		return nil, r
	}
	return md, reply{}
}

// batchRefused is why a batch of n elements in revision version is
// refused whole (-32600, HTTP 400), in the order the checks are made; nil
// when it runs. max is the largest batch, 16 when 0 or less. One rule for
// Exchange and BatchSize.
func batchRefused(version string, n, max int) *Error {
	if max <= 0 {
		max = defaultMaxBatch
	}
	switch {
	case !batchesAllowed(version):
		return jsonrpc.InvalidRequest("batches are only part of protocol revision " + defaultLegacyVersion)
	case n == 0:
		return jsonrpc.InvalidRequest("empty batch")
	case n > max:
		return jsonrpc.InvalidRequest("batch too large")
	}
	return nil
}

// defaultMaxBatch is [ExchangeOptions].MaxBatch's default.
const defaultMaxBatch = 16

// parseParams fills in (a zero inbound) with m's id and method, and splits
// its params into members, refusing duplicates among them and among
// _meta's members (docs/SPEC.md §4: members compared with headers are
// matched exactly; a duplicate is -32600).
func parseParams(m *jsonrpc.Message, in *inbound) *Error {
	in.id, in.method = m.ID, m.Method
	if m.Params == nil {
		return nil
	}
	if m.Params[0] == '[' {
		in.array = true
		return nil
	}
	// _meta, when an object, is read in the same walk: the first one, and
	// a second _meta is a duplicate in params anyway.
	in.meta = in.mbuf[:0]
	var dup, metaDup bool
	in.params, _, dup, metaDup = jsonrpc.MembersAt(m.Params, 0, in.pbuf[:0], "_meta", &in.meta)
	if len(in.meta) == 0 {
		in.meta = nil // absent, or not an object
	}
	switch {
	case dup:
		return jsonrpc.InvalidRequest("duplicate member in params")
	case metaDup:
		return jsonrpc.InvalidRequest("duplicate member in params._meta")
	}
	return nil
}

// isModern resolves the era of one request (docs/SPEC.md §4): modern when
// _meta holds the protocolVersion key (any value), or an HTTP
// MCP-Protocol-Version header names anything that is not a legacy revision.
func isModern(in *inbound, h *Headers) bool {
	if _, ok := in.metaValue(metaProtocolVersion); ok {
		return true
	}
	return h != nil && h.HasProtocolVersion && !isLegacyVersion(h.ProtocolVersion)
}

// validateModern runs the modern checks in docs/SPEC.md §4's order and
// returns the method's row.
func (e *Engine) validateModern(in *inbound, h *Headers) (*method, *Error) {
	vraw, hasV := in.metaValue(metaProtocolVersion)
	caps, hasCaps := in.metaValue(metaClientCapabilities)
	if in.meta == nil || !hasV || !hasCaps {
		return nil, jsonrpc.InvalidParams("params._meta must carry " + metaProtocolVersion + " and " + metaClientCapabilities)
	}
	if !jsonrpc.IsString(vraw) {
		return nil, jsonrpc.InvalidParams(metaProtocolVersion + " must be a string")
	}
	if !jsonrpc.IsObject(caps) {
		return nil, jsonrpc.InvalidParams(metaClientCapabilities + " must be an object")
	}
	in.version = jsonrpc.Unquote(vraw)
	md := e.lookup(in)
	if h != nil {
		if e := checkHeaders(in, h, md); e != nil {
			return nil, e
		}
	}
	if in.version != ModernVersion {
		data, _ := json.Marshal(struct {
			Supported []string `json:"supported"`
			Requested string   `json:"requested"`
		}{supportedVersions[:], in.version})
		return nil, &Error{Code: CodeUnsupportedProtocolVersion, Message: "Unsupported protocol version", Data: data}
	}
	if md == nil {
		return nil, jsonrpc.MethodNotFound(in.method)
	}
	return md, nil
}

// checkHeaders compares MCP-Protocol-Version, Mcp-Method and the Mcp-Name
// of a method that has one (md's mirror) with the body: a header that is
// missing or does not match is -32020 HeaderMismatch, saying which.
func checkHeaders(in *inbound, h *Headers, md *method) *Error {
	switch {
	case !h.HasProtocolVersion:
		return headerError("MCP-Protocol-Version is missing; it must equal params._meta protocolVersion")
	case h.ProtocolVersion != in.version:
		return headerError("MCP-Protocol-Version must equal params._meta protocolVersion")
	case !h.HasMethod:
		return headerError("Mcp-Method is missing; it must equal the method")
	case h.Method != in.method:
		return headerError("Mcp-Method must equal the method")
	case md == nil || md.mirror == "":
		return nil
	}
	raw, ok := in.param(md.mirror)
	if !ok || !jsonrpc.IsString(raw) {
		raw = []byte(`""`)
	}
	switch {
	case !h.HasName:
		return headerError("Mcp-Name is missing; it must equal params." + md.mirror)
	case !jsonrpc.EqualString(raw, h.Name):
		return headerError("Mcp-Name must equal params." + md.mirror)
	}
	return nil
}

func headerError(what string) *Error {
	return jsonrpc.NewError(CodeHeaderMismatch, "Header mismatch: "+what)
}

// initialize answers a legacy initialize (inline). A stream negotiates
// once; an exchange answers it without keeping state (docs/SPEC.md §4).
func (e *Engine) initialize(p *peer, in *inbound, inBatch bool) reply {
	switch {
	case inBatch:
		return answerErr(in.id, jsonrpc.InvalidRequest("initialize must not be part of a batch"))
	case p.origin.initialized():
		return answerErr(in.id, jsonrpc.InvalidRequest("already initialized"))
	case in.params == nil:
		return answerErr(in.id, jsonrpc.InvalidParams("initialize needs params"))
	}
	raw, ok := in.param("protocolVersion")
	if !ok || !jsonrpc.IsString(raw) {
		return answerErr(in.id, jsonrpc.InvalidParams("initialize needs a string protocolVersion"))
	}
	version := jsonrpc.Unquote(raw)
	if !isLegacyVersion(version) {
		version = latestLegacyVersion
	}
	caps, _ := in.param("capabilities")
	if !p.origin.initialize(version, caps) {
		return answerErr(in.id, jsonrpc.InvalidRequest("already initialized"))
	}
	b := jsonrpc.AppendString([]byte(`{"protocolVersion":`), version)
	b = e.appendFeatureCaps(append(b, `,"capabilities":{"tools":{}`...), p.origin.subs() != nil)
	if version == tasksVersion {
		b = appendLegacyTasksCaps(b, p) // docs/SPEC.md §14
	}
	if e.viewMeta != nil {
		b = append(b, `,"extensions":{`+uiExtensionCap+`}`...) // docs/SPEC.md §2 "The turn view"
	}
	b = append(b, `},"serverInfo":`...)
	b = append(b, e.infoJSON...)
	if e.instructions != "" {
		b = jsonrpc.AppendString(append(b, `,"instructions":`...), e.instructions)
	}
	return answered(jsonrpc.EncodeResponse(in.id, append(b, '}'), nil))
}

func pong(_ *Engine, _ *peer, in *inbound, _ bool) reply {
	return answered(jsonrpc.EncodeResponse(in.id, []byte("{}"), nil))
}

// serveRequest runs a request that needs the session on ctx through its
// method's row and encodes its answer. serve (observe.go) is its one
// caller.
func (e *Engine) serveRequest(ctx context.Context, p *peer, in *inbound, md *method) reply {
	switch {
	case in.array:
		return answerErr(in.id, jsonrpc.InvalidParams("params must be an object"))
	case in.modern && md.needsTasks && !declaresTasks(in.clientCaps()):
		// SEP-2575 "Missing Required Capabilities": the task surface is
		// the extension's, served only to requests that declare it.
		return answerErr(in.id, errTasksNotDeclared(in.method))
	}
	return md.serve(e, ctx, p, in)
}

// discover answers server/discover (2026-07-28).
func (e *Engine) discover(_ context.Context, _ *peer, in *inbound) reply {
	b := e.resultHead(make([]byte, 0, 512), in, "complete")
	b = append(append(b, `"supportedVersions":`...), supportedVersionsJSON...)
	b = e.appendFeatureCaps(append(b, `,"capabilities":{"tools":{}`...), true)
	b = append(b, `,"extensions":{"`+extTasks+`":{}`...)
	if e.viewMeta != nil {
		b = append(b, ","+uiExtensionCap...) // docs/SPEC.md §2 "The turn view"
	}
	b = append(b, `}}`...)
	if e.instructions != "" {
		b = jsonrpc.AppendString(append(b, `,"instructions":`...), e.instructions)
	}
	return answered(e.resultTail(e.appendCacheable(b), in))
}

// resultHead starts a response to in with a result: the head, then the
// result object's opening — for a modern request with its resultType first
// (docs/SPEC.md §4: every modern result carries resultType). The result's
// members follow, then resultTail. The two are the one place results are
// stamped; a response is built in one buffer.
func (e *Engine) resultHead(b []byte, in *inbound, resultType string) []byte {
	b = append(jsonrpc.AppendResponseHead(b, in.id), `,"result":{`...)
	if in.modern {
		b = append(append(append(b, `"resultType":"`...), resultType...), `",`...)
	}
	return b
}

// resultTail ends what resultHead began: for a modern request the
// serverInfo _meta (docs/SPEC.md §4), then the closing braces.
func (e *Engine) resultTail(b []byte, in *inbound) []byte {
	if in.modern {
		b = append(append(b, `,"_meta":`...), e.metaJSON...)
	}
	return append(b, '}', '}')
}

// appendCacheable appends the ttlMs and cacheScope of list and discover
// results (modern only; docs/SPEC.md §4).
func (e *Engine) appendCacheable(b []byte) []byte {
	b = strconv.AppendInt(append(b, `,"ttlMs":`...), e.ttlMs, 10)
	return append(b, `,"cacheScope":"private"`...)
}

func (e *Engine) listTools(ctx context.Context, p *peer, in *inbound) reply {
	if _, ok := in.param("cursor"); ok {
		return answerErr(in.id, jsonrpc.InvalidParams("tools/list has one page; cursor is not supported"))
	}
	cat, err := e.catalog(ctx)
	if err != nil {
		return answerErr(in.id, jsonrpc.NewError(CodeInternalError, domain.ClientMessage(err)))
	}
	list := cat.Tools()
	if !structuredResults(in) {
		list[len(list)-1].OutputSchema = nil // the submission tool's, last
	}
	if e.linksView(p, in) {
		// The list differs per client: its hints say private already
		// (cacheScope, appendCacheable), so no cache shares it.
		list[len(list)-1].Meta = e.viewMeta
	}
	var tools []byte
	if !in.modern && in.version == tasksVersion {
		tools, err = domain.MarshalJSON(withExecution(list)) // docs/SPEC.md §14
	} else {
		tools, err = domain.MarshalJSON(list)
	}
	if err != nil {
		return answerErr(in.id, jsonrpc.NewError(CodeInternalError, "Internal error: the tool list could not be encoded"))
	}
	b := e.resultHead(make([]byte, 0, len(tools)+256), in, "complete")
	b = append(append(b, `"tools":`...), tools...)
	if in.modern {
		b = e.appendCacheable(b)
	}
	return answered(e.resultTail(b, in))
}

// structuredResults reports whether in's revision knows outputSchema and
// structuredContent (2025-06-18 and later, 2026-07-28 included): an older
// client gets neither (docs/SPEC.md §2).
func structuredResults(in *inbound) bool {
	return in.modern || in.version == tasksVersion || in.version == "2025-06-18"
}

// callTool is docs/SPEC.md §3 in order: the name and arguments checked,
// what the call becomes decided once (callMode), then it runs so.
func (e *Engine) callTool(ctx context.Context, p *peer, in *inbound) reply {
	raw, ok := in.param("name")
	if !ok || !jsonrpc.IsString(raw) {
		return answerErr(in.id, jsonrpc.InvalidParams("tools/call needs a string name"))
	}
	name := jsonrpc.Unquote(raw)
	args, ok := in.param("arguments")
	switch {
	case !ok:
		args = []byte(`{}`) // made here only: most calls carry arguments
	case !jsonrpc.IsObject(args):
		return answerErr(in.id, jsonrpc.InvalidParams("arguments must be an object"))
	}
	f := callFacts{name: name, modern: in.modern, tasksRevision: !in.modern && in.version == tasksVersion}
	var cat *domain.Catalog // read once for the decision and the call
	var ttl time.Duration
	if f.modern || f.tasksRevision {
		cat, _ = e.catalog(ctx) // an error is answered by runTool, which reads it again
		if cat != nil && (cat.IsSubmit(name) || cat.Has(name)) {
			f.known, f.support, f.startsInRequest = true, cat.TaskSupport(name), cat.TaskStartsInRequest(name)
		}
	}
	if f.modern {
		caps := in.clientCaps()
		if f.known && f.support != domain.TaskForbidden {
			f.declaresTasks = declaresTasks(caps)
		}
		f.rounds = e.askClient && declaresFormElicitation(caps)
		if !f.rounds {
			f.roundParams = checkRoundParams(in)
		}
	} else if f.tasksRevision && f.known {
		hint, ok := in.param("task")
		if f.augmented = ok && string(hint) != "null"; f.augmented {
			ttl, f.taskParam = e.requestedTTL(hint)
		}
	}
	m, err := callMode(f)
	switch m {
	case modeRefuse:
		return answerErr(in.id, err)
	case modeTask, modeLegacyTask:
		return e.startTask(ctx, p, in, m, name, args, ttl)
	case modeRounds:
		return e.callWithRounds(ctx, p, in, name, args, f.known && f.startsInRequest)
	case modeInRequest:
		return e.callInRequest(ctx, p, in, name, args)
	}
	return e.callPlain(ctx, p, in, cat, name, args)
}

// callPlain serves a call in its request, with in's own call as its
// Caller: prompts reach a legacy stream client that can answer forms, or
// settle closed; progress goes out while the call is in flight.
func (e *Engine) callPlain(ctx context.Context, p *peer, in *inbound, cat *domain.Catalog, name string, args []byte) reply {
	c := &in.call
	c.e, c.owner, c.ctx = e, p.origin.owner(), ctx
	if !in.modern {
		if c.elicit = p.origin.elicitor(); c.elicit != nil {
			c.asks = askStream
		}
	}
	in.report.setToken(in, p.notify)
	c.own = &in.report
	// Through update: a notifications/cancelled may already reach it.
	c.update(func(s *callState) { s.waiter = &in.report })
	defer in.report.finish() // nothing for this request follows its response
	return e.callResult(in, e.runToolIn(ctx, cat, c, name, args))
}

// callResult encodes a tools/call's outcome: its result, or the JSON-RPC
// error of a submission that failed inside its turn.
func (e *Engine) callResult(in *inbound, o toolOutcome) reply {
	if o.rerr != nil {
		return answerErr(in.id, o.rerr)
	}
	b := e.resultHead(make([]byte, 0, 160+len(in.id.Raw())+2*o.size()), in, "complete")
	r := answered(e.resultTail(o.appendTo(b, structuredResults(in)), in))
	r.toolError = o.failed()
	return r
}

// checkRoundParams refuses input-required round members where no round can
// exist (asking is off, or this client cannot answer forms): inputResponses
// must be an object and requestState a string, and any requestState is
// unknown (-32602).
func checkRoundParams(in *inbound) *Error {
	if _, err := inputResponses(in); err != nil {
		return err
	}
	if s, ok := in.param("requestState"); ok {
		if !jsonrpc.IsString(s) {
			return jsonrpc.InvalidParams("requestState must be a string")
		}
		return errUnknownState
	}
	return nil
}

var errUnknownState = jsonrpc.InvalidParams("unknown or expired requestState")

// inputResponses reads params.inputResponses (a round's retry, tasks/update):
// its members, none when it is absent, or -32602 when it is not an object
// or names a key twice. A key named twice answers nothing: readers disagree
// on which member counts (encoding/json and JavaScript take the last), so
// an answer a proxy read as "deny" could otherwise reach us as "allow_once"
// (docs/SPEC.md §6).
func inputResponses(in *inbound) ([]jsonrpc.Member, *Error) {
	r, ok := in.param("inputResponses")
	if !ok {
		return nil, nil
	}
	if !jsonrpc.IsObject(r) {
		return nil, jsonrpc.InvalidParams("inputResponses must be an object")
	}
	ms, dup := jsonrpc.Members(r, nil)
	if dup {
		return nil, jsonrpc.InvalidParams("inputResponses names a key twice")
	}
	return ms, nil
}

var errShutdownResult = toolOutcome{result: domain.ToolError(ErrShuttingDown.Error())}

// toolOutcome is what a tools/call produced: a session's envelope (written
// straight into the response), another result (a tool error, a turn's
// text and its structuredContent), or the JSON-RPC error of a submission
// that failed inside its turn.
type toolOutcome struct {
	env        *domain.Envelope
	result     domain.ToolResult
	structured []byte // a conversational turn's structuredContent object, rendered once
	rerr       *Error
	// rendered, when set, is a CallToolResult's members as another
	// replica rendered them (a shared store's record, a forwarded retry's
	// answer: shared.go), and renderedError its isError.
	rendered      []byte
	renderedError bool
}

// failed reports whether the outcome is a CallToolResult with isError true
// (a JSON-RPC error is not: its result is empty).
func (o toolOutcome) failed() bool {
	if o.rendered != nil {
		return o.renderedError
	}
	if o.env != nil {
		return !o.env.Success
	}
	return o.result.IsError != nil && *o.result.IsError
}

func toolError(msg string) toolOutcome { return toolOutcome{result: domain.ToolError(msg)} }

// size estimates the bytes of the outcome's text.
func (o toolOutcome) size() int {
	if o.rendered != nil {
		return len(o.rendered)
	}
	if o.env != nil {
		return 64 + len(o.env.Result) + len(o.env.Error) + len(o.env.Metadata)
	}
	n := len(o.structured)
	for _, c := range o.result.Content {
		n += len(c.Text)
	}
	return n
}

// scratch holds an envelope's JSON text while it is written into the
// response as a string.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// appendTo appends the CallToolResult's members (no braces): for an
// envelope, {"content":[{"type":"text","text":<envelope>}],"isError":
// <!success>} (docs/SPEC.md §3.4), the envelope rendered once; for a
// conversational turn its structuredContent too when structured (the
// client's revision knows it, structuredResults; a task's result always).
func (o toolOutcome) appendTo(b []byte, structured bool) []byte {
	if o.rendered != nil {
		return append(b, o.rendered...) // rendered for a task's or a round's client: 2025-11-25 or later
	}
	if o.env == nil {
		b = appendToolResult(b, o.result)
		if structured && o.structured != nil {
			b = append(append(b, `,"structuredContent":`...), o.structured...)
		}
		return b
	}
	buf := scratch.Get().(*[]byte)
	text, err := domain.AppendEnvelope((*buf)[:0], *o.env)
	if err != nil {
		*buf = text
		scratch.Put(buf)
		return appendToolResult(b, domain.ToolError("tool result could not be encoded"))
	}
	b = jsonrpc.AppendString(append(b, `"content":[{"type":"text","text":`...), text)
	b = strconv.AppendBool(append(b, `}],"isError":`...), !o.env.Success)
	if cap(text) <= 1<<20 { // a huge result's buffer is not kept
		*buf = text
		scratch.Put(buf)
	}
	return b
}

// shuttingDown reports whether a call on ctx ends because the server stops.
func (e *Engine) shuttingDown(ctx context.Context) bool {
	return e.isStopping() || errors.Is(context.Cause(ctx), ErrShuttingDown)
}

// runTool resolves the tool and runs it with caller: a tool result, or a
// JSON-RPC error for a submission that failed inside its turn (docs/SPEC.md
// §3.2). It is the one place session errors map to the wire.
func (e *Engine) runTool(ctx context.Context, caller ports.Caller, name string, args []byte) toolOutcome {
	return e.runToolIn(ctx, nil, caller, name, args)
}

// runToolIn is runTool with the catalog already read (nil: read it). A
// panic in the session's InvokeTool or Submit is recovered here, the one
// place every path (a plain call, rounds, a task) calls them: the call
// answers errSessionPanic and the server goes on serving.
func (e *Engine) runToolIn(ctx context.Context, cat *domain.Catalog, caller ports.Caller, name string, args []byte) (o toolOutcome) {
	defer e.recoverSession(&o)
	if e.shuttingDown(ctx) {
		return errShutdownResult
	}
	if cat == nil {
		var err error
		if cat, err = e.catalog(ctx); err != nil {
			return toolError(domain.ClientMessage(err))
		}
	}
	if cat.IsSubmit(name) {
		return e.submitTurn(ctx, caller, args)
	}
	if !cat.Has(name) {
		return toolError(domain.UnknownToolMessage(name))
	}
	env, err := e.session.InvokeTool(ctx, name, args, caller)
	if e.shuttingDown(ctx) {
		return errShutdownResult
	}
	if err != nil {
		return toolError(domain.ClientMessage(err))
	}
	return toolOutcome{env: &env}
}

// submitTurn runs the submission tool's turn (runToolIn's; apart, so the
// frame of a plain tool's call stays small: a request's goroutine stack
// grows by copying).
func (e *Engine) submitTurn(ctx context.Context, caller ports.Caller, args []byte) toolOutcome {
	a, err := e.submit.Arguments(args)
	if err != nil {
		return toolError(err.Error())
	}
	s := ports.Submission{Prompt: a.Prompt, Conversation: a.Conversation, ForkFrom: a.ForkFrom}
	turn, err := e.session.Submit(ctx, s, withinSubmission{caller, e.submit.Name})
	switch {
	case e.shuttingDown(ctx):
		return errShutdownResult
	case err == nil && e.submit.Conversations():
		return turnOutcome(turn)
	case err == nil:
		return toolOutcome{result: domain.TextResult(turn.Response)}
	case errors.Is(err, ports.ErrRefused):
		return toolError(domain.ClientMessage(err))
	default:
		return toolOutcome{rerr: jsonrpc.NewError(CodeInternalError, domain.ClientMessage(err))}
	}
}

// errNoReport answers a turn of a conversation-keeping session that
// returned no report (docs/SPEC.md §9): the advertised outputSchema
// promises structuredContent on every success, and a client that holds to
// it (the TypeScript SDK) rejects a result without it, so the engine says
// the session broke its contract instead of answering a text alone.
var errNoReport = jsonrpc.NewError(CodeInternalError, "Internal error: the session reported no turn result")

// turnOutcome is a conversational turn's success: the response as the text
// block (not the serialized JSON, which 2025-06-18 suggests: a client that
// shows text shows the answer, docs/SPEC.md §9) and the structuredContent
// {"response", ...the report}, rendered here once.
func turnOutcome(turn ports.TurnResult) toolOutcome {
	if turn.Report == nil {
		return toolOutcome{rerr: errNoReport}
	}
	sc, err := ports.AppendTurnResult(nil, turn.Response, *turn.Report)
	if err != nil {
		return toolOutcome{rerr: jsonrpc.NewError(CodeInternalError, "Internal error: the turn result could not be encoded")}
	}
	return toolOutcome{result: domain.TextResult(turn.Response), structured: sc}
}

// errSessionPanic answers a call whose session panicked (docs/SPEC.md §3):
// a fixed message, never the panic's value, which may hold anything.
var errSessionPanic = jsonrpc.NewError(CodeInternalError, "Internal error: the session failed while serving this call")

// recoverSession turns a panic of the session into the call's outcome
// errSessionPanic, logged at error level with its value and stack (the
// operator's to read; a client never sees them).
func (e *Engine) recoverSession(o *toolOutcome) {
	if v := recover(); v != nil {
		e.logPanic(v, "engine: the session panicked; the call answers -32603")
		*o = toolOutcome{rerr: errSessionPanic}
	}
}

// logPanic logs a recovered panic of the session at error level, with its
// value and the stack of the goroutine that recovered it (call it from
// the deferred function, so the stack still shows the session's frames).
func (e *Engine) logPanic(v any, msg string) {
	e.logger.Error(msg, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
}

// refusal answers a request that will not be served: tools/call gets the
// tool error msg, anything else -32603 with msg (docs/SPEC.md §4).
func (e *Engine) refusal(in *inbound, msg string) reply {
	if in.method != "tools/call" {
		return answerErr(in.id, jsonrpc.NewError(CodeInternalError, msg))
	}
	return e.callResult(in, toolError(msg))
}

// appendToolResult appends a CallToolResult's members (no braces):
// "content":[{"type":"text","text":…}] and "isError" when set.
func appendToolResult(b []byte, r domain.ToolResult) []byte {
	b = append(b, `"content":[`...)
	for i, c := range r.Content {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonrpc.AppendString(append(b, `{"type":`...), c.Type)
		b = jsonrpc.AppendString(append(b, `,"text":`...), c.Text)
		b = append(b, '}')
	}
	b = append(b, ']')
	if r.IsError != nil {
		b = strconv.AppendBool(append(b, `,"isError":`...), *r.IsError)
	}
	return b
}
