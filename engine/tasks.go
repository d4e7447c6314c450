package engine

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/jsonrpc"
	"github.com/agentmcp/agentmcp/ports"
)

// Tasks on 2026-07-28: the io.modelcontextprotocol/tasks extension
// (docs/SPEC.md §14; SEP-2663,
// https://github.com/modelcontextprotocol/modelcontextprotocol/blob/main/seps/2663-tasks-extension.md).
// A modern tools/call of a tool whose TaskSupport is optional or required,
// from a request that declared the extension in its client capabilities,
// is answered at once with a CreateTaskResult; the call runs on a context of
// its own under the engine's, so it outlives the request that started it
// (an HTTP client leaving, a stream's notifications/cancelled of the
// creating id). tasks/get reads it, tasks/update answers its input
// requests, tasks/cancel ends it. The store is in memory: a task lives as
// long as the engine, and a finished one is kept for the TTL after its end.

// extTasks is the extension's identifier, under capabilities.extensions.
const extTasks = "io.modelcontextprotocol/tasks"

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
	// TTL to make room, when there is one (taskStore.evictable).
	Max int
	// Clock reads the time for timestamps and expiry; nil means time.Now.
	// Tests inject one to expire tasks without waiting.
	Clock func() time.Time
}

// Task statuses (SEP-2663 TaskStatus).
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

// Causes a task's context ends with.
var (
	errTaskCancelled = errors.New("task cancelled by tasks/cancel")
	errTaskStream    = errors.New("the stream that created the task ended")
)

// taskStore is the engine's tasks by id. Expiry is read from the clock on
// every lookup and creation: an expired task is gone from then on.
type taskStore struct {
	ttl, poll    time.Duration
	perPrincipal int
	max          int
	now          func() time.Time

	mu   sync.Mutex
	byID map[string]*task
	seq  uint64 // tasks stored so far: a task's seq orders ties of time
}

