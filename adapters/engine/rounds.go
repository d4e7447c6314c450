package engine

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// Input-required rounds (docs/SPEC.md §6; MCP 2026-07-28 "Multi round-trip
// requests"). With AskClient on, a modern tools/call from a client that
// declared form elicitation runs in its own goroutine on the engine's base
// context. The request waits for one of two things: the call finishes (the
// answer is complete) or the call raises a prompt through its Caller (the
// round is parked under a fresh single-use requestState and the answer is
// input_required, while the call stays blocked inside the prompt). The retry
// resumes the parked round, hands the answer to the blocked prompt and waits
// again. Expiry, Stop, a cancelled retry or (stdio) a cancellation naming the
// chain's latest id abandon the call: its prompts settle closed, so it always
// finishes and its goroutine always ends.

// promptKey is the one key under which a round's input request travels.
const promptKey = "prompt"

// parkedCall is one tools/call running under rounds.
type parkedCall struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	who    ports.Principal // who drives the call
	events chan roundEvent // at most a stale prompt and the result: never blocks
	done   chan struct{}   // closed when the session call has returned
	// unpark removes from the store the round parked for one of this call's
	// prompts (or all of them, for nil): a prompt nobody waits for any more
	// must not hold one of the bounded places.
	unpark func(p *roundPrompt)

	promptMu sync.Mutex // one prompt at a time: a second waits for the next round

	mu        sync.Mutex // guards the fields below
	abandoned bool
	current   *roundPrompt // the prompt awaiting an answer
	waiter    *callCaller  // the request waiting now (progress goes to it)
}

type roundEvent struct {
	prompt *roundPrompt
	result domain.ToolResult
	rerr   *Error
}

type roundPrompt struct {
	form  domain.Form
	once  sync.Once
	reply chan json.RawMessage // the ElicitResult, or nil when settled closed
}

func (p *roundPrompt) answer(raw json.RawMessage) { p.once.Do(func() { p.reply <- raw }) }

// parked is what the round store keeps: the call and its waiting prompt.
type parked struct {
	call   *parkedCall
	prompt *roundPrompt
}

// abandon settles the call's prompts closed from now on.
func (pc *parkedCall) abandon() {
	pc.mu.Lock()
	pc.abandoned = true
	cur := pc.current
	pc.mu.Unlock()
	if cur != nil {
		cur.answer(nil)
	}
}

// ask raises one prompt and blocks until it is answered or settled closed.
func (pc *parkedCall) ask(ctx context.Context, form domain.Form) json.RawMessage {
	pc.promptMu.Lock()
	defer pc.promptMu.Unlock()
	p := &roundPrompt{form: form, reply: make(chan json.RawMessage, 1)}
	pc.mu.Lock()
	if pc.abandoned {
		pc.mu.Unlock()
		return nil
	}
	pc.current = p
	pc.mu.Unlock()
	pc.events <- roundEvent{prompt: p}
	defer func() {
		pc.mu.Lock()
		pc.current = nil
		pc.mu.Unlock()
	}()
	select {
	case raw := <-p.reply:
		return raw
	case <-ctx.Done():
		pc.unpark(p) // the session gave up on this prompt
		return nil
	}
}

// roundCaller is the Caller a parked call's session sees.
type roundCaller struct{ pc *parkedCall }

var _ ports.Caller = roundCaller{}

func (r roundCaller) RequestPermission(ctx context.Context, p domain.PermissionPrompt) domain.Decision {
	return decide(r.pc.ask(ctx, domain.PermissionForm(p)))
}

func (r roundCaller) Ask(ctx context.Context, p domain.AskPrompt) domain.Answer {
	form, ok := domain.AskForm(p)
	if !ok {
		return domain.Answer{}
	}
	return answerOf(p, r.pc.ask(ctx, form))
}

func (r roundCaller) Principal() ports.Principal { return r.pc.who }

