package engine

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/jsonrpc"
	"github.com/agentmcp/agentmcp/ports"
)

// A call's life (docs/ARCHITECTURE.md "A call's life"). A tools/call is one
// call from accept to its last byte (jsonrpc2_v2's incomingRequest and
// AsyncCall in one): what it becomes — plain, under input-required rounds,
// a task — is decided once (callMode), and how a client reaches it is how
// it is named: by its request (in flight), by a round's requestState, by a
// task id (the index). Its state is one struct changed only through
// update, which also does what follows from a change. The call is its
// session's Caller, too: one Caller, which routes a prompt by how the call
// is named and by what the creating request declared.
type call struct {
	e *Engine
	// owner is who the call is bound to; its principal is what the
	// session's Caller reports.
	owner owner
	mode  mode
	// asks is where its prompts go, fixed when it is created from what the
	// creating request (or the stream's initialize) declared.
	asks asking
	// taskable: the tool supports tasks and starts in its request, so the
	// session may turn the call into a task (StartTask).
	taskable bool
	elicit   elicitFunc // asks == askStream: a legacy stream's elicitation/create
	// wire, when set, is a 2025-11-25 stream task's notifications.
	wire *taskWire
	// own is the progress of the call's own request (a plain call's), or a
	// 2025-11-25 task's under its creating token; nil: none.
	own *reporter

	ctx    context.Context // ends with cancel, or the engine's Shutdown
	cancel context.CancelCauseFunc

	// Set for a call that outlives its request (newCall).
	wake     chan struct{} // capacity 1: "the state changed", sent without blocking
	done     chan struct{} // closed when the session has returned
	turn     chan struct{} // capacity 1: one round prompt at a time
	settled  chan struct{} // closed when a task reaches a terminal status
	deadline *time.Timer   // a parked round's expiry: the round lifetime from its last park

	// Its request name in the index (requests, under its lock), the
	// JSON-RPC id's key under its owner: a legacy HTTP call in flight, or a
	// stream's parked call's latest request.
	reqID   string
	named   bool
	sameKey *call // the next call with the same name

	// A task's identity, set before it is visible (index.addTask); fixed.
	id      string
	seq     uint64
	ttl     time.Duration
	created time.Time

	// On a shared store (shared.go): ref names the call in its rounds'
	// records (set at its first park, under the names' lock), and
	// elsewhere, when set, says this is a view of a call another replica
	// runs (a task's record, a round taken here): what is done to it is
	// sent there.
	ref       string
	elsewhere string

	mu sync.Mutex // guards s
	s  callState
}

// callState is everything about a call that changes, changed only in
// update.
type callState struct {
	// waiter is the request waiting for the call now (its progress goes
	// there); nil: none. waiterTasks: that request declared the tasks
	// extension (StartTask answers it a CreateTaskResult).
	waiter      *reporter
	waiterTasks bool
	task        bool // named by its task id
	// unnamed: the answer that named it (a round's token, a task's id) was
	// dropped; nobody can reach it.
	unnamed bool
	// cancelled: a notifications/cancelled named its request (a plain
	// call): nothing is written for it.
	cancelled bool
	ended     error // why it was ended (nil: it runs): prompts settle closed from now on
	returned  bool  // the session has returned with outcome
	outcome   toolOutcome
	// A task's status (taskWorking … taskCancelled), the newest progress
	// message, its last change and its end.
	status           string
	message          string
	updated, endedAt time.Time
	inputs           []*input // open prompts, oldest first
	keys             int      // task input keys minted so far
}

// mode is what a tools/call becomes (callMode).
type mode uint8

const (
	modePlain      mode = iota // served in its request
	modeRounds                 // its prompts are input-required rounds (2026-07-28)
	modeInRequest              // served in its request until the session makes it a task
	modeTask                   // a 2026-07-28 task from the start
	modeLegacyTask             // a 2025-11-25 task (params.task)
	modeRefuse                 // answered with an error; nothing runs
)

// asking is where a call's prompts go (docs/SPEC.md §6, §14).
type asking uint8

const (
	askNone   asking = iota // they settle closed at once
	askStream               // a legacy stream's elicitation/create
	askForms                // input requests: a round's, or a task's once it is one
)