func newTaskStore(o TaskOptions) *taskStore {
	s := &taskStore{ttl: o.TTL, poll: o.PollInterval, perPrincipal: o.PerPrincipal, max: o.Max, now: o.Clock, byID: make(map[string]*task)}
	if s.ttl <= 0 {
		s.ttl = DefaultTaskTTL
	}
	if s.poll <= 0 {
		s.poll = DefaultTaskPollInterval
	}
	if s.perPrincipal <= 0 {
		s.perPrincipal = DefaultTasksPerPrincipal
	}
	if s.max <= 0 {
		s.max = DefaultMaxTasks
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Messages of a task creation beyond the bounds (a tool error: the client
// may retry once a task ends).
const (
	msgTasksPerPrincipal = "too many tasks running for this client; wait for one to end or cancel one"
	msgTasksMax          = "the server holds too many tasks; try again later"
)

// add stores t under a fresh id, or reports which bound is reached.
func (s *taskStore) add(t *task) (string, bool) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	live := 0
	for id, o := range s.byID {
		if o.expired(now) {
			delete(s.byID, id)
			continue
		}
		if o.bind == t.bind && o.busy() {
			live++
		}
	}
	switch {
	case live >= s.perPrincipal:
		return msgTasksPerPrincipal, false
	case len(s.byID) >= s.max:
		victim := s.evictable()
		if victim == nil {
			return msgTasksMax, false
		}
		delete(s.byID, victim.id)
	}
	t.id = newTaskID()
	s.seq++
	t.seq = s.seq
	if t.ttl <= 0 {
		t.ttl = s.ttl
	}
	t.created, t.updated = now, now
	t.status = taskWorking
	s.byID[t.id] = t
	return "", true
}

// evictable is the task to forget when the store is full (under s.mu): the
// oldest ended task of the binding that holds the most tasks among those
// with an ended one; nil when every task runs. Without it one principal
// could keep every other out of tasks for a TTL by ending its own (the
// per-principal bound counts running tasks only) and creating more; this
// way its own results go first (docs/SPEC.md §14).
func (s *taskStore) evictable() *task {
	type ended struct {
		t  *task
		at time.Time
	}
	held := make(map[string]int)
	oldest := make(map[string]ended) // per binding, its oldest ended task
	for _, o := range s.byID {
		held[o.bind]++
		o.mu.Lock()
		done, at := o.terminal() && o.returned, o.ended
		o.mu.Unlock()
		if !done {
			continue // running, or cancelled while its call still runs
		}
		if cur, ok := oldest[o.bind]; !ok || at.Before(cur.at) || at.Equal(cur.at) && o.seq < cur.t.seq {
			oldest[o.bind] = ended{o, at}
		}
	}
	var victim *task
	for bind, o := range oldest {
		if victim == nil || held[bind] > held[victim.bind] || held[bind] == held[victim.bind] && bind < victim.bind {
			victim = o.t
		}
	}
	return victim
}

// get returns the task id bound to bind; nil when it is unknown, expired or
// another's (the three answer alike: no oracle).
func (s *taskStore) get(id, bind string) *task {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.byID[id]
	if !ok {
		return nil
	}
	if t.expired(now) {
		delete(s.byID, id)
		return nil
	}
	if t.bind != bind || !t.reachable() {
		return nil
	}
	return t
}

// forget removes t from the store (its id was never given: abandon).
func (s *taskStore) forget(t *task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID[t.id] == t {
		delete(s.byID, t.id)
	}
}

// all returns the tasks that match.
func (s *taskStore) all(match func(*task) bool) []*task {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*task
	for _, t := range s.byID {
		if match(t) {
			out = append(out, t)
		}
	}
	return out
}

// newTaskID returns 32 bytes from crypto/rand, unpadded base64url (43
// characters): unguessable, since an id is a bearer handle within its
// principal. Ids are never logged.
func newTaskID() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// task is one tools/call running (or run) as a task. Its state lives under
// mu; the session's goroutine finishes it, tasks/cancel and Shutdown end it.
type task struct {
	id    string
	seq   uint64 // its place in creation order (set when stored)
	bind  string
	store *taskStore
	ttl   time.Duration // kept this long after its end: the store's, or a 2025-11-25 client's (tasks_legacy.go)
	ctx   context.Context
	stop  context.CancelCauseFunc
	who   ports.Principal
	ask   bool // prompts reach the client (AskClient on); else they settle closed
	askOn bool // AskClient is on (ask may still be false: a client that cannot be asked)
	wait  time.Duration
	// elicit, when set, takes the prompts instead (a 2025-11-25 task on a
	// stream that can answer forms: elicitation/create tagged with the task).
	elicit elicitFunc
	// wire, when set, tells a 2025-11-25 stream client of the task's
	// progress and status changes (tasks_legacy.go).
	wire *taskWire
	// settled is closed when the task reaches a terminal status.
	settled chan struct{}

	mu                      sync.Mutex
	status                  string
	message                 string // statusMessage: the newest step
	created, updated, ended time.Time
	outcome                 toolOutcome
	returned                bool        // the call's goroutine is done with it (finish)
	unnamed                 bool        // its creating answer was dropped (abandon): nobody can reach it
	open                    []taskInput // unanswered input requests, oldest first
	keys                    int         // input request keys minted so far
}

// taskInput is one input request: its key (unique over the task's life),
// the form, and where its answer goes.
type taskInput struct {
	key   string
	form  domain.Form
	reply chan json.RawMessage // capacity 1; nil sent when settled closed
	// elicited: asked through the stream's elicitation/create (a
	// 2025-11-25 task), answered there only; tasks/update ignores it as
	// an unknown key, or the task would read working while it waits.
	elicited bool
}

func (t *task) terminal() bool {
	switch t.status {
	case taskCompleted, taskFailed, taskCancelled:
		return true
	}
	return false
}

// running reports whether t has not ended (under the store's lock; t.mu
// guards status: t's goroutine settles it concurrently).
func (t *task) running() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.terminal()
}

// busy reports whether t holds a place under its principal's bound: it
// runs, or it was cancelled and its call has not returned yet (a session
// slow to notice cancellation), so cancelling and creating tasks cannot
// pile calls up (under the store's lock).
func (t *task) busy() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.terminal() || !t.returned
}

// expired reports whether t ended more than the TTL ago and its call has
// returned (under the store's lock; t.mu guards status and ended): until
// then it stays held, under the engine's bound.
func (t *task) expired(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.terminal() && t.returned && now.Sub(t.ended) >= t.ttl
}

