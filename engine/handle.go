package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"

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
	// ordered so that a reply stays 32 bytes, as without them: an exchange
	// holds one and must keep its allocation's size class.
	code      int32
	kind      Outcome
	toolError bool
}

var accepted = reply{kind: Accepted}

func answered(b []byte) reply { return reply{kind: Answered, body: b} }
func invalid(i jsonrpc.ID, e *Error) reply {
	return reply{kind: Invalid, body: jsonrpc.EncodeError(i, e), code: int32(e.Code)}
}
func answerErr(i jsonrpc.ID, e *Error) reply {
	return reply{kind: Answered, body: jsonrpc.EncodeError(i, e), code: int32(e.Code)}
}

// peer is whoever sent one message: what the pipeline needs of every
// sender, and its carrier for what differs.
type peer struct {
	carrier   carrier
	principal ports.Principal
	// notify sends a notification related to one request (progress); nil
	// drops them.
	notify func([]byte)
	// batchSlots, when set, bounds how many elements of a batch run at once.
	batchSlots chan struct{}
}

// carrier is what differs between the two framings, so the pipeline never
// asks which it serves (in the spirit of x/tools jsonrpc2_v2's split: the
// connection owns ids, in-flight requests and responses; the pipeline is
// only MCP). A connection (*conn, ServeConn) negotiates once, has an
// in-flight id space, serves every request on its own goroutine and takes
// responses and notifications; an exchange (*exchange, Exchange) keeps
// nothing of its own, serves a single message on the caller's goroutine and
// drops what is not a request, except notifications/cancelled, which
// reaches the engine's registry of legacy calls in flight (flights.go).
type carrier interface {
	// legacyVersion is the revision in force for a legacy request.
	legacyVersion() string
	// headers are the HTTP request's MCP headers; nil on a connection.
	headers() *Headers
	// route takes a message that is not a request: a response, or a
	// notification (by value: a pointer through the interface would move
	// every decoded message to the heap).
	route(m jsonrpc.Message)
	// inFlight reports whether a request with id i is being served.
	inFlight(i jsonrpc.ID) bool
	// atBound reports whether the in-flight bound is reached.
	atBound() bool
	// negotiated reports whether initialize was answered already;
	// negotiate records one (false: it was answered already).
	negotiated() bool
	negotiate(version string, caps []byte) bool
	// newInbound returns a zero inbound for the next request.
	newInbound(inBatch bool) *inbound
	// run serves in (accepted) through the engine, on this goroutine or
	// one of its own, and gives its answer to to, exactly once.
	run(p *peer, in *inbound, inBatch bool, to sink)
	// parkedOn records that request i parked pc (its answer is
	// input_required).
	parkedOn(i jsonrpc.ID, pc *parkedCall)
	// binding is what binds the sender's input-required rounds
	// (docs/SPEC.md §6): a connection, or an exchange's principal.
	binding() string
}

