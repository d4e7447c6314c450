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

// Experimental tasks on 2025-11-25 (docs/SPEC.md §14; SEP-1686,
// https://modelcontextprotocol.io/specification/2025-11-25/basic/utilities/tasks).
// The same store and the same tasks as the extension's, another wire: the
// client asks per call (params.task, with an optional ttl), the Task is
// nested under "task" in CreateTaskResult and flat in tasks/get,
// tasks/result blocks until the task ends and returns what the call would
// have, tasks/cancel of an ended task is -32602, and a tool error is status
// failed. Only tools/call is task-augmented. Where the sender's tasks are
// bound to an authorisation context of their own (a stream; an HTTP
// principal the host authenticated) tasks/list lists them. On a stream the
// task's progress (under the creating request's progressToken) and its
// status changes (notifications/tasks/status) follow the creating answer.

// tasksVersion is the one legacy revision that has tasks.
const tasksVersion = "2025-11-25"

// metaRelatedTask tags what belongs to a task (tasks/result's result, an
// elicitation/create a task raises, its progress).
const metaRelatedTask = "io.modelcontextprotocol/related-task"

// appendLegacyTasksCaps appends the 2025-11-25 server capability:
// task-augmented tools/call, tasks/cancel, and tasks/list exactly where it
// is offered (listable).
func appendLegacyTasksCaps(b []byte, p *peer) []byte {
	if listable(p) {
		return append(b, `,"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`...)
	}
	return append(b, `,"tasks":{"cancel":{},"requests":{"tools":{"call":{}}}}`...)
}

// onStream reports whether p is a stream's client (stdio, a Unix-socket
// connection): a connection that outlives each request, so a task's
// notifications can reach it after its creating answer.
func onStream(p *peer) bool {
	_, ok := p.carrier.(*conn)
	return ok
}

// listable reports whether tasks/list is offered to p: where its tasks are
// bound to an authorisation context of its own (SEP-1686 "Security": list
// only with such binding) — a stream (its connection) or an HTTP principal
// the host authenticated (serve remote). The loopback host serves every
// local client as the one zero principal, so a list there would hand one
// client another's task ids, which are bearer handles.
func listable(p *peer) bool {
	return onStream(p) || p.principal != (ports.Principal{})
}

// legacyTasks reports whether a legacy request's revision has tasks.
func legacyTasks(in *inbound) bool { return !in.modern && in.version == tasksVersion }

// taskAugmented reports whether in is a 2025-11-25 request carrying
// params.task (an object): a tools/call that may become a task.
func taskAugmented(in *inbound) bool {
	if !legacyTasks(in) {
		return false
	}
	hint, ok := in.param("task")
	return ok && jsonrpc.IsObject(hint)
}

// isLegacyTaskMethod reports whether method is one 2025-11-25 tasks add.
func isLegacyTaskMethod(method string) bool {
	switch method {
	case "tasks/get", "tasks/result", "tasks/cancel", "tasks/list":
		return true
	}
	return false
}

// relatedTaskKey marks a task's context with its id, so an
// elicitation/create it raises on a stream carries the related-task _meta.
type relatedTaskKey struct{}

// relatedTask returns the id of the task ctx belongs to.
func relatedTask(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(relatedTaskKey{}).(string)
	return id, ok
}

// relatedTaskMeta is the _meta that tags a message with task id.
func relatedTaskMeta(id string) json.RawMessage {
	b := jsonrpc.AppendString([]byte(`{"`+metaRelatedTask+`":{"taskId":`), id)
	return append(b, "}}"...)
}

// minLegacyTTL is the shortest TTL a client's params.task.ttl gets: a task
// forgotten sooner than a few polls after its end could not be read back.
const minLegacyTTL = 10 * time.Second

// Errors of the 2025-11-25 tools/call hook (docs/SPEC.md §14).
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
	raw, ok := jsonrpc.Lookup(mustMembers(hint), "ttl")
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
	most := e.tasks.ttl
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

// legacyTask is what a 2025-11-25 task adds to a task: the client's TTL,
// the stream's elicitation (a stream client that can answer forms) and the
// stream's notifications. nil for a 2026-07-28 task.
type legacyTask struct {
	ttl    time.Duration // 0: the engine's
	elicit elicitFunc
	wire   *taskWire
}

// attach gives t what l holds (nothing when l is nil).
func (l *legacyTask) attach(t *task) {
	if l == nil {
		return
	}
	t.ttl, t.elicit, t.wire = l.ttl, l.elicit, l.wire
	if l.wire != nil {
		l.wire.t = t
	}
}

