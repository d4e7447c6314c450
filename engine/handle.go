package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"

	"github.com/agentmcp/agentmcp/domain"
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
	// Busy: a batch whose in-flight slots the framing could not take;
	// nothing ran (HTTP 503).
	Busy
)

// reply is the engine's answer to one message.
type reply struct {
	kind Outcome
	body []byte
}

var accepted = reply{kind: Accepted}

func answered(b []byte) reply        { return reply{Answered, b} }
func invalid(i id, e *Error) reply   { return reply{Invalid, errorFrame(i, e)} }
func answerErr(i id, e *Error) reply { return reply{Answered, errorFrame(i, e)} }

// peer is what a framing knows about whoever sent one message: the only
// thing the pipeline's steps differ by.
type peer struct {
	conn *conn // the connection (ServeConn); nil for an exchange
	// ctx is an exchange's request context (its calls are cancelled with
	// it); connections give each request a context of its own.
	ctx context.Context
	// headers are the HTTP request's MCP headers; nil on a connection.
	headers *Headers
	// httpHeaders holds an exchange's headers, so that headers can point
	// into the peer rather than into the caller's options.
	httpHeaders Headers
	// version is the legacy revision in force for an exchange (its
	// MCP-Protocol-Version, else 2025-03-26); connections negotiate theirs.
	version   string
	principal ports.Principal
	// bind binds a connection's input-required rounds to it; empty for an
	// exchange, whose rounds are bound to its principal (see binding).
	bind string
	// notify sends a notification related to one request (progress); nil
	// drops them.
	notify func([]byte)
	// batchSlots, when set, bounds how many elements of an exchange's batch
	// run at once.
	batchSlots chan struct{}
	// room is the inbound of an exchange's single message, allocated with
	// the peer (see newInbound); nil once taken, and for connections.
	room *inbound
}

// newInbound returns a zero inbound for the next message from p: an
// exchange's single message takes the room allocated with its peer (a
// request costs one allocation for both); a connection's messages and a
// batch's elements, which run side by side, get one each.
func (p *peer) newInbound(inBatch bool) *inbound {
	if in := p.room; in != nil && !inBatch {
		p.room = nil
		return in
	}
	return new(inbound)
}

// binding is what binds p's input-required rounds (docs/SPEC.md §6): its
// connection, or an exchange's principal. The principal is encoded only when
// a round needs it; most requests never park one.
func (p *peer) binding() string {
	if p.bind != "" {
		return p.bind
	}
	return "http:" + principalKey(p.principal)
}

// legacyVersion is the revision in force for a legacy request from p.
func (p *peer) legacyVersion() string {
	if p.conn != nil {
		return p.conn.legacyVersion()
	}
	return p.version
}

// inbound is one request after decoding and era resolution.
type inbound struct {
	id      id
	method  string
	params  []member // nil when params is absent
	meta    []member // params._meta's members; nil when absent
	array   bool     // params was an array (MCP wants objects)
	modern  bool
	version string // legacy: the revision in force; modern: the requested one

	// Room for the members of params and _meta, so reading them allocates
	// nothing more in the common case (a tools/call has three of each;
	// more spill to the heap), and for the request's one ports.Caller
	// (see newCallCaller): one allocation per request.
	pbuf   [4]member
	mbuf   [4]member
	caller callCaller
}

func (in *inbound) param(name string) ([]byte, bool) { return lookup(in.params, name) }
func (in *inbound) metaValue(name string) ([]byte, bool) {
	return lookup(in.meta, name)
}