// input is one prompt awaiting its client's answer: a round's (answered
// by a retry), a task's (answered by tasks/update) or one asked through a
// stream's elicitation/create (answered there).
type input struct {
	c     *call
	key   string // "prompt" for a round, "input-<n>" for a task
	form  domain.Form
	reply chan json.RawMessage // capacity 1: the ElicitResult, or nil when settled closed
	round bool                 // a round's prompt
	shown bool                 // (round) handed to a request: a token names it
	// elicited: asked through the stream's elicitation/create (a
	// 2025-11-25 task), answered there only; tasks/update ignores its key,
	// or the task would read working while it waits.
	elicited bool
}

// Task statuses (SEP-2663 TaskStatus).
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

func terminal(status string) bool {
	return status == taskCompleted || status == taskFailed || status == taskCancelled
}

// newCall returns a call that outlives its request (rounds, in-request,
// a task of either era): on a context of its own that keeps the
// Observer's values of req (a tracer's spans nest under the request that
// started it, docs/SPEC.md §13) and ends only with its cancel or the
// engine's Shutdown. The one constructor of such a call.
func (e *Engine) newCall(req context.Context, p *peer, m mode, asks asking) *call {
	c := &call{e: e, owner: p.origin.owner(), mode: m, asks: asks,
		wake: make(chan struct{}, 1), done: make(chan struct{}), turn: make(chan struct{}, 1), settled: make(chan struct{})}
	c.ctx, c.cancel = e.callContext(req)
	return c
}

// start runs the session's call on a goroutine of the engine's; the
// arguments are copied (the request's buffer does not outlive it). When
// the engine has stopped the call ends before it starts.
func (c *call) start(name string, args []byte) {
	args = append([]byte(nil), args...)
	if !c.e.goCall(func() { c.returns(c.e.runTool(c.ctx, c, name, args)) }) {
		c.stop(ErrShuttingDown, ErrShuttingDown.Error())
		c.returns(errShutdownResult)
	}
}

// returns records the session's outcome: the call has returned. A task
// that was cancelled keeps no result.
func (c *call) returns(o toolOutcome) {
	c.update(func(s *callState) {
		s.returned = true
		if !s.task || !terminal(s.status) {
			s.outcome = o
		}
	})
	close(c.done)
}

// update applies f to the call's state under its lock, then does what the
// new state says (jsonrpc2_v2's updateInFlight): an ended or returned call
// settles its open prompts closed and ends its context; a task's status
// follows (input_required while an input is open, terminal once it ended
// or returned) and a 2025-11-25 stream is told of each change; the waiter
// is woken; and the index forgets what nobody can reach any more, counts a
// kept result's bytes, and drops the names of an ended round.
func (c *call) update(f func(*callState)) {
	c.mu.Lock()
	before := c.s
	s := &c.s
	f(s)
	var settle []*input
	if s.ended != nil || s.returned {
		settle, s.inputs = s.inputs, nil
	}
	if s.task {
		status := s.status
		switch {
		case terminal(status):
		case s.ended != nil:
			status = taskCancelled
		case s.returned && s.outcome.rerr != nil:
			status = taskFailed
		case s.returned:
			status = taskCompleted
		case openTaskInput(s.inputs):
			status = taskInputRequired
		default:
			status = taskWorking
		}
		switch {
		case !before.task:
			s.updated = c.created // a task starts as it was created
		case status != s.status || s.message != before.message:
			s.updated = time.Now()
		}
		if terminal(status) && !terminal(s.status) {
			s.endedAt = s.updated
		}
		s.status = status
	}
	after := *s
	c.mu.Unlock()

	for _, in := range settle {
		in.reply <- nil
	}
	if after.ended != nil && before.ended == nil {
		c.cancel(after.ended)
	}
	if after.task != before.task || after.returned != before.returned || len(after.inputs) > len(before.inputs) || after.ended != before.ended {
		c.signal()
	}
	if after.task && before.task && (after.status != before.status || after.message != before.message || !sameInputs(after.inputs, before.inputs)) {
		c.e.index.changed(c) // a shared store's record follows
	}
	if after.status != before.status {
		c.wire.changed(c)
		if terminal(after.status) {
			close(c.settled) // after the status notification: tasks/result answers next
		}
	}
	switch {
	case after.ended != nil && before.ended == nil && !after.task:
		c.e.index.unpark(c) // nobody can resume an ended round
	case after.task && after.returned && (!before.returned || after.unnamed && !before.unnamed):
		c.e.index.returned(c, c.e.isStopping()) // its result is kept, or it is forgotten
	}
}

