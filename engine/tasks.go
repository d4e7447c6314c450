package engine

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/jsonrpc"
	"github.com/agentmcp/agentmcp/ports"
)

// Tasks (docs/SPEC.md §14): a tools/call that outlives its request as a
// task, named by a random id, read and answered through tasks/*, on either
// era's wire:
//
//   - 2026-07-28, the io.modelcontextprotocol/tasks extension (SEP-2663,
//     https://github.com/modelcontextprotocol/modelcontextprotocol/blob/main/seps/2663-tasks-extension.md):
//     a call of a tool that supports tasks, from a request that declared
//     the extension, answers a flat CreateTaskResult; tasks/get reads it,
//     tasks/update answers its input requests, tasks/cancel ends it.
//   - 2025-11-25's experimental tasks (SEP-1686,
//     https://modelcontextprotocol.io/specification/2025-11-25/basic/utilities/tasks):
//     the client asks per call (params.task, with an optional ttl), the
//     Task is nested under "task", tasks/result blocks until the task
//     ends, tasks/cancel of an ended task is -32602, a tool error reads
//     failed; on a stream the task's progress and status changes follow
//     the creating answer (taskWire), and tasks/list lists the sender's
//     tasks where they are bound to a context of its own.
//
// Both are one call (call.go) named by its id in the index (index.go);
// what differs is a view per era (modernTaskView, legacyTaskView), which
// renders the Task and serves the era's tasks/* methods.

// extTasks is the extension's identifier, under capabilities.extensions.
const extTasks = "io.modelcontextprotocol/tasks"

// tasksVersion is the one legacy revision that has tasks.
const tasksVersion = "2025-11-25"

// metaRelatedTask tags what belongs to a task (tasks/result's result, an
// elicitation/create a task raises, its progress).
const metaRelatedTask = "io.modelcontextprotocol/related-task"

// CodeMissingRequiredCapability (-32021, MCP 2026-07-28) answers a request
// the server cannot serve without a capability the client did not declare:
// here a call of a tool that requires tasks from a request that did not
// declare the extension; data.requiredCapabilities names it.
const CodeMissingRequiredCapability = -32021

// Defaults of [TaskOptions] (docs/SPEC.md §14).
const (
	DefaultTaskTTL           = time.Hour
	DefaultTaskPollInterval  = 2 * time.Second
	DefaultTasksPerPrincipal = 8
	DefaultMaxTasks          = 256
	// DefaultTaskResultBytesPerPrincipal and DefaultMaxTaskResultBytes
	// bound the bytes of the results ended tasks keep for their TTL: 64 MiB
	// for one principal, 256 MiB in all. A result is the tool's or turn's
	// text, as large as the session makes it (an agent turn's answer may
	// hold megabytes), and kept whole until its TTL.
	DefaultTaskResultBytesPerPrincipal = 64 << 20
	DefaultMaxTaskResultBytes          = 256 << 20
)

// TaskOptions bounds and times the engine's tasks (docs/SPEC.md §14). The
// zero value of each field means its default.
type TaskOptions struct {
	// TTL is how long a task is kept after it ends (its ttlMs, in whole
	// milliseconds on the wire); zero means [DefaultTaskTTL].
	TTL time.Duration
	// PollInterval is the pollIntervalMs a task suggests; zero means
	// [DefaultTaskPollInterval].
	PollInterval time.Duration
	// PerPrincipal bounds the running tasks of one principal; zero means
	// [DefaultTasksPerPrincipal].
	PerPrincipal int
	// Max bounds every task the engine holds, running or kept; zero means
	// [DefaultMaxTasks]. At the bound an ended task is forgotten before its
	// TTL to make room, when there is one: the oldest of the principal
	// holding the most.
	Max int
	// PerPrincipalResultBytes bounds the bytes of the results one
	// principal's ended tasks keep; zero means
	// [DefaultTaskResultBytesPerPrincipal]. Beyond it, that principal's
	// oldest ended tasks are forgotten before their TTL, never the one just
	// ended (a result larger than the bound is kept alone).
	PerPrincipalResultBytes int64
	// MaxResultBytes bounds the bytes of the results every ended task
	// keeps; zero means [DefaultMaxTaskResultBytes]. Beyond it, the oldest
	// ended task of the principal keeping the most bytes is forgotten,
	// until the bound holds (never the one just ended).
	MaxResultBytes int64
}