// settle moves t to a terminal status once (later calls do nothing) and
// settles its open input requests closed.
func (t *task) settle(status string, o toolOutcome, message string) bool {
	t.mu.Lock()
	if t.terminal() {
		t.mu.Unlock()
		return false
	}
	now := t.store.now()
	t.status, t.outcome, t.updated, t.ended = status, o, now, now
	if message != "" {
		t.message = message
	}
	open := t.open
	t.open = nil
	t.mu.Unlock()
	t.wire.changed() // before tasks/result can answer
	close(t.settled)
	for _, in := range open {
		in.reply <- nil
	}
	return true
}

// cancelRunning cancels t unless it has ended already (false).
func (t *task) cancelRunning(cause error) bool {
	if !t.settle(taskCancelled, toolOutcome{}, "") {
		return false
	}
	t.stop(cause)
	return true
}

// finish records the call's outcome: completed with its CallToolResult
// (isError included: SEP-2663 reverses 2025-11-25 here), failed with a
// JSON-RPC error.
func (t *task) finish(o toolOutcome) {
	t.mu.Lock()
	t.returned = true
	unnamed := t.unnamed
	t.mu.Unlock()
	if unnamed {
		t.store.forget(t) // it counted until now (abandon)
	}
	if o.rerr != nil {
		t.settle(taskFailed, o, "")
		return
	}
	t.settle(taskCompleted, o, "")
}

// drop ends t, whose creating answer was dropped (abandon): nobody holds its
// id, so it is cancelled unseen, nobody can reach it from now on, and it
// is forgotten once its call has returned (until then it counts, like any
// cancelled task whose call still runs).
func (t *task) drop(cause error) {
	t.wire.silence()
	t.mu.Lock()
	t.unnamed = true
	returned := t.returned
	t.mu.Unlock()
	t.cancel(cause, "")
	if returned {
		t.store.forget(t)
	}
}

// reachable reports whether t can be named by its client (not dropped).
func (t *task) reachable() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.unnamed
}

// cancel ends t (tasks/cancel, Shutdown, its stream's end): it is cancelled
// at once and its context ends with cause, which reaches the model request
// and any running tool; the session's goroutine then returns, its outcome
// dropped.
func (t *task) cancel(cause error, message string) {
	t.settle(taskCancelled, toolOutcome{}, message)
	t.stop(cause)
}

// askClient raises one input request and waits for its answer, for the
// session giving up (ctx), the task ending, or the engine's round lifetime.
func (t *task) askClient(ctx context.Context, form domain.Form) json.RawMessage {
	if t.elicit != nil {
		return t.elicitClient(ctx, form)
	}
	if !t.ask {
		return nil
	}
	in := taskInput{form: form, reply: make(chan json.RawMessage, 1)}
	t.mu.Lock()
	if t.terminal() {
		t.mu.Unlock()
		return nil
	}
	t.keys++
	in.key = "input-" + strconv.Itoa(t.keys)
	t.open = append(t.open, in)
	t.status, t.updated = taskInputRequired, t.store.now()
	t.mu.Unlock()
	t.wire.changed()

	timer := time.NewTimer(t.wait)
	defer timer.Stop()
	var raw json.RawMessage
	select {
	case raw = <-in.reply:
	case <-ctx.Done():
	case <-t.ctx.Done():
	case <-timer.C:
	}
	t.withdraw(in.key)
	return raw
}

// elicitClient asks through the stream's elicitation/create, the task
// input_required meanwhile.
func (t *task) elicitClient(ctx context.Context, form domain.Form) json.RawMessage {
	t.mu.Lock()
	if t.terminal() {
		t.mu.Unlock()
		return nil
	}
	t.keys++
	key := "input-" + strconv.Itoa(t.keys)
	t.open = append(t.open, taskInput{key: key, form: form, reply: make(chan json.RawMessage, 1), elicited: true})
	t.status, t.updated = taskInputRequired, t.store.now()
	t.mu.Unlock()
	t.wire.changed()
	ctx, cancel := context.WithCancel(context.WithValue(ctx, relatedTaskKey{}, t.id))
	defer cancel()
	stop := context.AfterFunc(t.ctx, cancel)
	defer stop()
	raw := t.elicit(ctx, form)
	t.withdraw(key)
	return raw
}