// sameInputs reports whether a and b are the same open inputs.
func sameInputs(a, b []*input) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// openTaskInput reports whether one of inputs is a task's input request
// (a round's prompt belongs to the rounds).
func openTaskInput(inputs []*input) bool {
	for _, in := range inputs {
		if !in.round {
			return true
		}
	}
	return false
}

// signal wakes the request waiting for the call, if any; a wake nobody
// takes stays for the next request, which re-reads the state anyway.
func (c *call) signal() {
	if c.wake == nil {
		return
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// leave ends the call because the client side of it is gone — the
// request waiting for it ended, its round expired or was evicted, its
// chain's latest id was cancelled, the answer naming its round was
// dropped — and reports true; a call that is a task is left alone (false):
// only tasks/cancel, the server stopping, a dropped creation or its
// stream's end end a task (docs/SPEC.md §14), never a request of the
// chain that started it.
func (c *call) leave(cause error) (ended bool) {
	c.update(func(s *callState) {
		if s.task || s.ended != nil {
			return
		}
		s.ended, ended = cause, true
	})
	return ended
}

// stop ends the call whatever names it (tasks/cancel, Shutdown, its
// stream's end, a dropped creation): a task is cancelled at once with
// message as its statusMessage (kept when empty). It reports false when
// the call had ended already, or returned.
func (c *call) stop(cause error, message string) (stopped bool) {
	c.update(func(s *callState) {
		if s.ended != nil || terminal(s.status) || s.returned {
			return
		}
		s.ended, stopped = cause, true
		if message != "" {
			s.message = message
		}
	})
	return stopped
}

// drop ends a call whose naming answer was dropped (abandon): nobody holds
// its token or id, so nobody can reach it from now on; a task is
// cancelled unseen (its wire silenced first) and forgotten once its call
// has returned, a round's call ends like any left call.
func (c *call) drop(cause error) {
	c.wire.silence()
	c.update(func(s *callState) {
		s.unnamed = true
		if s.ended == nil && !s.returned && !terminal(s.status) {
			s.ended = cause
		}
	})
}

// ask raises one prompt where the call's prompts go (its one Caller) and
// waits for its answer: nil when it settles closed, the session gives up
// (ctx), the call ends, or a task's input waits longer than the round
// lifetime. It never blocks on the request side: the prompt is state, and
// a request picks it up when one waits.
func (c *call) ask(ctx context.Context, form domain.Form) json.RawMessage {
	switch c.asks {
	case askStream:
		return c.askStream(ctx, form)
	case askForms:
		return c.askForm(ctx, form)
	}
	return nil
}

// askForm raises an input request: a task's (input-<n>, shown by
// tasks/get) once the call is one, else a round's (one at a time, parked
// by the request waiting for the call).
func (c *call) askForm(ctx context.Context, form domain.Form) json.RawMessage {
	c.mu.Lock()
	task := c.s.task
	c.mu.Unlock()
	if !task {
		select { // one round prompt at a time
		case c.turn <- struct{}{}:
		case <-ctx.Done():
			return nil
		case <-c.ctx.Done():
			return nil
		}
		defer func() { <-c.turn }()
	}
	in := &input{c: c, form: form, reply: make(chan json.RawMessage, 1)}
	open := false
	c.update(func(s *callState) {
		if s.ended != nil || s.returned {
			return
		}
		if s.task { // it may have become a task while this prompt waited its turn
			s.keys++
			in.key = "input-" + strconv.Itoa(s.keys)
		} else {
			in.key, in.round = promptKey, true
		}
		s.inputs = append(s.inputs, in)
		open = true
	})
	if !open {
		return nil
	}
	var expiry <-chan time.Time
	if !in.round { // a round's expiry is the call's deadline
		t := time.NewTimer(c.e.roundLifetime)
		defer t.Stop()
		expiry = t.C
	}
	var raw json.RawMessage
	select {
	case raw = <-in.reply:
	case <-ctx.Done():
	case <-c.ctx.Done():
	case <-expiry:
	}
	c.withdraw(in)
	return raw
}

// askStream asks through the stream's elicitation/create; a task is
// input_required meanwhile, and its prompt carries the related task.
func (c *call) askStream(ctx context.Context, form domain.Form) json.RawMessage {
	in := &input{c: c, form: form, reply: make(chan json.RawMessage, 1), elicited: true}
	open := false
	c.update(func(s *callState) {
		if s.ended != nil || s.returned {
			return
		}
		if s.task {
			s.keys++
			in.key = "input-" + strconv.Itoa(s.keys)
			s.inputs = append(s.inputs, in)
		}
		open = true
	})
	if !open {
		return nil
	}
	if !c.wire.await(ctx) { // a task's prompt waits for the answer naming it
		c.withdraw(in)
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	raw := c.elicit(ctx, form, c.id)
	c.withdraw(in)
	return raw
}

// withdraw removes an input that is still open (answered, or the session
// gave up on it).
func (c *call) withdraw(in *input) {
	c.update(func(s *callState) { s.inputs = without(s.inputs, in) })
}

func without(inputs []*input, in *input) []*input {
	for i, x := range inputs {
		if x == in {
			return append(inputs[:i:i], inputs[i+1:]...)
		}
	}
	return inputs
}

// answer hands raw to in when the session still waits on it; an answer to
// an input already answered, withdrawn or settled is dropped.
func (c *call) answer(in *input, raw json.RawMessage) {
	open := false
	c.update(func(s *callState) {
		n := len(s.inputs)
		s.inputs = without(s.inputs, in)
		open = len(s.inputs) < n
	})
	if open {
		in.reply <- raw
	}
}

// answerTask hands each response to the open task input request it
// names; unknown, answered and elicited keys are ignored (SEP-2663
// tasks/update).
func (c *call) answerTask(responses []jsonrpc.Member) {
	var ready []*input
	var raws []json.RawMessage
	c.update(func(s *callState) {
		for _, m := range responses {
			for _, in := range s.inputs {
				if in.key == m.Name && !in.round && !in.elicited {
					ready = append(ready, in)
					raws = append(raws, append(json.RawMessage(nil), m.Value...))
					s.inputs = without(s.inputs, in)
					break
				}
			}
		}
	})
	for i, in := range ready {
		in.reply <- raws[i]
	}
}

// startTask turns a call that starts in its request into a task
// (ports.TaskStarter): only while a request that declared the tasks
// extension waits for it, so that request answers the CreateTaskResult.
// Its context is the call's: tasks/cancel, Shutdown and its stream's end
// cancel it. A round prompt no request has shown yet settles closed (it
// belonged to the rounds); one already shown stays answerable by its
// token.
func (c *call) startTask() bool {
	c.mu.Lock()
	s := c.s
	c.mu.Unlock()
	switch {
	case s.task:
		return true
	case !c.taskable || s.ended != nil || s.returned || s.waiter == nil || !s.waiterTasks || c.e.isStopping():
		return false
	}
	if _, ok := c.e.index.addTask(c.ctx, c); !ok {
		return false // a bound is reached: the call goes on in its request
	}
	var unshown []*input
	named := false
	c.update(func(s *callState) {
		if s.ended != nil || s.returned { // it ended meanwhile
			return
		}
		s.task, named = true, true
		for _, in := range s.inputs {
			if in.round && !in.shown {
				unshown = append(unshown, in)
			}
		}
	})
	if !named {
		c.e.index.forget(c)
		return false
	}
	for _, in := range unshown {
		c.answer(in, nil)
	}
	return true
}

var (
	_ ports.Caller      = (*call)(nil)
	_ ports.TaskStarter = (*call)(nil)
)

func (c *call) RequestPermission(ctx context.Context, p domain.PermissionPrompt) domain.Decision {
	return decide(c.ask(ctx, domain.PermissionForm(p)))
}

func (c *call) Ask(ctx context.Context, p domain.AskPrompt) domain.Answer {
	form, ok := domain.AskForm(p)
	if !ok {
		return domain.Answer{}
	}
	return answerOf(p, c.ask(ctx, form))
}

func (c *call) Principal() ports.Principal { return c.owner.principal }

// Asking reports where the call's prompts go (ports.AskingOf): to the
// client when its call can ask it; else nowhere, because asking is off
// (AskClient) or because this client cannot be asked.
func (c *call) Asking() ports.Asking {
	switch {
	case c.asks != askNone:
		return ports.AskingClient
	case c.e.askClient:
		return ports.AskingUnable
	}
	return ports.AskingOff
}

// StartTask implements ports.TaskStarter (startTask); a task reports true,
// a plain call false.
func (c *call) StartTask(context.Context) bool {
	if c.mode == modeTask || c.mode == modeLegacyTask {
		return true
	}
	return c.startTask()
}

// Progress goes where the call is: a task keeps the newest message as its
// statusMessage (and a 2025-11-25 stream task sends it under its creating
// token too); otherwise it goes to the request waiting for the call, as
// notifications/progress when that request asked for them.
func (c *call) Progress(ctx context.Context, progress, total float64, message string) {
	var to *reporter
	c.update(func(s *callState) {
		switch {
		case s.task:
			if message != "" && !terminal(s.status) {
				s.message = message
			}
			to = c.own // a 2025-11-25 stream task's creating token
		default:
			to = s.waiter
		}
	})
	to.progress(ctx, progress, total, message)
}

// reporter sends one request's notifications/progress under its
// progressToken, only while the request is in flight and only when it
// increases (MCP: progress MUST increase with each notification).
type reporter struct {
	token  []byte // nil: the request asked for no progress
	notify func(msg []byte)
	meta   []byte // the _meta of its notifications; nil: none (a 2025-11-25 task's: the related task)

	mu   sync.Mutex // guards done, sent, last; held while a notification is written
	done bool
	sent bool
	last float64
}

// setToken arms r with the progressToken of a request whose notify is
// set; a token that is not a string or an integer is none (MCP's
// ProgressToken).
func (r *reporter) setToken(in *inbound, notify func([]byte)) {
	r.notify = notify
	if tok, ok := in.metaValue(metaProgressToken); ok && notify != nil && validProgressToken(tok) {
		r.token = tok
	}
}

func validProgressToken(tok []byte) bool {
	_, ok := jsonrpc.ParseID(tok)
	return ok
}

func (r *reporter) progress(ctx context.Context, progress, total float64, message string) {
	if r == nil || r.token == nil || ctx.Err() != nil {
		return
	}
	if math.IsNaN(progress) || math.IsInf(progress, 0) || math.IsNaN(total) || math.IsInf(total, 0) {
		return // not JSON numbers
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done || (r.sent && progress <= r.last) {
		return
	}
	r.sent, r.last = true, progress
	r.notify(progressNotification(r.token, progress, total, message, r.meta))
}

// finish ends the reporter: nothing for its request follows its answer.
func (r *reporter) finish() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.done = true
	r.mu.Unlock()
}

// progressNotification encodes notifications/progress; total ≤ 0 (unknown),
// an empty message and a nil meta (params._meta) are left out.
func progressNotification(token []byte, progress, total float64, message string, meta []byte) []byte {
	b := append([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`), token...)
	b = jsonrpc.AppendFloat(append(b, `,"progress":`...), progress)
	if total > 0 {
		b = jsonrpc.AppendFloat(append(b, `,"total":`...), total)
	}
	if message != "" {
		b = jsonrpc.AppendString(append(b, `,"message":`...), message)
	}
	if meta != nil {
		b = append(append(b, `,"_meta":`...), meta...)
	}
	return append(b, "}}"...)
}

// decide maps a raw ElicitResult (nil: settled closed) to a decision.
func decide(raw json.RawMessage) domain.Decision {
	if raw == nil {
		return domain.Deny
	}
	r, ok := domain.ParseElicitResult(raw)
	if !ok {
		return domain.Deny
	}
	return domain.PermissionDecision(r)
}

func answerOf(p domain.AskPrompt, raw json.RawMessage) domain.Answer {
	if raw == nil {
		return domain.Answer{}
	}
	r, ok := domain.ParseElicitResult(raw)
	if !ok {
		return domain.Answer{}
	}
	return domain.AskAnswer(p, r)
}

// withinSubmission is the Caller a submission hands its session: its
// permission prompts say that the agent asks, within the submission the
// person started (domain.PermissionPrompt.Within), so an agent's write never
// reads like a client's own call of the tool (docs/SPEC.md §6 "Forms").
type withinSubmission struct {
	ports.Caller
	submitName string
}

// StartTask forwards to the submission's Caller: a submission that is a
// task already reports true.
func (w withinSubmission) StartTask(ctx context.Context) bool {
	return ports.StartTask(ctx, w.Caller)
}

// Asking forwards to the submission's Caller.
func (w withinSubmission) Asking() ports.Asking { return ports.AskingOf(w.Caller) }

func (w withinSubmission) RequestPermission(ctx context.Context, p domain.PermissionPrompt) domain.Decision {
	p.Within = w.submitName
	return w.Caller.RequestPermission(ctx, p)
}