// inbound is one request after decoding and era resolution.
type inbound struct {
	id      jsonrpc.ID
	method  string
	params  []jsonrpc.Member // nil when params is absent
	meta    []jsonrpc.Member // params._meta's members; nil when absent
	array   bool             // params was an array (MCP wants objects)
	modern  bool
	version string // legacy: the revision in force; modern: the requested one
	// parked is the call this request parked (its answer is
	// input_required), ended if that answer is dropped (see abandon).
	parked *parkedCall
	// task is the task this request's answer creates (its CreateTaskResult):
	// if that answer is dropped, nobody holds the task's id, and abandon
	// cancels and forgets it.
	task *task
	// written, when set, runs once the answer has been delivered: a
	// 2025-11-25 task's notifications wait for the answer that names it
	// (tasks_legacy.go).
	written func()

	// Room for the members of params and _meta, so reading them allocates
	// nothing more in the common case (a tools/call has three of each;
	// more spill to the heap), and for the request's one ports.Caller
	// (see newCallCaller): one allocation per request.
	pbuf   [4]jsonrpc.Member
	mbuf   [4]jsonrpc.Member
	caller callCaller
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

// sink receives the answer to one message (or one batch), exactly once:
// on the goroutine that called handle, or on the request's own.
type sink interface{ deliver(reply) }

// handle is the pipeline every framing feeds, one JSON-RPC message (not a
// batch) at a time: the MCP steps (accept), then the request runs on its
// carrier. Either way its answer goes to to, exactly once.
func (e *Engine) handle(p *peer, frame []byte, inBatch bool, to sink) {
	in, r := e.accept(p, frame, inBatch)
	if in == nil {
		to.deliver(r)
		return
	}
	p.carrier.run(p, in, inBatch, to)
}

// accept decodes one message, routes responses and notifications, parses
// the params, resolves the era, validates and gates the method. It returns
// the request to run, or nil and the answer to give at once.
func (e *Engine) accept(p *peer, frame []byte, inBatch bool) (*inbound, reply) {
	m, derr := jsonrpc.DecodeMessage(frame)
	if derr == jsonrpc.ErrParse {
		return nil, invalid(jsonrpc.ID{}, derr)
	}
	if derr != nil {
		if m.IsNotification() {
			return nil, accepted // a notification never gets a reply, not even an error
		}
		return nil, invalid(m.ID, derr)
	}
	if !m.HasMethod || !m.HasID { // a response or a notification
		p.carrier.route(m)
		return nil, accepted
	}
	if p.carrier.inFlight(m.ID) {
		// docs/SPEC.md §4: a request reusing an id still in flight gets
		// -32600, the first is untouched, whatever its method.
		return nil, answerErr(m.ID, jsonrpc.InvalidRequest("id is already in flight"))
	}
	in := p.carrier.newInbound(inBatch)
	perr := parseParams(&m, in)
	if perr != nil {
		return nil, invalid(m.ID, perr)
	}
	h := p.carrier.headers()
	in.modern = isModern(in, h)
	if in.modern {
		if inBatch {
			return nil, invalid(in.id, jsonrpc.InvalidRequest("batches are not part of "+ModernVersion))
		}
		if verr := validateModern(in, h); verr != nil {
			kind := Invalid
			if verr.Code == CodeMethodNotFound {
				kind = UnknownMethod
			}
			r := invalid(in.id, verr)
			r.kind = kind
			return nil, r
		}
	} else {
		in.version = p.carrier.legacyVersion()
		switch in.method {
		case "initialize", "ping":
			if p.carrier.atBound() {
				// Answered on this goroutine, they never count as in
				// flight, but at the bound they are refused like any
				// other request (docs/SPEC.md §4).
				return nil, e.refusal(in, "server is busy")
			}
			if in.method == "ping" {
				return nil, answered(jsonrpc.EncodeResponse(in.id, []byte("{}"), nil))
			}
			if inBatch {
				return nil, answerErr(in.id, jsonrpc.InvalidRequest("initialize must not be part of a batch"))
			}
			return nil, e.initialize(p, in)
		case "tools/list", "tools/call":
		default:
			if isLegacyTaskMethod(in.method) && legacyTasks(in) {
				break
			}
			return nil, answerErr(in.id, jsonrpc.MethodNotFound(in.method))
		}
	}
	return in, reply{}
}

// handleBatch serves a JSON array (valid JSON): a 2025-03-26 batch, each
// element through handle, answered with one array once every element is
// done, or nothing when no element had an answer (docs/SPEC.md §4). At
// most concurrency elements run at once (0: all).
func (e *Engine) handleBatch(p *peer, frame []byte, max, concurrency int, to sink) {
	version := p.carrier.legacyVersion()
	if !batchesAllowed(version) { // refused before the array is split
		to.deliver(invalid(jsonrpc.ID{}, batchRefused(version, 0, max)))
		return
	}
	elems := jsonrpc.Elements(frame)
	if err := batchRefused(version, len(elems), max); err != nil {
		to.deliver(invalid(jsonrpc.ID{}, err))
		return
	}
	if concurrency > 0 && concurrency < len(elems) {
		p.batchSlots = make(chan struct{}, concurrency)
	}
	b := &batch{slots: make([]batchSlot, len(elems)), pending: len(elems), to: to}
	for i := range b.slots {
		b.slots[i].b = b
	}
	for i, el := range elems {
		if jsonrpc.FirstByte(el) != '{' {
			b.slots[i].deliver(answerErr(jsonrpc.ID{}, jsonrpc.InvalidRequest("not a JSON-RPC message")))
			continue
		}
		e.handle(p, el, true, &b.slots[i])
	}
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

// batch collects the answers of one batch, one slot per element.
type batch struct {
	mu      sync.Mutex // guards pending and the slots' bodies
	slots   []batchSlot
	pending int
	to      sink
}

// batchSlot is one element's sink and, once delivered, its answer.
type batchSlot struct {
	b    *batch
	body []byte
}

func (s *batchSlot) deliver(r reply) {
	b := s.b
	b.mu.Lock()
	if r.kind != Cancelled {
		s.body = r.body
	}
	b.pending--
	done := b.pending == 0
	b.mu.Unlock()
	if !done {
		return
	}
	out := []byte{'['}
	for _, s := range b.slots {
		if s.body != nil {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(out, s.body...)
		}
	}
	if len(out) == 1 {
		b.to.deliver(accepted) // notifications only: no output
		return
	}
	b.to.deliver(answered(append(out, ']')))
}

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

// validateModern runs the modern checks in docs/SPEC.md §4's order.
func validateModern(in *inbound, h *Headers) *Error {
	vraw, hasV := in.metaValue(metaProtocolVersion)
	caps, hasCaps := in.metaValue(metaClientCapabilities)
	if in.meta == nil || !hasV || !hasCaps {
		return jsonrpc.InvalidParams("params._meta must carry " + metaProtocolVersion + " and " + metaClientCapabilities)
	}
	if !jsonrpc.IsString(vraw) {
		return jsonrpc.InvalidParams(metaProtocolVersion + " must be a string")
	}
	if !jsonrpc.IsObject(caps) {
		return jsonrpc.InvalidParams(metaClientCapabilities + " must be an object")
	}
	in.version = jsonrpc.Unquote(vraw)
	if h != nil {
		if e := checkHeaders(in, h); e != nil {
			return e
		}
	}
	if in.version != ModernVersion {
		data, _ := json.Marshal(struct {
			Supported []string `json:"supported"`
			Requested string   `json:"requested"`
		}{supportedVersions[:], in.version})
		return &Error{Code: CodeUnsupportedProtocolVersion, Message: "Unsupported protocol version", Data: data}
	}
	switch in.method {
	case "server/discover", "tools/list", "tools/call":
		return nil
	}
	if isTaskMethod(in.method) {
		return nil
	}
	return jsonrpc.MethodNotFound(in.method)
}

// checkHeaders compares MCP-Protocol-Version, Mcp-Method and (tools/call)
// Mcp-Name with the body (-32020 HeaderMismatch).
func checkHeaders(in *inbound, h *Headers) *Error {
	mismatch := func(what string) *Error { return jsonrpc.NewError(CodeHeaderMismatch, "Header mismatch: "+what) }
	if !h.HasProtocolVersion || h.ProtocolVersion != in.version {
		return mismatch("MCP-Protocol-Version must equal params._meta protocolVersion")
	}
	if !h.HasMethod || h.Method != in.method {
		return mismatch("Mcp-Method must equal the method")
	}
	if in.method == "tools/call" {
		raw, ok := in.param("name")
		if !ok || !jsonrpc.IsString(raw) {
			raw = []byte(`""`)
		}
		if !h.HasName || !jsonrpc.EqualString(raw, h.Name) {
			return mismatch("Mcp-Name must equal params.name")
		}
	}
	if isTaskMethod(in.method) {
		// SEP-2663: tasks/* carry Mcp-Name: <taskId>.
		raw, ok := in.param("taskId")
		if !ok || !jsonrpc.IsString(raw) {
			raw = []byte(`""`)
		}
		if !h.HasName || !jsonrpc.EqualString(raw, h.Name) {
			return mismatch("Mcp-Name must equal params.taskId")
		}
	}
	return nil
}

// initialize answers a legacy initialize. On a connection it negotiates
// once; an exchange answers it without keeping state (docs/SPEC.md §4).
func (e *Engine) initialize(p *peer, in *inbound) reply {
	if p.carrier.negotiated() {
		return answerErr(in.id, jsonrpc.InvalidRequest("already initialized"))
	}
	if in.params == nil {
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
	if !p.carrier.negotiate(version, caps) {
		return answerErr(in.id, jsonrpc.InvalidRequest("already initialized"))
	}
	b := jsonrpc.AppendString([]byte(`{"protocolVersion":`), version)
	b = append(b, `,"capabilities":{"tools":{}`...)
	if version == tasksVersion {
		b = appendLegacyTasksCaps(b, p) // docs/SPEC.md §14
	}
	b = append(b, `},"serverInfo":`...)
	b = append(b, e.infoJSON...)
	if e.instructions != "" {
		b = jsonrpc.AppendString(append(b, `,"instructions":`...), e.instructions)
	}
	return answered(jsonrpc.EncodeResponse(in.id, append(b, '}'), nil))
}

// serveRequest runs a request that needs the session (tools/list,
// tools/call, server/discover) on ctx and encodes its answer. elicit, when
// set, lets the call's prompts reach a legacy client (docs/SPEC.md §6).
// serve (observe.go) is its one caller.
func (e *Engine) serveRequest(ctx context.Context, p *peer, in *inbound, elicit elicitFunc) reply {
	if in.array {
		return answerErr(in.id, jsonrpc.InvalidParams("params must be an object"))
	}
	switch in.method {
	case "server/discover":
		b := e.resultHead(make([]byte, 0, 512), in, "complete")
		b = append(append(b, `"supportedVersions":`...), supportedVersionsJSON...)
		b = append(b, `,"capabilities":{"tools":{},"extensions":{"`+extTasks+`":{}}}`...)
		if e.instructions != "" {
			b = jsonrpc.AppendString(append(b, `,"instructions":`...), e.instructions)
		}
		return answered(e.resultTail(e.appendCacheable(b), in))
	case "tools/list":
		return e.listTools(ctx, in)
	case "tasks/get", "tasks/update", "tasks/cancel", "tasks/result", "tasks/list":
		if !in.modern {
			return e.serveLegacyTask(ctx, p, in)
		}
		return e.serveTask(p, in)
	}
	return e.callTool(ctx, p, in, elicit)
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

func (e *Engine) listTools(ctx context.Context, in *inbound) reply {
	if _, ok := in.param("cursor"); ok {
		return answerErr(in.id, jsonrpc.InvalidParams("tools/list has one page; cursor is not supported"))
	}
	cat, err := e.catalog(ctx)
	if err != nil {
		return answerErr(in.id, jsonrpc.NewError(CodeInternalError, domain.ClientMessage(err)))
	}
	var tools []byte
	if legacyTasks(in) {
		tools, err = domain.MarshalJSON(withExecution(cat.Tools())) // docs/SPEC.md §14
	} else {
		tools, err = domain.MarshalJSON(cat.Tools())
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

// callTool is docs/SPEC.md §3 in order.
func (e *Engine) callTool(ctx context.Context, p *peer, in *inbound, elicit elicitFunc) reply {
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
	var cat *domain.Catalog // read once for the task decision and the call
	if in.modern {
		cat, _ = e.catalog(ctx) // an error is answered by runTool, which reads it again
		if r, ok := e.callAsTask(p, in, cat, name, args); ok {
			return r
		}
		inRequest := cat != nil && cat.TaskStartsInRequest(name)
		if e.roundsOn(in) {
			return e.callWithRounds(ctx, p, in, name, args, inRequest)
		}
		if err := checkRoundParams(in); err != nil {
			return answerErr(in.id, err)
		}
		if inRequest && declaresTasks(in.clientCaps()) {
			return e.callInRequest(ctx, p, in, name, args)
		}
	} else if legacyTasks(in) {
		cat, _ = e.catalog(ctx) // as above
		if r, ok := e.callAsLegacyTask(p, in, cat, name, args, elicit); ok {
			return r
		}
	}
	caller := e.newCallCaller(in, p, elicit)
	defer caller.finish()
	return e.callResult(in, e.runToolIn(ctx, cat, caller, name, args))
}

// callResult encodes a tools/call's outcome: its result, or the JSON-RPC
// error of a submission that failed inside its turn.
func (e *Engine) callResult(in *inbound, o toolOutcome) reply {
	if o.rerr != nil {
		return answerErr(in.id, o.rerr)
	}
	b := e.resultHead(make([]byte, 0, 160+len(in.id.Raw())+2*o.size()), in, "complete")
	r := answered(e.resultTail(o.appendTo(b), in))
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
// text), or the JSON-RPC error of a submission that failed inside its turn.
type toolOutcome struct {
	env    *domain.Envelope
	result domain.ToolResult
	rerr   *Error
}

// failed reports whether the outcome is a CallToolResult with isError true
// (a JSON-RPC error is not: its result is empty).
func (o toolOutcome) failed() bool {
	if o.env != nil {
		return !o.env.Success
	}
	return o.result.IsError != nil && *o.result.IsError
}

func toolError(msg string) toolOutcome { return toolOutcome{result: domain.ToolError(msg)} }

// size estimates the bytes of the outcome's text.
func (o toolOutcome) size() int {
	if o.env != nil {
		return 64 + len(o.env.Result) + len(o.env.Error) + len(o.env.Metadata)
	}
	n := 0
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
// <!success>} (docs/SPEC.md §3.4), the envelope rendered once.
func (o toolOutcome) appendTo(b []byte) []byte {
	if o.env == nil {
		return appendToolResult(b, o.result)
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
		prompt, ok := domain.SubmitPrompt(args)
		if !ok {
			return toolError(e.submit.InvalidArgumentsMessage())
		}
		turn, err := e.session.Submit(ctx, ports.Submission{Prompt: prompt}, withinSubmission{caller, e.submit.Name})
		switch {
		case e.shuttingDown(ctx):
			return errShutdownResult
		case err == nil:
			return toolOutcome{result: domain.TextResult(turn.Response)}
		case errors.Is(err, ports.ErrRefused):
			return toolError(domain.ClientMessage(err))
		default:
			return toolOutcome{rerr: jsonrpc.NewError(CodeInternalError, domain.ClientMessage(err))}
		}
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