// withdraw removes an input request that is still open (the session gave
// up on it); the task is working again when none is left.
func (t *task) withdraw(key string) {
	defer t.wire.changed()
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, in := range t.open {
		if in.key == key {
			t.open = append(t.open[:i], t.open[i+1:]...)
			if len(t.open) == 0 && t.status == taskInputRequired {
				t.status, t.updated = taskWorking, t.store.now()
			}
			return
		}
	}
}

// answer hands the responses to the open input requests they name;
// unknown or already-answered keys are ignored (SEP-2663 tasks/update).
func (t *task) answer(responses []jsonrpc.Member) {
	t.mu.Lock()
	var ready []taskInput
	var raws []json.RawMessage
	for _, m := range responses {
		for i, in := range t.open {
			if in.key == m.Name && !in.elicited {
				ready = append(ready, in)
				raws = append(raws, append(json.RawMessage(nil), m.Value...))
				t.open = append(t.open[:i], t.open[i+1:]...)
				break
			}
		}
	}
	if len(ready) > 0 && len(t.open) == 0 && t.status == taskInputRequired {
		t.status, t.updated = taskWorking, t.store.now()
	}
	t.mu.Unlock()
	t.wire.changed()
	for i, in := range ready {
		in.reply <- raws[i]
	}
}

// progress keeps the newest step's message as statusMessage: progress is
// not carried on 2026 tasks (SEP-2663).
func (t *task) progress(message string) {
	if message == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.terminal() {
		t.message, t.updated = message, t.store.now()
	}
}

// taskCaller is the Caller a task's session sees: prompts become input
// requests (AskClient on) or settle closed, progress becomes statusMessage.
type taskCaller struct{ t *task }

var _ ports.Caller = taskCaller{}

func (c taskCaller) RequestPermission(ctx context.Context, p domain.PermissionPrompt) domain.Decision {
	return decide(c.t.askClient(ctx, domain.PermissionForm(p)))
}

func (c taskCaller) Ask(ctx context.Context, p domain.AskPrompt) domain.Answer {
	form, ok := domain.AskForm(p)
	if !ok {
		return domain.Answer{}
	}
	return answerOf(p, c.t.askClient(ctx, form))
}

func (c taskCaller) Progress(ctx context.Context, progress, total float64, message string) {
	c.t.progress(message)
	c.t.wire.progress(ctx, progress, total, message)
}

func (c taskCaller) Principal() ports.Principal { return c.t.who }

// Asking reports where the task's prompts go (ports.AskingOf).
func (c taskCaller) Asking() ports.Asking { return c.t.asking() }

// asking is where the task's prompts go: its input requests (or a
// 2025-11-25 stream's elicitation), or nowhere.
func (t *task) asking() ports.Asking { return asking(t.elicit != nil || t.ask, t.askOn) }

// StartTask reports true: the call is a task already.
func (c taskCaller) StartTask(context.Context) bool { return true }

var _ ports.TaskStarter = taskCaller{}

// declaresTasks reports whether a request's client capabilities declare the
// extension: "extensions":{"io.modelcontextprotocol/tasks":{…}}.
func declaresTasks(caps []byte) bool {
	if !jsonrpc.IsObject(caps) {
		return false
	}
	ext, ok := jsonrpc.Lookup(mustMembers(caps), "extensions")
	if !ok || !jsonrpc.IsObject(ext) {
		return false
	}
	v, ok := jsonrpc.Lookup(mustMembers(ext), extTasks)
	return ok && jsonrpc.IsObject(v)
}

func errTasksNotDeclared(what string) *Error {
	return &Error{Code: CodeMissingRequiredCapability, Message: what + " requires the " + extTasks + " extension", Data: missingTasksData}
}

var missingTasksData = json.RawMessage(`{"requiredCapabilities":{"extensions":{"` + extTasks + `":{}}}}`)

// callAsTask is the tools/call hook: for a modern call of a tool that
// supports tasks it answers (a CreateTaskResult, or -32021 when the tool
// requires tasks and the request did not declare them) and reports true;
// otherwise the call is served as before. A declared request always gets a
// task: a client that declared the extension already polls, and a
// short-wait shortcut would make the answer's shape depend on timing
// (docs/SPEC.md §14).
func (e *Engine) callAsTask(p *peer, in *inbound, cat *domain.Catalog, name string, args []byte) (reply, bool) {
	if cat == nil {
		return reply{}, false // the catalog failed: the plain path answers
	}
	support := cat.TaskSupport(name)
	if support == domain.TaskForbidden || support == "" {
		return reply{}, false
	}
	if !declaresTasks(in.clientCaps()) {
		if support == domain.TaskRequired {
			return answerErr(in.id, errTasksNotDeclared("Tool "+name)), true
		}
		return reply{}, false
	}
	if cat.TaskStartsInRequest(name) {
		return reply{}, false // the session decides when it becomes a task (callWithRounds, callInRequest)
	}
	return e.startTask(p, in, name, args, nil, func(t *task) reply { return e.taskCreated(in, t) }), true
}