// callAsLegacyTask is the 2025-11-25 tools/call hook (docs/SPEC.md §14),
// for a tool of the catalog (an unknown tool, or a catalog that failed, is
// served as before). A call carrying params.task (an object; null is
// absent) of a tool that supports tasks becomes a task; its prompts reach
// the client through elicit (a stream client that can answer forms), else
// settle closed. A params.task on a tool that forbids tasks, or a plain
// call of one that requires them, is -32601; a params.task that is not an
// object, or whose ttl is not a non-negative number, is -32602. Anything
// else is served as before.
func (e *Engine) callAsLegacyTask(p *peer, in *inbound, cat *domain.Catalog, name string, args []byte, elicit elicitFunc) (reply, bool) {
	if cat == nil || !cat.IsSubmit(name) && !cat.Has(name) {
		return reply{}, false
	}
	hint, augmented := in.param("task")
	augmented = augmented && string(hint) != "null"
	support := cat.TaskSupport(name)
	switch {
	case !augmented && support == domain.TaskRequired:
		return answerErr(in.id, errTaskRequired(name)), true
	case !augmented:
		return reply{}, false
	}
	ttl, err := e.requestedTTL(hint)
	switch {
	case err != nil:
		return answerErr(in.id, err), true
	case support != domain.TaskOptional && support != domain.TaskRequired:
		return answerErr(in.id, errTaskForbidden(name)), true
	}
	l := &legacyTask{ttl: ttl, elicit: elicit}
	if onStream(p) {
		l.wire = newTaskWire(p, in)
		in.written = l.wire.release
		if elicit != nil {
			l.elicit = l.wire.after(elicit)
		}
	}
	return e.startTask(p, in, name, args, l, func(t *task) reply {
		l.wire.named(t.id)
		in.task = t
		b := append(jsonrpc.AppendResponseHead(make([]byte, 0, 320), in.id), `,"result":{"task":{`...)
		return answered(append(appendLegacyTask(b, t), "}}}"...))
	}), true
}

// appendLegacyTask appends a 2025-11-25 Task's members (no braces): ttl and
// pollInterval in ms, and a completed call whose result is a tool error
// reported failed (2025-11-25's reading).
func appendLegacyTask(b []byte, t *task) []byte {
	b, _ = appendLegacyTaskStatus(b, t)
	return b
}

// appendLegacyTaskStatus is appendLegacyTask that also returns the status
// it wrote (one reading of the task).
func appendLegacyTaskStatus(b []byte, t *task) ([]byte, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	status := t.status
	if status == taskCompleted && t.outcome.failed() {
		status = taskFailed
	}
	b = jsonrpc.AppendString(append(b, `"taskId":`...), t.id)
	b = jsonrpc.AppendString(append(b, `,"status":`...), status)
	if t.message != "" {
		b = jsonrpc.AppendString(append(b, `,"statusMessage":`...), t.message)
	}
	b = jsonrpc.AppendString(append(b, `,"createdAt":`...), t.created.UTC().Format(time.RFC3339Nano))
	b = jsonrpc.AppendString(append(b, `,"lastUpdatedAt":`...), t.updated.UTC().Format(time.RFC3339Nano))
	b = strconv.AppendInt(append(b, `,"ttl":`...), t.ttl.Milliseconds(), 10)
	return strconv.AppendInt(append(b, `,"pollInterval":`...), t.store.poll.Milliseconds(), 10), status
}

var errTaskEnded = jsonrpc.NewError(CodeInvalidParams, "Cannot cancel task: it has already ended")