// withDefaults is o with every zero field at its default.
func (o TaskOptions) withDefaults() TaskOptions {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.TTL, DefaultTaskTTL)
	def(&o.PollInterval, DefaultTaskPollInterval)
	if o.PerPrincipal <= 0 {
		o.PerPrincipal = DefaultTasksPerPrincipal
	}
	if o.Max <= 0 {
		o.Max = DefaultMaxTasks
	}
	if o.PerPrincipalResultBytes <= 0 {
		o.PerPrincipalResultBytes = DefaultTaskResultBytesPerPrincipal
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = DefaultMaxTaskResultBytes
	}
	return o
}

// Causes a task's context ends with.
var (
	errTaskCancelled = errors.New("task cancelled by tasks/cancel")
	errTaskStream    = errors.New("the stream that created the task ended")
)

// startTask names the call a task and starts it, and returns its creating
// answer, rendered before the call starts (its status is always working):
// m is modeTask (2026-07-28) or modeLegacyTask (2025-11-25, with the
// client's ttl, 0 for the engine's). Where its prompts go is fixed here,
// from what the creating request declared: a 2026-07-28 task asks through
// input requests only with AskClient on and form elicitation declared in
// that request (docs/SPEC.md §14 "Input"); a 2025-11-25 task asks a stream
// client that can answer forms. When the engine stops or a bound is
// reached it returns the refusal instead.
func (e *Engine) startTask(ctx context.Context, p *peer, in *inbound, m mode, name string, args []byte, ttl time.Duration) reply {
	if e.isStopping() {
		return e.callResult(in, errShutdownResult)
	}
	asks, elicit := askNone, elicitFunc(nil)
	switch {
	case m == modeTask && e.askClient && declaresFormElicitation(in.clientCaps()):
		asks = askForms
	case m == modeLegacyTask:
		if elicit = p.origin.elicitor(); elicit != nil {
			asks = askStream
		}
	}
	c := e.newCall(ctx, p, m, asks)
	c.elicit, c.ttl = elicit, ttl
	if m == modeLegacyTask && p.origin.lasting() {
		c.wire = newTaskWire(p, in)
		c.own = c.wire.reporter
	}
	if refusal, ok := e.index.addTask(ctx, c); !ok {
		c.cancel(nil)
		return e.callResult(in, toolError(refusal))
	}
	c.update(func(s *callState) { s.task = true })
	c.wire.named(c.id)
	r := viewOf(in).created(e, in, c)
	c.start(name, args)
	return r
}

// taskCreated is the CreateTaskResult answering in for a call that became
// a task in its request (SEP-2663: no requestState, no inputRequests).
func (e *Engine) taskCreated(in *inbound, c *call) reply {
	return modernTasks.created(e, in, c)
}

// taskView is how one era reads and renders tasks.
type taskView interface {
	// created is the answer that creates c, as c was created: working, no
	// statusMessage, lastUpdatedAt its createdAt, so its shape never
	// depends on timing. It names c (in.named).
	created(e *Engine, in *inbound, c *call) reply
	// members appends the Task's members (no braces) as s says.
	members(b []byte, c *call, s callState) []byte
}

// viewOf is the view of in's era.
func viewOf(in *inbound) taskView {
	if in.modern {
		return modernTasks
	}
	return legacyTasks
}

// snapshot is c's state now.
func (c *call) snapshot() callState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s
}

// createdState is a task's state as it was created.
func (c *call) createdState() callState {
	return callState{task: true, status: taskWorking, updated: c.created}
}

// appendTaskMembers appends the members every Task has, with the TTL and
// poll interval under the era's names.
func (e *Engine) appendTaskMembers(b []byte, c *call, status, message string, updated time.Time, ttlName, pollName string) []byte {
	b = jsonrpc.AppendString(append(b, `"taskId":`...), c.id)
	b = jsonrpc.AppendString(append(b, `,"status":`...), status)
	if message != "" {
		b = jsonrpc.AppendString(append(b, `,"statusMessage":`...), message)
	}
	b = jsonrpc.AppendString(append(b, `,"createdAt":`...), c.created.UTC().Format(time.RFC3339Nano))
	b = jsonrpc.AppendString(append(b, `,"lastUpdatedAt":`...), updated.UTC().Format(time.RFC3339Nano))
	b = strconv.AppendInt(append(append(append(b, `,"`...), ttlName...), `":`...), c.ttl.Milliseconds(), 10)
	return strconv.AppendInt(append(append(append(b, `,"`...), pollName...), `":`...), e.taskOpts.PollInterval.Milliseconds(), 10)
}