// taskCreated is the flat CreateTaskResult answering in (SEP-2663): the
// task as it was created (appendCreated), no requestState, no
// inputRequests.
func (e *Engine) taskCreated(in *inbound, t *task) reply {
	in.task = t
	return answered(e.resultTail(appendCreated(e.resultHead(make([]byte, 0, 320), in, "task"), t), in))
}

// newTask returns a task not yet stored, on the call's context ctx (stop
// ends it). Its prompts become input requests when asking is on;
// legacyTask.attach gives a 2025-11-25 task its elicitation instead.
func (e *Engine) newTask(bind string, who ports.Principal, ctx context.Context, stop context.CancelCauseFunc) *task {
	return &task{bind: bind, store: e.tasks, ctx: ctx, stop: stop, who: who,
		ask: e.rounds != nil, askOn: e.rounds != nil, wait: e.roundLifetime, settled: make(chan struct{})}
}

// startTask stores a task for the call and starts it, and returns the
// creating answer, which created renders before the call starts (its status
// is always working). legacy (nil on 2026-07-28) brings a 2025-11-25
// call's TTL, elicitation and stream notifications. When the engine stops
// or a bound is reached it returns the refusal instead.
func (e *Engine) startTask(p *peer, in *inbound, name string, args []byte, legacy *legacyTask, created func(*task) reply) reply {
	if e.isStopping() {
		return e.callResult(in, errShutdownResult)
	}
	ctx2, stop := context.WithCancelCause(e.base)
	t := e.newTask(p.carrier.binding(), p.principal, ctx2, stop)
	t.ask = t.ask && in.modern
	legacy.attach(t)
	if msg, ok := e.tasks.add(t); !ok {
		stop(nil)
		return e.callResult(in, toolError(msg))
	}
	r := created(t)
	args = append([]byte(nil), args...) // the request's buffer does not outlive it
	if !e.goCall(func() {
		defer stop(nil)
		t.finish(e.runTool(ctx2, taskCaller{t}, name, args))
	}) {
		t.cancel(ErrShuttingDown, ErrShuttingDown.Error())
		t.finish(toolOutcome{}) // no call ran: it returned (the status stays cancelled)
	}
	return r
}

// appendTask appends a Task's members (no braces, no leading comma) as it is
// now; appendDetail then adds what its status carries (tasks/get).
func (e *Engine) appendTask(b []byte, t *task) []byte {
	t.mu.Lock()
	status, message, updated := t.status, t.message, t.updated
	t.mu.Unlock()
	return appendTaskMembers(b, t, status, message, updated)
}

// appendCreated appends a Task's members as the task was when it was
// created: working, no statusMessage, lastUpdatedAt its createdAt. A
// CreateTaskResult shows that, whatever the call did since (a call that
// became a task in its request goes on at once: docs/SPEC.md §14), so its
// shape never depends on timing.
func appendCreated(b []byte, t *task) []byte {
	return appendTaskMembers(b, t, taskWorking, "", t.created)
}

// appendTaskMembers appends the members of t with the given state (t.id
// and t.created never change once it is stored).
func appendTaskMembers(b []byte, t *task, status, message string, updated time.Time) []byte {
	b = jsonrpc.AppendString(append(b, `"taskId":`...), t.id)
	b = jsonrpc.AppendString(append(b, `,"status":`...), status)
	if message != "" {
		b = jsonrpc.AppendString(append(b, `,"statusMessage":`...), message)
	}
	b = jsonrpc.AppendString(append(b, `,"createdAt":`...), t.created.UTC().Format(time.RFC3339Nano))
	b = jsonrpc.AppendString(append(b, `,"lastUpdatedAt":`...), updated.UTC().Format(time.RFC3339Nano))
	b = strconv.AppendInt(append(b, `,"ttlMs":`...), t.ttl.Milliseconds(), 10)
	return strconv.AppendInt(append(b, `,"pollIntervalMs":`...), t.store.poll.Milliseconds(), 10)
}