// serveLegacyTask answers tasks/get, tasks/result, tasks/cancel and
// tasks/list on 2025-11-25. tasks/result waits for the task to end, or for
// ctx (the request ending: nothing is answered, the task goes on).
func (e *Engine) serveLegacyTask(ctx context.Context, p *peer, in *inbound) reply {
	if in.method == "tasks/list" {
		return e.listLegacyTasks(p, in)
	}
	t, terr := e.taskOf(p, in)
	if terr != nil {
		return answerErr(in.id, terr)
	}
	switch in.method {
	case "tasks/cancel":
		if !t.cancelRunning(errTaskCancelled) {
			return answerErr(in.id, errTaskEnded)
		}
	case "tasks/result":
		select {
		case <-t.settled:
		case <-ctx.Done():
			return reply{kind: Cancelled}
		}
		t.mu.Lock()
		status, o := t.status, t.outcome
		t.mu.Unlock()
		switch {
		case status == taskCancelled:
			return answerErr(in.id, jsonrpc.NewError(CodeInternalError, "the task was cancelled"))
		case o.rerr != nil:
			return answerErr(in.id, o.rerr)
		}
		b := append(jsonrpc.AppendResponseHead(make([]byte, 0, 256+2*o.size()), in.id), `,"result":{`...)
		b = append(o.appendTo(b), `,"_meta":`...)
		return answered(append(append(b, relatedTaskMeta(t.id)...), "}}"...))
	}
	b := append(jsonrpc.AppendResponseHead(make([]byte, 0, 320), in.id), `,"result":{`...)
	return answered(append(appendLegacyTask(b, t), "}}"...))
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

// legacyListPage is how many tasks one tasks/list page holds.
const legacyListPage = 50

var errListCursor = jsonrpc.InvalidParams("tasks/list: invalid cursor")

// listLegacyTasks answers tasks/list (SEP-1686 "Task Listing") where it is
// offered (listable; elsewhere -32601): the sender's own tasks, every one
// tasks/get would find, oldest first (createdAt, then id), legacyListPage a
// page; nextCursor, when more follow, is an opaque position after the
// page's last task, so tasks that end or expire between pages neither
// repeat nor hide others. A cursor that is not one we minted is -32602.
func (e *Engine) listLegacyTasks(p *peer, in *inbound) reply {
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
	bind, now := p.carrier.binding(), e.tasks.now()
	tasks := e.tasks.all(func(t *task) bool { return t.bind == bind && !t.expired(now) && t.reachable() })
	slices.SortFunc(tasks, func(a, b *task) int { return positionOf(a).compare(positionOf(b)) })
	i, _ := slices.BinarySearchFunc(tasks, after, func(t *task, at taskPosition) int {
		if positionOf(t).compare(at) <= 0 {
			return -1
		}
		return 1
	})
	tasks = tasks[i:]
	more := len(tasks) > legacyListPage
	if more {
		tasks = tasks[:legacyListPage]
	}
	b := append(jsonrpc.AppendResponseHead(make([]byte, 0, 64+300*len(tasks)), in.id), `,"result":{"tasks":[`...)
	for i, t := range tasks {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendLegacyTask(append(b, '{'), t), '}')
	}
	b = append(b, ']')
	if more {
		b = jsonrpc.AppendString(append(b, `,"nextCursor":`...), positionOf(tasks[len(tasks)-1]).cursor())
	}
	return answered(append(b, "}}"...))
}

// taskPosition orders a principal's tasks for tasks/list: by creation, then
// id. The zero position is before every task.
type taskPosition struct {
	created int64 // Unix ns
	id      string
}

// positionOf reads t's position (created is set before t is stored and
// never changes).
func positionOf(t *task) taskPosition { return taskPosition{t.created.UnixNano(), t.id} }

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
// elicitation/create (after), wait for the creating answer to be written
// (release), so nothing about a task comes before the answer that names
// it; a connection's tasks are only ever reported on it. No progress
// follows the terminal status.
type taskWire struct {
	write    func([]byte) // the stream's
	reporter *callCaller  // nil: the creating request carried no progressToken
	t        *task        // set before the task is stored

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
		w.reporter = &callCaller{token: append([]byte(nil), tok...), notify: w.send, who: p.principal}
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
// through as it comes (once: the conn calls it after the answer).
func (w *taskWire) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.open = true
	for _, b := range w.held {
		w.write(b)
	}
	w.held = nil
	close(w.ready)
}

// after returns elicit that first waits for the creating answer (or for
// ctx): the task's elicitation/create names it too.
func (w *taskWire) after(elicit elicitFunc) elicitFunc {
	return func(ctx context.Context, f domain.Form) json.RawMessage {
		select {
		case <-w.ready:
		case <-ctx.Done():
			return nil
		}
		return elicit(ctx, f)
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

// progress relays one progress report of the task's session (the
// callCaller's rules: only increasing, only while the task runs).
func (w *taskWire) progress(ctx context.Context, progress, total float64, message string) {
	if w != nil && w.reporter != nil {
		w.reporter.Progress(ctx, progress, total, message)
	}
}

// changed reports the task's status if it differs from the one last
// reported. The status is read and written under w.mu, so reports follow
// the task's own order even when two goroutines change it (the session
// resuming, tasks/cancel): a change superseded before it was reported is
// skipped, never reported after its successor.
func (w *taskWire) changed() {
	if w == nil {
		return
	}
	if !w.t.running() && w.reporter != nil {
		w.reporter.finish() // no progress after the terminal status
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	b, status := appendLegacyTaskStatus([]byte(`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{`), w.t)
	if status == w.last {
		return
	}
	w.last = status
	b = append(b, "}}"...)
	if w.open {
		w.write(b)
	} else {
		w.held = append(w.held, b)
	}
}