// handle is the pipeline every framing feeds, one JSON-RPC message (not a
// batch) at a time: decode, route responses and notifications, parse the
// params, resolve the era, validate, gate the method, then run it. It
// returns the answer (ok true), unless the request is served on a goroutine
// of its own (a connection's request, a batch element): then it returns
// ok false and that goroutine calls deliver with the answer, exactly once.
func (e *Engine) handle(p *peer, frame []byte, inBatch bool, deliver func(reply)) (r reply, ok bool) {
	m, derr := decodeMessage(frame)
	if derr == errParse {
		return reply{Invalid, errorFrame(id{}, derr)}, true
	}
	if derr != nil {
		if m.isNotification() {
			return accepted, true // a notification never gets a reply, not even an error
		}
		return invalid(m.id, derr), true
	}
	switch {
	case !m.hasMethod: // a response
		if p.conn != nil {
			p.conn.response(&m)
		}
		return accepted, true
	case !m.hasID:
		if p.conn != nil {
			p.conn.notification(&m)
		}
		return accepted, true // over HTTP a disconnect is the cancellation
	}
	if p.conn != nil && p.conn.isInFlight(m.id) {
		// docs/SPEC.md §4: a request reusing an id still in flight gets
		// -32600, the first is untouched, whatever its method.
		return answerErr(m.id, invalidRequest("id is already in flight")), true
	}
	in := p.newInbound(inBatch)
	perr := parseParams(&m, in)
	if perr != nil {
		return invalid(m.id, perr), true
	}
	in.modern = isModern(in, p.headers)
	if in.modern {
		if inBatch {
			return invalid(in.id, invalidRequest("batches are not part of "+ModernVersion)), true
		}
		if verr := validateModern(in, p.headers); verr != nil {
			kind := Invalid
			if verr.Code == CodeMethodNotFound {
				kind = UnknownMethod
			}
			return reply{kind, errorFrame(in.id, verr)}, true
		}
	} else {
		in.version = p.legacyVersion()
		switch in.method {
		case "initialize", "ping":
			if p.conn != nil && p.conn.atBound() {
				// Answered on this goroutine, they never count as in
				// flight, but at the bound they are refused like any
				// other request (docs/SPEC.md §4).
				return e.refusal(in, "server is busy"), true
			}
			if in.method == "ping" {
				return answered(encodeResponse(in.id, []byte("{}"), nil)), true
			}
			if inBatch {
				return answerErr(in.id, invalidRequest("initialize must not be part of a batch")), true
			}
			return e.initialize(p, in), true
		case "tools/list", "tools/call":
		default:
			return answerErr(in.id, methodNotFound(in.method)), true
		}
	}
	if p.conn != nil {
		return p.conn.start(p, in, deliver)
	}
	if inBatch && e.goCall(func() {
		if p.batchSlots != nil {
			p.batchSlots <- struct{}{}
			defer func() { <-p.batchSlots }()
		}
		deliver(e.serve(p.ctx, p, in, nil))
	}) {
		return reply{}, false
	}
	return e.serve(p.ctx, p, in, nil), true
}

// handleBatch serves a JSON array (valid JSON): a 2025-03-26 batch, each
// element through handle, answered with one array once every element is
// done, or nothing when no element had an answer (docs/SPEC.md §4). admit,
// when set, is asked how many elements may run at once (0: Busy).
func (e *Engine) handleBatch(p *peer, frame []byte, max int, admit func(n int) int, deliver func(reply)) {
	if !batchesAllowed(p.legacyVersion()) {
		deliver(invalid(id{}, invalidRequest("batches are only part of protocol revision "+defaultLegacyVersion)))
		return
	}
	elems := elements(frame)
	switch {
	case len(elems) == 0:
		deliver(invalid(id{}, invalidRequest("empty batch")))
		return
	case len(elems) > max:
		deliver(invalid(id{}, invalidRequest("batch too large")))
		return
	}
	if admit != nil {
		run := admit(len(elems))
		if run <= 0 {
			deliver(reply{kind: Busy})
			return
		}
		if run < len(elems) {
			p.batchSlots = make(chan struct{}, run)
		}
	}
	b := &batch{slots: make([][]byte, len(elems)), pending: len(elems), deliver: deliver}
	for i, el := range elems {
		if firstByte(el) != '{' {
			b.put(i, reply{Answered, errorFrame(id{}, invalidRequest("not a JSON-RPC message"))})
			continue
		}
		put := func(r reply) { b.put(i, r) }
		if r, ok := e.handle(p, el, true, put); ok {
			put(r)
		}
	}
}

// batch collects the answers of one batch.
type batch struct {
	mu      sync.Mutex
	slots   [][]byte
	pending int
	deliver func(reply)
}

func (b *batch) put(i int, r reply) {
	b.mu.Lock()
	if r.kind != Cancelled {
		b.slots[i] = r.body
	}
	b.pending--
	done := b.pending == 0
	b.mu.Unlock()
	if !done {
		return
	}
	out := []byte{'['}
	for _, s := range b.slots {
		if s != nil {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(out, s...)
		}
	}
	if len(out) == 1 {
		b.deliver(accepted) // notifications only: no output
		return
	}
	b.deliver(answered(append(out, ']')))
}