// appendDetail appends what a DetailedTask's status carries.
func appendDetail(b []byte, t *task) []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch t.status {
	case taskInputRequired:
		b = append(b, `,"inputRequests":{`...)
		for i, in := range t.open {
			if i > 0 {
				b = append(b, ',')
			}
			params, _ := domain.MarshalJSON(elicitParms{Mode: "form", Message: in.form.Message, RequestedSchema: in.form.RequestedSchema})
			b = jsonrpc.AppendString(b, in.key)
			b = append(append(append(b, `:{"method":"elicitation/create","params":`...), params...), '}')
		}
		b = append(b, '}')
	case taskCompleted:
		b = append(t.outcome.appendTo(append(b, `,"result":{`...)), '}')
	case taskFailed:
		obj, _ := json.Marshal(t.outcome.rerr) // code, message, data: the JSON-RPC error the call would have answered
		b = append(append(b, `,"error":`...), obj...)
	}
	return b
}

var (
	errTaskNotFound = jsonrpc.NewError(CodeInvalidParams, "Failed to retrieve task: Task not found")
)

// serveTask answers tasks/get, tasks/update and tasks/cancel (modern only;
// the headers were checked in validateModern).
func (e *Engine) serveTask(p *peer, in *inbound) reply {
	if caps, _ := in.metaValue(metaClientCapabilities); !declaresTasks(caps) {
		// SEP-2575 "Missing Required Capabilities": the task surface is
		// the extension's, served only to requests that declare it.
		return answerErr(in.id, errTasksNotDeclared(in.method))
	}
	t, terr := e.taskOf(p, in)
	if terr != nil {
		return answerErr(in.id, terr)
	}
	switch in.method {
	case "tasks/update":
		if r, ok := in.param("inputResponses"); !ok || !jsonrpc.IsObject(r) {
			return answerErr(in.id, jsonrpc.InvalidParams("tasks/update needs an inputResponses object"))
		}
		r, rerr := inputResponses(in)
		if rerr != nil {
			return answerErr(in.id, rerr)
		}
		t.answer(r)
	case "tasks/cancel":
		t.cancelRunning(errTaskCancelled)
	default: // tasks/get
		b := e.appendTask(e.resultHead(make([]byte, 0, 512), in, "complete"), t)
		return answered(e.resultTail(appendDetail(b, t), in))
	}
	b := e.resultHead(make([]byte, 0, 160), in, "complete")
	return answered(e.resultTail(trimComma(b), in))
}

// taskOf finds the task params.taskId names for the sender: -32602 when
// taskId is missing or not a string, or the task is unknown, expired or
// another's (alike).
func (e *Engine) taskOf(p *peer, in *inbound) (*task, *Error) {
	raw, ok := in.param("taskId")
	if !ok || !jsonrpc.IsString(raw) {
		return nil, jsonrpc.InvalidParams(in.method + " needs a string taskId")
	}
	t := e.tasks.get(jsonrpc.Unquote(raw), p.carrier.binding())
	if t == nil {
		return nil, errTaskNotFound
	}
	return t, nil
}

// trimComma drops the comma resultHead leaves after resultType, for a
// result with no other members.
func trimComma(b []byte) []byte { return b[:len(b)-1] }

// endTasks cancels the running tasks bound to bind (a stream that ended:
// nobody can reach them again).
func (e *Engine) endTasks(bind string) {
	for _, t := range e.tasks.all(func(t *task) bool { return t.bind == bind }) {
		t.cancel(errTaskStream, "")
	}
}

// shutdownTasks cancels every running task (Engine.Shutdown): each settles
// cancelled with the message "server is shutting down".
func (e *Engine) shutdownTasks() {
	for _, t := range e.tasks.all(func(*task) bool { return true }) {
		t.cancel(ErrShuttingDown, ErrShuttingDown.Error())
	}
}

// isTaskMethod reports whether method is one the extension adds.
func isTaskMethod(method string) bool {
	switch method {
	case "tasks/get", "tasks/update", "tasks/cancel":
		return true
	}
	return false
}