var errTaskNotFound = jsonrpc.NewError(CodeInvalidParams, "Failed to retrieve task: Task not found")

// errCallStore answers a request a shared call store failed (docs/SPEC.md
// §14 "Replicas"): the operator's log says why, the client learns nothing
// of the store.
var errCallStore = jsonrpc.NewError(CodeInternalError, "Internal error: the task store failed (the server's log says why); try again")

// taskOf finds the task params.taskId names for the sender: -32602 when
// taskId is missing or not a string, or the task is unknown, expired or
// another's (alike); -32603 when a shared store failed.
func (e *Engine) taskOf(ctx context.Context, p *peer, in *inbound) (*call, *Error) {
	raw, ok := in.param("taskId")
	if !ok || !jsonrpc.IsString(raw) {
		return nil, jsonrpc.InvalidParams(in.method + " needs a string taskId")
	}
	c, err := e.index.task(ctx, jsonrpc.Unquote(raw), p.origin.owner())
	switch {
	case err != nil:
		return nil, e.storeFailed(in.method, err)
	case c == nil:
		return nil, errTaskNotFound
	}
	return c, nil
}

// storeFailed logs what a shared call store's failure did to a request
// and is its answer.
func (e *Engine) storeFailed(method string, err error) *Error {
	e.logger.Error("engine: the call store failed", "method", method, "err", err)
	return errCallStore
}

// modernTaskView is 2026-07-28's: flat Tasks with ttlMs and pollIntervalMs,
// the status as it is (a tool error is completed with isError), and what a
// DetailedTask's status carries.
type modernTaskView struct{}

var modernTasks modernTaskView

func (modernTaskView) created(e *Engine, in *inbound, c *call) reply {
	in.named = c
	b := modernTasks.members(e.resultHead(make([]byte, 0, 320), in, "task"), c, c.createdState())
	return answered(e.resultTail(b, in))
}

func (modernTaskView) members(b []byte, c *call, s callState) []byte {
	return c.e.appendTaskMembers(b, c, s.status, s.message, s.updated, "ttlMs", "pollIntervalMs")
}