// parseParams fills in (a zero inbound) with m's id and method, and splits
// its params into members, refusing duplicates among them and among
// _meta's members (docs/SPEC.md §4: members compared with headers are
// matched exactly; a duplicate is -32600).
func parseParams(m *message, in *inbound) *Error {
	in.id, in.method = m.id, m.method
	if m.params == nil {
		return nil
	}
	if m.params[0] == '[' {
		in.array = true
		return nil
	}
	// _meta, when an object, is read in the same walk: the first one, and
	// a second _meta is a duplicate in params anyway.
	in.meta = in.mbuf[:0]
	var dup, metaDup bool
	in.params, _, dup, metaDup = membersAt(m.params, 0, in.pbuf[:0], "_meta", &in.meta)
	if len(in.meta) == 0 {
		in.meta = nil // absent, or not an object
	}
	switch {
	case dup:
		return invalidRequest("duplicate member in params")
	case metaDup:
		return invalidRequest("duplicate member in params._meta")
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
		return invalidParams("params._meta must carry " + metaProtocolVersion + " and " + metaClientCapabilities)
	}
	if !isString(vraw) {
		return invalidParams(metaProtocolVersion + " must be a string")
	}
	if !isObject(caps) {
		return invalidParams(metaClientCapabilities + " must be an object")
	}
	in.version = unquote(vraw)
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
	return methodNotFound(in.method)
}

// checkHeaders compares MCP-Protocol-Version, Mcp-Method and (tools/call)
// Mcp-Name with the body (-32020 HeaderMismatch).
func checkHeaders(in *inbound, h *Headers) *Error {
	mismatch := func(what string) *Error { return newError(CodeHeaderMismatch, "Header mismatch: "+what) }
	if !h.HasProtocolVersion || h.ProtocolVersion != in.version {
		return mismatch("MCP-Protocol-Version must equal params._meta protocolVersion")
	}
	if !h.HasMethod || h.Method != in.method {
		return mismatch("Mcp-Method must equal the method")
	}
	if in.method == "tools/call" {
		raw, ok := in.param("name")
		if !ok || !isString(raw) {
			raw = []byte(`""`)
		}
		if !h.HasName || !equalString(raw, h.Name) {
			return mismatch("Mcp-Name must equal params.name")
		}
	}
	return nil
}

// initialize answers a legacy initialize. On a connection it negotiates
// once; an exchange answers it without keeping state (docs/SPEC.md §4).
func (e *Engine) initialize(p *peer, in *inbound) reply {
	if p.conn != nil && p.conn.negotiated() {
		return answerErr(in.id, invalidRequest("already initialized"))
	}
	if in.params == nil {
		return answerErr(in.id, invalidParams("initialize needs params"))
	}
	raw, ok := in.param("protocolVersion")
	if !ok || !isString(raw) {
		return answerErr(in.id, invalidParams("initialize needs a string protocolVersion"))
	}
	version := unquote(raw)
	if !isLegacyVersion(version) {
		version = latestLegacyVersion
	}
	if p.conn != nil {
		caps, _ := in.param("capabilities")
		if !p.conn.negotiate(version, caps) {
			return answerErr(in.id, invalidRequest("already initialized"))
		}
	}
	b := appendString([]byte(`{"protocolVersion":`), version)
	b = append(b, `,"capabilities":{"tools":{}},"serverInfo":`...)
	b = append(b, e.infoJSON...)
	if e.instructions != "" {
		b = appendString(append(b, `,"instructions":`...), e.instructions)
	}
	return answered(encodeResponse(in.id, append(b, '}'), nil))
}

// serve runs a request that needs the session (tools/list, tools/call,
// server/discover) on ctx and encodes its answer. elicit, when set, lets
// the call's prompts reach a legacy client (docs/SPEC.md §6).
func (e *Engine) serve(ctx context.Context, p *peer, in *inbound, elicit elicitFunc) reply {
	if in.array {
		return answerErr(in.id, invalidParams("params must be an object"))
	}
	switch in.method {
	case "server/discover":
		b := e.resultHead(make([]byte, 0, 512), in, "complete")
		b = append(append(b, `"supportedVersions":`...), supportedVersionsJSON...)
		b = append(b, `,"capabilities":{"tools":{}}`...)
		if e.instructions != "" {
			b = appendString(append(b, `,"instructions":`...), e.instructions)
		}
		return answered(e.resultTail(e.appendCacheable(b), in))
	case "tools/list":
		return e.listTools(ctx, in)
	}
	return e.callTool(ctx, p, in, elicit)
}

