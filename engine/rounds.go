package engine

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"github.com/agentmcp/agentmcp/internal/jsonrpc"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// Input-required rounds (docs/SPEC.md §6; MCP 2026-07-28 "Multi round-trip
// requests"). With AskClient on, a modern tools/call from a client that
// declared form elicitation runs in its own goroutine, on a context of its
// own under the engine's. The request waits for one of two things: the call
// finishes (the answer is complete) or the call raises a prompt through its
// Caller (the round is parked under a fresh single-use requestState and the
// answer is input_required, while the call stays blocked inside the
// prompt). The retry resumes the parked round, hands the answer to the
// blocked prompt and waits again.
//
// A parked call is still its client's call: while a request waits for it,
// that request going away (an HTTP client leaving, a notifications/cancelled
// naming it) ends the call; while it is parked, expiry, a notifications/
// cancelled naming the chain's latest id (streams), the request that parked
// it losing its answer (abandon), the end of the stream that minted it,
// eviction by a newer round of the same principal and Shutdown end it.
// Expiry is the call's deadline: the round lifetime from its last park.
// Ending a call settles its prompts closed and cancels its context, so it
// always finishes and its goroutine always ends; a request that ended it
// waits for that goroutine, so the call counts against its carrier's
// in-flight bound until it has returned.

// promptKey is the one key under which a round's input request travels.
const promptKey = "prompt"

// roundStore is the engine's parked rounds: the domain store of bindings
// and tokens, plus one expiry timer per round.
type roundStore struct {
	*domain.Rounds[*parked]
}

func newRoundStore(lifetime time.Duration) *roundStore {
	return &roundStore{domain.NewRounds[*parked](lifetime, rand.Reader)}
}

func (s *roundStore) lifetime() time.Duration { return s.Rounds.Lifetime() }

// drain removes every round and stops its timer.
func (s *roundStore) drain() []*parked { return stopTimers(s.Rounds.Drain()) }

// removeIf removes the rounds match selects and stops their timers.
func (s *roundStore) removeIf(match func(*parked) bool) []*parked {
	return stopTimers(s.Rounds.RemoveIf(match))
}

func stopTimers(ps []*parked) []*parked {
	for _, p := range ps {
		p.timer.Stop()
	}
	return ps
}

// parked is what the round store keeps: the call, the prompt its token
// was minted for, the binding's connection or principal, and the call's
// expiry timer (the call-level deadline, from its last park).
type parked struct {
	call   *parkedCall
	prompt *roundPrompt
	bind   string
	timer  *time.Timer
}

// parkedCall is one tools/call running under rounds. Its state lives under
// mu and changes in three places only: the session raising a prompt (ask),
// the call returning (run in startParked), and the call ending (end). Each
// change is followed by a non-blocking send on wake, and the one request
// waiting for the call (awaitRound) re-reads the state after every wake, so
// neither side ever blocks on the other: a session may ask any number of
// prompts on any context, whether or not a request is waiting.
type parkedCall struct {
	ctx    context.Context // the call's own, under the engine's
	cancel context.CancelCauseFunc
	who    ports.Principal
	e      *Engine
	bind   string // the carrier's binding (rounds, and the task it may become)
	// taskable: the tool supports tasks and starts in its request
	// (domain.Tool.TaskStartsInRequest), so the session may turn the call
	// into a task (startTask). rounds: prompts before that are
	// input-required rounds; false settles them closed (asking is off, or
	// the client cannot answer forms).
	taskable, rounds bool

	wake chan struct{} // capacity 1: "the state changed", sent without blocking
	done chan struct{} // closed when the session call has returned
	turn chan struct{} // capacity 1: one prompt at a time

	mu       sync.Mutex   // guards the fields below
	over     bool         // ended: prompts settle closed from now on
	current  *roundPrompt // the prompt the session waits on; nil: none
	shown    bool         // current was handed to a request (parked)
	finished bool         // the call returned with outcome
	outcome  toolOutcome
	waiter   *callCaller // the request waiting now (progress goes to it)
	// task is the task the call became (startTask); from then on its
	// prompts, progress and outcome are the task's, and nothing but the
	// task's own ending ends the call.
	task *task
}