// get answers tasks/get: the Task and what its status carries.
func (v modernTaskView) get(e *Engine, ctx context.Context, p *peer, in *inbound) reply {
	c, terr := e.taskOf(ctx, p, in)
	if terr != nil {
		return answerErr(in.id, terr)
	}
	s := c.snapshot()
	b := v.members(e.resultHead(make([]byte, 0, 512), in, "complete"), c, s)
	switch s.status {
	case taskInputRequired:
		b = append(b, `,"inputRequests":{`...)
		first := true
		for _, x := range s.inputs {
			if x.round {
				continue // a round's prompt, named by its token
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendInputRequest(append(jsonrpc.AppendString(b, x.key), ':'), x.form)
		}
		b = append(b, '}')
	case taskCompleted:
		b = append(s.outcome.appendTo(append(b, `,"result":{`...), true), '}') // tasks are 2025-11-25 and later
	case taskFailed:
		obj, _ := json.Marshal(s.outcome.rerr) // code, message, data: the JSON-RPC error the call would have answered
		b = append(append(b, `,"error":`...), obj...)
	}
	return answered(e.resultTail(b, in))
}

// update answers tasks/update: each named answer goes to its input
// request; the ack is empty.
func (modernTaskView) update(e *Engine, ctx context.Context, p *peer, in *inbound) reply {
	c, terr := e.taskOf(ctx, p, in)
	if terr != nil {
		return answerErr(in.id, terr)
	}
	if r, ok := in.param("inputResponses"); !ok || !jsonrpc.IsObject(r) {
		return answerErr(in.id, jsonrpc.InvalidParams("tasks/update needs an inputResponses object"))
	}
	r, rerr := inputResponses(in)
	if rerr != nil {
		return answerErr(in.id, rerr)
	}
	if err := e.index.answer(ctx, c, r); err != nil {
		return answerErr(in.id, e.storeFailed(in.method, err))
	}
	return e.ack(in)
}

// cancel answers tasks/cancel: a running task is cancelled; the ack is
// the same for one that ended (idempotent).
func (modernTaskView) cancel(e *Engine, ctx context.Context, p *peer, in *inbound) reply {
	c, terr := e.taskOf(ctx, p, in)
	if terr != nil {
		return answerErr(in.id, terr)
	}
	if _, err := e.index.cancel(ctx, c); err != nil {
		return answerErr(in.id, e.storeFailed(in.method, err))
	}
	return e.ack(in)
}

// ack is a modern result with no members but resultType.
func (e *Engine) ack(in *inbound) reply {
	b := e.resultHead(make([]byte, 0, 160), in, "complete")
	return answered(e.resultTail(b[:len(b)-1], in)) // no comma after resultType
}

// legacyTaskView is 2025-11-25's: the Task under "task" when created,
// flat elsewhere, with ttl and pollInterval, and a completed call whose
// result is a tool error reported failed.
type legacyTaskView struct{}

var legacyTasks legacyTaskView

func (legacyTaskView) created(e *Engine, in *inbound, c *call) reply {
	in.named = c
	b := append(e.resultHead(make([]byte, 0, 320), in, ""), `"task":{`...)
	b = legacyTasks.members(b, c, c.createdState())
	return answered(e.resultTail(append(b, '}'), in))
}

func (legacyTaskView) members(b []byte, c *call, s callState) []byte {
	return c.e.appendTaskMembers(b, c, legacyStatus(s), s.message, s.updated, "ttl", "pollInterval")
}

// legacyStatus is s's status as 2025-11-25 reads it: a tool error is
// failed.
func legacyStatus(s callState) string {
	if s.status == taskCompleted && s.outcome.failed() {
		return taskFailed
	}
	return s.status
}

func (v legacyTaskView) task(e *Engine, in *inbound, c *call) reply {
	b := v.members(e.resultHead(make([]byte, 0, 320), in, ""), c, c.snapshot())
	return answered(e.resultTail(b, in))
}

// get answers tasks/get: the Task, flat.
func (v legacyTaskView) get(e *Engine, ctx context.Context, p *peer, in *inbound) reply {
	c, terr := e.taskOf(ctx, p, in)
	if terr != nil {
		return answerErr(in.id, terr)
	}
	return v.task(e, in, c)
}

var errTaskEnded = jsonrpc.NewError(CodeInvalidParams, "Cannot cancel task: it has already ended")

// cancel answers tasks/cancel: the Task, cancelled; -32602 for one that
// ended.
func (v legacyTaskView) cancel(e *Engine, ctx context.Context, p *peer, in *inbound) reply {
	c, terr := e.taskOf(ctx, p, in)
	if terr != nil {
		return answerErr(in.id, terr)
	}
	stopped, err := e.index.cancel(ctx, c)
	switch {
	case err != nil:
		return answerErr(in.id, e.storeFailed(in.method, err))
	case !stopped:
		return answerErr(in.id, errTaskEnded)
	}
	return v.task(e, in, c)
}

// result answers tasks/result once the task has ended, or nothing when
// ctx ends first (the request ending; the task goes on): what the call
// would have answered, tagged with the related task.
func (legacyTaskView) result(e *Engine, ctx context.Context, p *peer, in *inbound) reply {
	c, terr := e.taskOf(ctx, p, in)
	if terr != nil {
		return answerErr(in.id, terr)
	}
	c, err := e.index.settled(ctx, c)
	switch {
	case ctx.Err() != nil:
		return reply{kind: Cancelled}
	case err != nil:
		return answerErr(in.id, e.storeFailed(in.method, err))
	case c == nil:
		return answerErr(in.id, errTaskNotFound) // forgotten while it was awaited
	}
	s := c.snapshot()
	switch {
	case s.status == taskCancelled:
		return answerErr(in.id, jsonrpc.NewError(CodeInternalError, "the task was cancelled"))
	case s.outcome.rerr != nil:
		return answerErr(in.id, s.outcome.rerr)
	}
	b := s.outcome.appendTo(e.resultHead(make([]byte, 0, 256+2*s.outcome.size()), in, ""), true) // tasks are 2025-11-25 and later
	b = append(append(b, `,"_meta":`...), relatedTaskMeta(c.id)...)
	return answered(e.resultTail(b, in))
}

// legacyListPage is how many tasks one tasks/list page holds.
const legacyListPage = 50

var errListCursor = jsonrpc.InvalidParams("tasks/list: invalid cursor")

// list answers tasks/list (SEP-1686 "Task Listing") where it is offered
// (listable; elsewhere -32601): the sender's own tasks, every one tasks/get
// would find, oldest first (createdAt, then id), legacyListPage a page;
// nextCursor, when more follow, is an opaque position after the page's
// last task, so tasks that end or expire between pages neither repeat nor
// hide others. A cursor that is not one we minted is -32602.
func (v legacyTaskView) list(e *Engine, ctx context.Context, p *peer, in *inbound) reply {
	if !listable(p) {
		return answerErr(in.id, jsonrpc.MethodNotFound(in.method))
	}
	var after taskPosition
	if raw, ok := in.param("cursor"); ok {
		var valid bool
		if after, valid = parseCursor(raw); !valid {
			return answerErr(in.id, errListCursor)
		}
	}
	tasks, err := e.index.tasks(ctx, p.origin.owner())
	if err != nil {
		return answerErr(in.id, e.storeFailed(in.method, err))
	}
	slices.SortFunc(tasks, func(a, b *call) int { return positionOf(a).compare(positionOf(b)) })
	i, _ := slices.BinarySearchFunc(tasks, after, func(c *call, at taskPosition) int {
		if positionOf(c).compare(at) <= 0 {
			return -1
		}
		return 1
	})
	tasks = tasks[i:]
	more := len(tasks) > legacyListPage
	if more {
		tasks = tasks[:legacyListPage]
	}
	b := append(e.resultHead(make([]byte, 0, 64+300*len(tasks)), in, ""), `"tasks":[`...)
	for i, c := range tasks {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(v.members(append(b, '{'), c, c.snapshot()), '}')
	}
	b = append(b, ']')
	if more {
		b = jsonrpc.AppendString(append(b, `,"nextCursor":`...), positionOf(tasks[len(tasks)-1]).cursor())
	}
	return answered(e.resultTail(b, in))
}

// appendLegacyTasksCaps appends the 2025-11-25 server capability:
// task-augmented tools/call, tasks/cancel, and tasks/list exactly where it
// is offered (listable).
func appendLegacyTasksCaps(b []byte, p *peer) []byte {
	if listable(p) {
		return append(b, `,"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`...)
	}
	return append(b, `,"tasks":{"cancel":{},"requests":{"tools":{"call":{}}}}`...)
}

// listable reports whether tasks/list is offered to p: where its tasks are
// bound to an authorisation context of its own (SEP-1686 "Security": list
// only with such binding) — a stream (its connection) or an HTTP principal
// the host authenticated (serve remote). The loopback host serves every
// local client as the one zero principal, so a list there would hand one
// client another's task ids, which are bearer handles.
func listable(p *peer) bool {
	return p.origin.lasting() || p.principal != (ports.Principal{})
}

// taskAugmented reports whether in is a 2025-11-25 request carrying
// params.task (an object): a tools/call that may become a task.
func taskAugmented(in *inbound) bool {
	if in.modern || in.version != tasksVersion {
		return false
	}
	hint, ok := in.param("task")
	return ok && jsonrpc.IsObject(hint)
}

// relatedTaskMeta is the _meta that tags a message with task id.
func relatedTaskMeta(id string) json.RawMessage {
	b := jsonrpc.AppendString([]byte(`{"`+metaRelatedTask+`":{"taskId":`), id)
	return append(b, "}}"...)
}

// minLegacyTTL is the shortest TTL a client's params.task.ttl gets: a task
// forgotten sooner than a few polls after its end could not be read back.
const minLegacyTTL = 10 * time.Second

// Errors of the 2025-11-25 tools/call (docs/SPEC.md §14).
var (
	errTaskParam = jsonrpc.InvalidParams("task must be an object")
	errTaskTTL   = jsonrpc.InvalidParams("task.ttl must be a non-negative number of milliseconds")
)

// requestedTTL reads params.task (an object): its ttl in ms, bounded by
// the engine's TTL and by minLegacyTTL (or the engine's TTL when that is
// shorter); 0 (the engine's) when ttl is absent or null. SEP-1686 lets the
// receiver override it ("Receivers MAY override the requested ttl").
func (e *Engine) requestedTTL(hint []byte) (time.Duration, *Error) {
	if !jsonrpc.IsObject(hint) || jsonrpc.HasDuplicates(hint) {
		return 0, errTaskParam
	}
	raw, ok := jsonrpc.Lookup(members(hint), "ttl")
	if !ok || string(raw) == "null" {
		return 0, nil
	}
	if c := raw[0]; c != '-' && (c < '0' || c > '9') {
		return 0, errTaskTTL // a string, a boolean, an object, an array
	}
	// A number beyond float64's range is still a JSON number: ParseFloat
	// then gives ±Inf (or ±0 below its smallest) with ErrRange, which
	// the bounds below clamp like any other.
	ms, err := strconv.ParseFloat(string(raw), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || ms < 0 {
		return 0, errTaskTTL
	}
	most := e.taskOpts.TTL
	least := min(minLegacyTTL, most)
	if ms >= float64(most.Milliseconds()) {
		return most, nil
	}
	return max(time.Duration(ms)*time.Millisecond, least), nil
}

// errTaskForbidden and errTaskRequired are the tool-level negotiation's
// -32601 (Method not found): SEP-1686's "Tool-Level Negotiation" says a
// task-augmented call of a tool whose taskSupport is absent or forbidden
// SHOULD get it, and a plain call of a tool whose taskSupport is required
// MUST. (Its error table's -32600 is a MAY for a receiver that requires
// tasks for a whole request type; we require them per tool only.)
func errTaskForbidden(name string) *Error {
	return jsonrpc.NewError(CodeMethodNotFound, "Tool "+strconv.Quote(name)+" does not support tasks: call it without params.task")
}

func errTaskRequired(name string) *Error {
	return jsonrpc.NewError(CodeMethodNotFound, "Tool "+strconv.Quote(name)+" requires a task: call it with params.task")
}

func errTasksNotDeclared(what string) *Error {
	return &Error{Code: CodeMissingRequiredCapability, Message: what + " requires the " + extTasks + " extension", Data: missingTasksData}
}

var missingTasksData = json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + extTasks + `":{}}}}`)

// declaresTasks reports whether a request's client capabilities declare the
// extension: "extensions":{"io.modelcontextprotocol/tasks":{…}}.
func declaresTasks(caps []byte) bool {
	v, ok := declared(caps, "extensions", extTasks)
	return ok && jsonrpc.IsObject(v)
}

// declaresFormElicitation reports whether capabilities (a ClientCapabilities
// object) declare form-mode elicitation: "elicitation":{} or
// "elicitation":{"form":{}} (an elicitation object naming only url does not).
func declaresFormElicitation(caps []byte) bool {
	el, ok := declared(caps, "elicitation")
	if !ok || !jsonrpc.IsObject(el) {
		return false
	}
	ms := members(el)
	if len(ms) == 0 {
		return true
	}
	_, form := jsonrpc.Lookup(ms, "form")
	return form
}

// declared looks a capability up by its path of member names in a
// ClientCapabilities object.
func declared(caps []byte, path ...string) ([]byte, bool) {
	v := caps
	for _, name := range path {
		if !jsonrpc.IsObject(v) {
			return nil, false
		}
		var ok bool
		if v, ok = jsonrpc.Lookup(members(v), name); !ok {
			return nil, false
		}
	}
	return v, true
}

// members are obj's members (obj is valid JSON text already: a duplicate is
// the walk's to report, and is not judged here).
func members(obj []byte) []jsonrpc.Member {
	ms, _ := jsonrpc.Members(obj, nil)
	return ms
}

// executionTool is a 2025-11-25 Tool with its execution member: taskSupport
// when the tool supports tasks (absent means forbidden).
type executionTool struct {
	domain.Tool
	Execution *toolExecution `json:"execution,omitempty"`
}

type toolExecution struct {
	TaskSupport domain.TaskSupport `json:"taskSupport"`
}

// withExecution adds execution.taskSupport to the tools that support tasks.
func withExecution(tools []domain.Tool) []executionTool {
	out := make([]executionTool, len(tools))
	for i, t := range tools {
		out[i].Tool = t
		if t.TaskSupport != "" && t.TaskSupport != domain.TaskForbidden {
			out[i].Execution = &toolExecution{TaskSupport: t.TaskSupport}
		}
	}
	return out
}

// taskPosition orders a principal's tasks for tasks/list: by creation, then
// id. The zero position is before every task.
type taskPosition struct {
	created int64 // Unix ns
	id      string
}

// positionOf reads c's position (created and id never change once stored).
func positionOf(c *call) taskPosition { return taskPosition{c.created.UnixNano(), c.id} }

func (a taskPosition) compare(b taskPosition) int {
	if c := cmp.Compare(a.created, b.created); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// cursor encodes the position: base64url of "<ns>.<id>".
func (a taskPosition) cursor() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(a.created, 10) + "." + a.id))
}