func (r roundCaller) Progress(ctx context.Context, progress, total float64, message string) {
	r.pc.mu.Lock()
	w := r.pc.waiter
	r.pc.mu.Unlock()
	if w != nil {
		w.Progress(ctx, progress, total, message)
	}
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

// roundsOn reports whether a modern request may be answered with rounds:
// asking is on and the client declared form elicitation in this request.
func (e *Engine) roundsOn(in *inbound) bool {
	return e.rounds != nil && declaresFormElicitation(in.meta[metaClientCapabilities])
}

// declaresFormElicitation reports whether capabilities (a ClientCapabilities
// object) declare form-mode elicitation: "elicitation":{} or
// "elicitation":{"form":{}} (an elicitation object naming only url does not).
func declaresFormElicitation(caps json.RawMessage) bool {
	var c struct {
		Elicitation map[string]json.RawMessage `json:"elicitation"`
	}
	if len(caps) == 0 || json.Unmarshal(caps, &c) != nil || c.Elicitation == nil {
		return false
	}
	if len(c.Elicitation) == 0 {
		return true
	}
	_, form := c.Elicitation["form"]
	return form
}

type inputRequest struct {
	Method string      `json:"method"`
	Params elicitParms `json:"params"`
}

type elicitParms struct {
	Mode            string          `json:"mode,omitempty"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

type inputRequiredResult struct {
	ResultType    string                  `json:"resultType"`
	InputRequests map[string]inputRequest `json:"inputRequests"`
	RequestState  string                  `json:"requestState"`
	Meta          *resultMeta             `json:"_meta,omitempty"`
}

// callWithRounds serves a modern tools/call under rounds: a fresh call, or
// the retry of a parked one (requestState present).
func (e *Engine) callWithRounds(c *call, in *inbound, name string, args json.RawMessage) (any, *Error) {
	digest, ok := domain.ArgumentsDigest(args)
	if !ok {
		return nil, newError(CodeInvalidParams, "Invalid params: arguments are not valid JSON")
	}
	bind := domain.RoundBinding{Principal: c.principal, Tool: name, ArgsDigest: digest}
	var responses map[string]json.RawMessage
	if r, ok := in.params["inputResponses"]; ok {
		if r[0] != '{' || json.Unmarshal(r, &responses) != nil {
			return nil, newError(CodeInvalidParams, "Invalid params: inputResponses must be an object")
		}
	}
	raw, resuming := in.params["requestState"]
	if !resuming {
		return e.awaitRound(c, in, bind, e.startParked(name, args, c.caller.Principal(), c.req))
	}
	var token string
	if raw[0] != '"' || json.Unmarshal(raw, &token) != nil {
		return nil, newError(CodeInvalidParams, "Invalid params: requestState must be a string")
	}
	p, err := e.rounds.Take(token, bind, time.Now())
	if err != nil {
		return nil, newError(CodeInvalidParams, "Invalid params: unknown or expired requestState")
	}
	answer, ok := responses[promptKey]
	if !ok {
		// The answer is missing: ask the same prompt again, under a new token.
		if r, err := e.parkRound(c, in, bind, p.call, p.prompt); r != nil || err != nil {
			return r, err
		}
		return e.awaitRound(c, in, bind, p.call)
	}
	p.call.mu.Lock()
	p.call.waiter = c.req // before the call resumes, so none of its progress is lost
	p.call.mu.Unlock()
	p.prompt.answer(answer)
	return e.awaitRound(c, in, bind, p.call)
}

// startParked runs the tool call on the engine's base context, its
// progress going to waiter from the start (the first report can come before
// awaitRound runs).
func (e *Engine) startParked(name string, args json.RawMessage, who ports.Principal, waiter *callCaller) *parkedCall {
	ctx, cancel := context.WithCancelCause(e.base)
	pc := &parkedCall{ctx: ctx, cancel: cancel, who: who, events: make(chan roundEvent, 2), done: make(chan struct{}), waiter: waiter}
	pc.unpark = func(p *roundPrompt) {
		e.rounds.RemoveIf(func(x *parked) bool { return x.call == pc && (p == nil || x.prompt == p) })
	}
	e.parkedCalls.Add(1)
	go func() {
		defer e.parkedCalls.Done()
		defer close(pc.done)
		defer cancel(nil)
		result, rerr := e.runTool(&call{ctx: ctx, caller: roundCaller{pc}}, name, args)
		pc.unpark(nil) // a finished call holds no round
		pc.events <- roundEvent{result: result, rerr: rerr}
	}()
	return pc
}

// awaitRound waits for the call's next prompt (park it) or its result.
func (e *Engine) awaitRound(c *call, in *inbound, bind domain.RoundBinding, pc *parkedCall) (any, *Error) {
	pc.mu.Lock()
	pc.waiter = c.req
	pc.mu.Unlock()
	defer func() {
		pc.mu.Lock()
		pc.waiter = nil
		pc.mu.Unlock()
	}()
	for {
		select {
		case ev := <-pc.events:
			if ev.prompt == nil {
				if ev.rerr != nil {
					return nil, ev.rerr
				}
				return callToolResult{ResultType: "complete", ToolResult: ev.result, Meta: &resultMeta{e.info}}, nil
			}
			r, err := e.parkRound(c, in, bind, pc, ev.prompt)
			if err == nil && r == nil {
				continue // no room: the prompt settled closed; keep waiting
			}
			return r, err
		case <-c.ctx.Done():
			// The request was cancelled or its client went away: nobody can
			// answer any more, nor receive the result, so the call ends and
			// the tool's ctx with it (docs/SPEC.md §6: "ends it at once").
			pc.abandon()
			if errors.Is(context.Cause(c.ctx), ErrShuttingDown) {
				pc.cancel(ErrShuttingDown)
			} else {
				pc.cancel(context.Canceled)
			}
			return callToolResult{ResultType: "complete", ToolResult: errShutdownResult, Meta: &resultMeta{e.info}}, nil
		}
	}
}

// parkRound stores the round and answers input_required. With no room left
// it settles the prompt closed and returns (nil, nil).
func (e *Engine) parkRound(c *call, in *inbound, bind domain.RoundBinding, pc *parkedCall, p *roundPrompt) (any, *Error) {
	token, _, err := e.rounds.Park(bind, time.Now(), &parked{call: pc, prompt: p})
	if err != nil {
		if errors.Is(err, domain.ErrRoundsFull) {
			e.logger.Warn("engine: parked round bound reached; prompt settled closed")
		}
		p.answer(nil)
		return nil, nil
	}
	time.AfterFunc(e.rounds.Lifetime(), e.expireRounds)
	if c.onParked != nil {
		c.onParked(pc)
	}
	return inputRequiredResult{
		ResultType: "input_required",
		InputRequests: map[string]inputRequest{promptKey: {Method: "elicitation/create",
			Params: elicitParms{Mode: "form", Message: p.form.Message, RequestedSchema: p.form.RequestedSchema}}},
		RequestState: token,
		Meta:         &resultMeta{e.info},
	}, nil
}

// expireRounds settles every expired round closed.
func (e *Engine) expireRounds() {
	for _, p := range e.rounds.Expire(time.Now()) {
		p.call.abandon()
	}
}

// abandonChain ends the parked call pc (a stdio client cancelled the request
// that parked it).
func (e *Engine) abandonChain(pc *parkedCall) {
	if e.rounds == nil {
		return
	}
	e.rounds.RemoveIf(func(p *parked) bool { return p.call == pc })
	pc.abandon()
	pc.cancel(context.Canceled)
}

func newRounds(lifetime time.Duration) *domain.Rounds[*parked] {
	return domain.NewRounds[*parked](lifetime, rand.Reader)
}