type roundPrompt struct {
	form  domain.Form
	once  sync.Once
	reply chan json.RawMessage // the ElicitResult, or nil when settled closed
}

func (p *roundPrompt) answer(raw json.RawMessage) { p.once.Do(func() { p.reply <- raw }) }

// signal wakes the request waiting for the call, if any; a wake nobody
// takes stays for the next request, which re-reads the state anyway.
func (pc *parkedCall) signal() {
	select {
	case pc.wake <- struct{}{}:
	default:
	}
}

// end settles the call's prompts closed from now on and cancels it with
// cause, and reports true; a call that became a task is left alone (false):
// only tasks/cancel, the server stopping or its stream's end end a task
// (docs/SPEC.md §14), never a request of the chain that started it.
func (pc *parkedCall) end(cause error) bool {
	pc.mu.Lock()
	if pc.task != nil {
		pc.mu.Unlock()
		return false
	}
	pc.over = true
	cur := pc.current
	pc.mu.Unlock()
	if cur != nil {
		cur.answer(nil)
	}
	pc.cancel(cause)
	return true
}

func (pc *parkedCall) ended() bool {
	select {
	case <-pc.done:
		return true
	default:
		return false
	}
}

// ask raises one prompt and blocks until it is answered, settled closed,
// ctx ends (the session gave up on it) or the call ends. It never blocks
// on the request side: the prompt is state, and a request picks it up when
// one waits. A prompt the session gave up on leaves its round standing: the
// token names the call, whose next prompt or result answers the retry.
func (pc *parkedCall) ask(ctx context.Context, form domain.Form) json.RawMessage {
	select {
	case pc.turn <- struct{}{}:
	case <-ctx.Done():
		return nil
	case <-pc.ctx.Done():
		return nil
	}
	defer func() { <-pc.turn }()
	p := &roundPrompt{form: form, reply: make(chan json.RawMessage, 1)}
	pc.mu.Lock()
	if t := pc.task; t != nil { // it became a task while this prompt waited its turn
		pc.mu.Unlock()
		return t.askClient(ctx, form)
	}
	if pc.over {
		pc.mu.Unlock()
		return nil
	}
	pc.current, pc.shown = p, false
	pc.mu.Unlock()
	pc.signal()
	var raw json.RawMessage
	select {
	case raw = <-p.reply:
	case <-ctx.Done():
	case <-pc.ctx.Done():
	}
	pc.mu.Lock()
	if pc.current == p {
		pc.current = nil
	}
	pc.mu.Unlock()
	return raw
}

// waitingOn reports whether the session still waits on p.
func (pc *parkedCall) waitingOn(p *roundPrompt) bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.current == p
}

// finish records the call's outcome (the task's, when it became one) and
// wakes its waiter.
func (pc *parkedCall) finish(o toolOutcome) {
	pc.mu.Lock()
	pc.finished, pc.outcome = true, o
	t := pc.task
	pc.mu.Unlock()
	if t != nil {
		t.finish(o)
	}
	pc.signal()
}

// next is what a waiting request acts on: the task the call became (the
// request answers its CreateTaskResult), the outcome (finished), or a
// prompt not yet handed to any request (taken by this call), or nothing
// yet.
func (pc *parkedCall) next() (t *task, o toolOutcome, finished bool, fresh *roundPrompt) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	switch {
	case pc.task != nil:
		return pc.task, toolOutcome{}, false, nil
	case pc.finished:
		return nil, pc.outcome, true, nil
	case pc.current != nil && !pc.shown:
		pc.shown = true
		return nil, toolOutcome{}, false, pc.current
	}
	return nil, toolOutcome{}, false, nil
}

// tasked returns the task the call became, nil while it has not.
func (pc *parkedCall) tasked() *task {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.task
}