// resultHead starts a response to in with a result: the head, then the
// result object's opening — for a modern request with its resultType first
// (docs/SPEC.md §4: every modern result carries resultType). The result's
// members follow, then resultTail. The two are the one place results are
// stamped; a response is built in one buffer.
func (e *Engine) resultHead(b []byte, in *inbound, resultType string) []byte {
	b = append(appendHead(b, in.id), `,"result":{`...)
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
		return answerErr(in.id, invalidParams("tools/list has one page; cursor is not supported"))
	}
	cat, err := e.catalog(ctx)
	if err != nil {
		return answerErr(in.id, newError(CodeInternalError, domain.ClientMessage(err)))
	}
	tools, err := domain.MarshalJSON(cat.Tools())
	if err != nil {
		return answerErr(in.id, newError(CodeInternalError, "Internal error: the tool list could not be encoded"))
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
	if !ok || !isString(raw) {
		return answerErr(in.id, invalidParams("tools/call needs a string name"))
	}
	name := unquote(raw)
	args, ok := in.param("arguments")
	switch {
	case !ok:
		args = []byte(`{}`) // made here only: most calls carry arguments
	case !isObject(args):
		return answerErr(in.id, invalidParams("arguments must be an object"))
	}
	if in.modern {
		if e.roundsOn(in) {
			return e.callWithRounds(ctx, p, in, name, args)
		}
		if err := checkRoundParams(in); err != nil {
			return answerErr(in.id, err)
		}
	}
	caller := newCallCaller(in, p, elicit)
	defer caller.finish()
	return e.callResult(in, e.runTool(ctx, caller, name, args))
}

// callResult encodes a tools/call's outcome: its result, or the JSON-RPC
// error of a submission that failed inside its turn.
func (e *Engine) callResult(in *inbound, o toolOutcome) reply {
	if o.rerr != nil {
		return answerErr(in.id, o.rerr)
	}
	b := e.resultHead(make([]byte, 0, 160+len(in.id.raw)+2*o.size()), in, "complete")
	return answered(e.resultTail(o.appendTo(b), in))
}

// checkRoundParams refuses input-required round members where no round can
// exist (asking is off, or this client cannot answer forms): inputResponses
// must be an object and requestState a string, and any requestState is
// unknown (-32602).
func checkRoundParams(in *inbound) *Error {
	if r, ok := in.param("inputResponses"); ok && !isObject(r) {
		return invalidParams("inputResponses must be an object")
	}
	if s, ok := in.param("requestState"); ok {
		if !isString(s) {
			return invalidParams("requestState must be a string")
		}
		return errUnknownState
	}
	return nil
}

var errUnknownState = invalidParams("unknown or expired requestState")

var errShutdownResult = toolOutcome{result: domain.ToolError(ErrShuttingDown.Error())}

// toolOutcome is what a tools/call produced: a session's envelope (written
// straight into the response), another result (a tool error, a turn's
// text), or the JSON-RPC error of a submission that failed inside its turn.
type toolOutcome struct {
	env    *domain.Envelope
	result domain.ToolResult
	rerr   *Error
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
	b = appendString(append(b, `"content":[{"type":"text","text":`...), text)
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
	if e.shuttingDown(ctx) {
		return errShutdownResult
	}
	cat, err := e.catalog(ctx)
	if err != nil {
		return toolError(domain.ClientMessage(err))
	}
	if cat.IsSubmit(name) {
		prompt, ok := domain.SubmitPrompt(args)
		if !ok {
			return toolError(e.submit.InvalidArgumentsMessage())
		}
		turn, err := e.session.Submit(ctx, prompt, caller)
		switch {
		case e.shuttingDown(ctx):
			return errShutdownResult
		case err == nil:
			return toolOutcome{result: domain.TextResult(turn.Response)}
		case errors.Is(err, ports.ErrRefused):
			return toolError(domain.ClientMessage(err))
		default:
			return toolOutcome{rerr: newError(CodeInternalError, domain.ClientMessage(err))}
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

// refusal answers a request that will not be served: tools/call gets the
// tool error msg, anything else -32603 with msg (docs/SPEC.md §4).
func (e *Engine) refusal(in *inbound, msg string) reply {
	if in.method != "tools/call" {
		return answerErr(in.id, newError(CodeInternalError, msg))
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
		b = appendString(append(b, `{"type":`...), c.Type)
		b = appendString(append(b, `,"text":`...), c.Text)
		b = append(b, '}')
	}
	b = append(b, ']')
	if r.IsError != nil {
		b = strconv.AppendBool(append(b, `,"isError":`...), *r.IsError)
	}
	return b
}