// parseCursor decodes a cursor (a JSON string) cursor made.
func parseCursor(raw []byte) (taskPosition, bool) {
	if !jsonrpc.IsString(raw) {
		return taskPosition{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(jsonrpc.Unquote(raw))
	if err != nil {
		return taskPosition{}, false
	}
	ns, id, ok := strings.Cut(string(b), ".")
	created, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || id == "" {
		return taskPosition{}, false
	}
	return taskPosition{created, id}, true
}

// taskWire is what a 2025-11-25 task created on a stream sends its client
// besides answers (docs/SPEC.md §14): notifications/progress under the
// creating request's progressToken (SEP-1686: it "remains valid
// throughout the task lifetime"), tagged with the related task, and
// notifications/tasks/status with the full Task when its status changes
// (created→working is the creating answer itself). Both, and the task's
// elicitation/create (await), wait for the creating answer to be written
// (release), so nothing about a task comes before the answer that names
// it; a connection's tasks are only ever reported on it. No progress
// follows the terminal status.
type taskWire struct {
	write    func([]byte) // the stream's
	reporter *reporter    // nil: the creating request carried no progressToken

	ready chan struct{} // closed when the creating answer has been delivered

	mu   sync.Mutex // guards what follows; held while a message is written
	open bool       // ready is closed
	held [][]byte   // what came before it, in order
	last string     // the status last reported (the creating answer's: working)
}

// maxHeldNotifications bounds what waits for the creating answer (which is
// written right after the task starts); progress beyond it is dropped.
const maxHeldNotifications = 16

// newTaskWire returns the wire of a task in's call creates on p's stream.
func newTaskWire(p *peer, in *inbound) *taskWire {
	w := &taskWire{write: p.notify, last: taskWorking, ready: make(chan struct{})}
	if tok, ok := in.metaValue(metaProgressToken); ok && validProgressToken(tok) {
		w.reporter = &reporter{token: append([]byte(nil), tok...), notify: w.send}
	}
	return w
}

// named tags the task's progress with its id (before the task runs).
func (w *taskWire) named(id string) {
	if w != nil && w.reporter != nil {
		w.reporter.meta = relatedTaskMeta(id)
	}
}

// release writes what waited for the creating answer, then lets the rest
// through as it comes (once: the stream calls it after the answer).
func (w *taskWire) release() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.open {
		return
	}
	w.open = true
	for _, b := range w.held {
		w.write(b)
	}
	w.held = nil
	close(w.ready)
}

// await waits for the creating answer to be written (true), or for ctx
// (false): the task's elicitation/create names it too.
func (w *taskWire) await(ctx context.Context) bool {
	if w == nil {
		return true
	}
	select {
	case <-w.ready:
		return true
	case <-ctx.Done():
		return false
	}
}

// send writes b, or holds it until the creating answer is out.
func (w *taskWire) send(b []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.open:
		w.write(b)
	case len(w.held) < maxHeldNotifications:
		w.held = append(w.held, b)
	}
}

// silence drops what waits for the creating answer and everything after:
// that answer was dropped (abandon), so nothing may name the task.
func (w *taskWire) silence() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.held = nil
	w.write = func([]byte) {}
}

// changed reports c's status if it differs from the one last reported.
// The status is read and written under w.mu, so reports follow the task's
// own order even when two goroutines change it (the session resuming,
// tasks/cancel): a change superseded before it was reported is skipped,
// never reported after its successor.
func (w *taskWire) changed(c *call) {
	if w == nil {
		return
	}
	if terminal(c.snapshot().status) {
		w.reporter.finish() // no progress after the terminal status (before w.mu: progress holds the reporter's lock while it sends)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	s := c.snapshot()
	status := legacyStatus(s)
	if status == w.last {
		return
	}
	w.last = status
	b := legacyTasks.members([]byte(`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{`), c, s)
	b = append(b, "}}"...)
	if w.open {
		w.write(b)
	} else {
		w.held = append(w.held, b)
	}
}