// startTask turns the call into a task (ports.TaskStarter): only while a
// request that declared the tasks extension waits for it, so that request
// can answer the CreateTaskResult. The task shares the call's context: its
// tasks/cancel, Shutdown and its stream's end cancel the call. A prompt no
// request has shown yet settles closed (it belonged to the rounds).
func (pc *parkedCall) startTask() bool {
	pc.mu.Lock()
	if pc.task != nil {
		pc.mu.Unlock()
		return true
	}
	if !pc.taskable || pc.over || pc.finished || pc.waiter == nil || !pc.waiter.tasks || pc.e.isStopping() {
		pc.mu.Unlock()
		return false
	}
	t := pc.e.newTask(pc.bind, pc.who, pc.ctx, pc.cancel)
	if _, ok := pc.e.tasks.add(t); !ok {
		pc.mu.Unlock()
		return false // a bound is reached: the call goes on in its request
	}
	pc.task = t
	unshown := pc.current
	if pc.shown {
		unshown = nil
	} else {
		pc.current = nil
	}
	pc.mu.Unlock()
	if unshown != nil {
		unshown.answer(nil)
	}
	pc.signal()
	return true
}

// roundCaller is the Caller a parked call's session sees.
type roundCaller struct {
	pc *parkedCall
}

var _ ports.Caller = roundCaller{}

var _ ports.TaskStarter = roundCaller{}

func (r roundCaller) RequestPermission(ctx context.Context, p domain.PermissionPrompt) domain.Decision {
	return decide(r.prompt(ctx, domain.PermissionForm(p)))
}

func (r roundCaller) Ask(ctx context.Context, p domain.AskPrompt) domain.Answer {
	form, ok := domain.AskForm(p)
	if !ok {
		return domain.Answer{}
	}
	return answerOf(p, r.prompt(ctx, form))
}

// prompt raises one prompt where the call is: the task's input request
// once it became a task, else a round, or nothing when rounds are off.
func (r roundCaller) prompt(ctx context.Context, form domain.Form) json.RawMessage {
	if t := r.pc.tasked(); t != nil {
		return t.askClient(ctx, form)
	}
	if !r.pc.rounds {
		return nil
	}
	return r.pc.ask(ctx, form)
}

func (r roundCaller) Progress(ctx context.Context, progress, total float64, message string) {
	r.pc.mu.Lock()
	w, t := r.pc.waiter, r.pc.task
	r.pc.mu.Unlock()
	switch {
	case t != nil:
		t.progress(message)
	case w != nil:
		w.Progress(ctx, progress, total, message)
	}
}

func (r roundCaller) StartTask(context.Context) bool { return r.pc.startTask() }

// Asking reports where the call's prompts go: the task's input requests
// once it became one, else rounds when the request can take them.
func (r roundCaller) Asking() ports.Asking {
	if t := r.pc.tasked(); t != nil {
		return t.asking()
	}
	return asking(r.pc.rounds, r.pc.e.rounds != nil)
}

func (r roundCaller) Principal() ports.Principal { return r.pc.who }

// roundsOn reports whether a modern request may be answered with rounds:
// asking is on and the client declared form elicitation in this request.
func (e *Engine) roundsOn(in *inbound) bool {
	return e.rounds != nil && declaresFormElicitation(in.clientCaps())
}

// callInRequest serves a modern tools/call of a tool that starts in its
// request (domain.Tool.TaskStartsInRequest), from a client that declared
// the tasks extension, where no round can exist (asking is off, or the
// client cannot answer forms): the call runs as a parked call whose prompts
// settle closed until the session turns it into a task, and the request
// answers its result or the CreateTaskResult.
func (e *Engine) callInRequest(ctx context.Context, p *peer, in *inbound, name string, args []byte) reply {
	waiter := e.newCallCaller(in, p, nil)
	waiter.tasks = true
	defer waiter.finish()
	bind := domain.RoundBinding{Principal: p.carrier.binding(), Tool: name}
	return e.awaitRound(ctx, p, in, bind, e.startParked(ctx, p, name, args, waiter, true, false))
}

type elicitParms struct {
	Mode            string          `json:"mode,omitempty"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	Meta            json.RawMessage `json:"_meta,omitempty"`
}

// callWithRounds serves a modern tools/call under rounds: a fresh call, or
// the retry of a parked one (requestState present).
// taskable is parkedCall's: the tool starts in its request and may become a
// task.
func (e *Engine) callWithRounds(ctx context.Context, p *peer, in *inbound, name string, args []byte, taskable bool) reply {
	digest, ok := domain.ArgumentsDigest(args)
	if !ok {
		return answerErr(in.id, jsonrpc.InvalidParams("arguments are not valid JSON"))
	}
	bind := domain.RoundBinding{Principal: p.carrier.binding(), Tool: name, ArgsDigest: digest}
	responses, rerr := inputResponses(in)
	if rerr != nil {
		return answerErr(in.id, rerr)
	}
	waiter := e.newCallCaller(in, p, nil)
	waiter.tasks = taskable && declaresTasks(in.clientCaps())
	defer waiter.finish()
	raw, resuming := in.param("requestState")
	if !resuming {
		return e.awaitRound(ctx, p, in, bind, e.startParked(ctx, p, name, args, waiter, taskable, true))
	}
	if !jsonrpc.IsString(raw) {
		return answerErr(in.id, jsonrpc.InvalidParams("requestState must be a string"))
	}
	x, err := e.rounds.Take(jsonrpc.Unquote(raw), bind, time.Now())
	if err != nil {
		return answerErr(in.id, errUnknownState)
	}
	x.timer.Stop()
	pc := x.call
	// This request receives the call's progress from now on, before the
	// call resumes: its first report is not lost.
	pc.setWaiter(waiter)
	answer, ok := jsonrpc.Lookup(responses, promptKey)
	switch {
	case ok:
		// An answer to a prompt the session gave up on is dropped: the
		// retry gets the call's next prompt or its result.
		x.prompt.answer(append(json.RawMessage(nil), answer...))
	case pc.waitingOn(x.prompt):
		// The answer is missing: ask the same prompt again, under a new token.
		if r, parked := e.parkRound(p, in, bind, pc, x.prompt); parked {
			pc.setWaiter(nil)
			return r
		}
	}
	return e.awaitRound(ctx, p, in, bind, pc)
}

// setWaiter names the request progress goes to (nil: none).
func (pc *parkedCall) setWaiter(w *callCaller) {
	pc.mu.Lock()
	pc.waiter = w
	pc.mu.Unlock()
}

// startParked runs the tool call on a context of its own under the engine's;
// its progress goes to waiter from the start. taskable and rounds are
// parkedCall's.
func (e *Engine) startParked(req context.Context, p *peer, name string, args []byte, waiter *callCaller, taskable, rounds bool) *parkedCall {
	ctx, cancel := e.callContext(req)
	pc := &parkedCall{ctx: ctx, cancel: cancel, who: p.principal, e: e, bind: p.carrier.binding(),
		taskable: taskable, rounds: rounds, waiter: waiter,
		wake: make(chan struct{}, 1), done: make(chan struct{}), turn: make(chan struct{}, 1)}
	args = append([]byte(nil), args...) // the request's buffer does not outlive it
	run := func() {
		defer close(pc.done)
		defer cancel(nil)
		// A call that returns while parked keeps its round: the retry
		// collects the outcome (until the call's deadline).
		pc.finish(e.runTool(ctx, roundCaller{pc}, name, args))
	}
	if !e.goCall(run) {
		// The engine has stopped: the call ends before it starts.
		cancel(ErrShuttingDown)
		pc.finish(errShutdownResult)
		close(pc.done)
	}
	return pc
}

// awaitRound waits for the call's next prompt (park it) or its result, or
// for the request to end. The request is the call's waiter until then.
func (e *Engine) awaitRound(ctx context.Context, p *peer, in *inbound, bind domain.RoundBinding, pc *parkedCall) reply {
	defer pc.setWaiter(nil)
	for {
		t, o, finished, prompt := pc.next()
		switch {
		case t != nil:
			return e.taskCreated(in, t) // SEP-2663: no requestState, no inputRequests
		case finished:
			return e.callResult(in, o)
		case prompt != nil:
			if r, parked := e.parkRound(p, in, bind, pc, prompt); parked {
				return r
			}
			continue // no room: the prompt settled closed; keep waiting
		}
		select {
		case <-pc.wake:
		case <-ctx.Done():
			// The request ended while it waited for the call: the call is
			// this client's and ends with it, then the request answers
			// (shutting down) or writes nothing (the client left). Either
			// way it waits for the call's goroutine first.
			cause := context.Cause(ctx)
			stopping := e.shuttingDown(ctx)
			if stopping {
				cause = ErrShuttingDown
			}
			ended := e.endParked(pc, cause)
			if ended {
				<-pc.done
			}
			if stopping {
				return e.callResult(in, errShutdownResult)
			}
			if t := pc.tasked(); !ended && t != nil {
				// It became a task meanwhile: the answer naming it, which
				// the carrier drops (the client left or cancelled), and
				// abandon then ends the task nobody can name.
				return e.taskCreated(in, t)
			}
			return reply{kind: Cancelled}
		}
	}
}

// parkRound stores the round and answers input_required; the call's
// deadline is the round lifetime from now. With no room left it settles
// the prompt closed and reports false. The request remembers the call
// (in.parked): if its answer is dropped, the call ends (abandon).
func (e *Engine) parkRound(p *peer, in *inbound, bind domain.RoundBinding, pc *parkedCall, prompt *roundPrompt) (reply, bool) {
	// The timer exists before the round is visible, so whoever removes the
	// round can stop it.
	x := &parked{call: pc, prompt: prompt, bind: bind.Principal, timer: time.AfterFunc(e.rounds.lifetime(), e.expireRounds)}
	token, evicted, err := e.rounds.Park(bind, time.Now(), x)
	for _, old := range stopTimers(evicted) {
		old.call.end(errEvicted) // docs/SPEC.md §6: a principal's oldest round makes room
	}
	if err != nil {
		x.timer.Stop()
		e.logger.Warn("engine: parked round bound reached; prompt settled closed")
		prompt.answer(nil)
		return reply{}, false
	}
	if e.isStopping() {
		// Shutdown may have drained the store before this round entered it.
		e.endParked(pc, ErrShuttingDown)
		return reply{}, false
	}
	in.parked = pc
	p.carrier.parkedOn(in.id, pc)
	params, _ := domain.MarshalJSON(elicitParms{Mode: "form", Message: prompt.form.Message, RequestedSchema: prompt.form.RequestedSchema})
	b := e.resultHead(make([]byte, 0, 256+len(params)), in, "input_required")
	b = append(append(b, `"inputRequests":{"`+promptKey+`":{"method":"elicitation/create","params":`...), params...)
	b = jsonrpc.AppendString(append(b, `}},"requestState":`...), token)
	return answered(e.resultTail(b, in)), true
}

// abandon ends the call a request parked when the request's answer is
// dropped (an HTTP client that left, a stream request cancelled before its
// answer was written): nobody holds its token (docs/SPEC.md §6: a retry
// that is cancelled or disconnects ends the parked call). Like a request
// that ends a call while waiting, it waits for the call's goroutine.
func (e *Engine) abandon(in *inbound, cause error) {
	if in == nil {
		return
	}
	if t := in.task; t != nil {
		// The answer naming the task was dropped: nobody holds its id, so
		// nobody could read, answer or cancel it (docs/SPEC.md §14). It
		// ends unseen, and is forgotten once its call has returned.
		in.task = nil
		t.drop(cause)
	}
	if in.parked == nil {
		return
	}
	pc := in.parked
	in.parked = nil
	if e.endParked(pc, cause) {
		<-pc.done
	}
}

// Causes of a parked call's end when its round ended without an answer.
var (
	errEvicted     = roundEnded("a newer round of the same client took its place")
	errExpired     = roundEnded("no retry within the round lifetime")
	errStreamEnded = roundEnded("the stream that minted it ended")
)

type roundEnded string

func (e roundEnded) Error() string { return "input-required round ended: " + string(e) }

// expireRounds ends every expired round's call.
func (e *Engine) expireRounds() {
	for _, p := range stopTimers(e.rounds.Expire(time.Now())) {
		p.call.end(errExpired)
	}
}

// endParked ends the parked call pc and removes its rounds; false when the
// call became a task (parkedCall.end), which goes on.
func (e *Engine) endParked(pc *parkedCall, cause error) bool {
	if e.rounds != nil {
		e.rounds.removeIf(func(x *parked) bool { return x.call == pc })
	}
	return pc.end(cause)
}

// endRounds ends every call parked by rounds bound to bind (a stream that
// ended: its rounds can never be resumed).
func (e *Engine) endRounds(bind string) {
	if e.rounds == nil {
		return
	}
	for _, p := range e.rounds.removeIf(func(x *parked) bool { return x.bind == bind }) {
		p.call.end(errStreamEnded)
	}
}
