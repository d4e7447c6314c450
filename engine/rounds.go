package engine

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/jsonrpc"
)

// Input-required rounds (docs/SPEC.md §6; MCP 2026-07-28 "Multi round-trip
// requests"). With AskClient on, a modern tools/call from a client that
// declared form elicitation is a call that outlives its request
// (modeRounds). The request waits (await) for one of three things: the
// call returns (the answer is complete), the call raises a prompt (a round
// is parked under a fresh single-use requestState and the answer is
// input_required, while the call stays blocked inside the prompt), or the
// session makes it a task (the answer is its CreateTaskResult). The retry
// resumes the round, hands the answer to the blocked prompt and waits
// again.
//
// A parked call is still its client's call: while a request waits for it,
// that request going away (an HTTP client leaving, a notifications/
// cancelled naming it) ends the call; while it is parked, expiry, a
// notifications/cancelled naming the chain's latest id (streams), the
// request that parked it losing its answer (abandon), the end of the
// stream that minted it, eviction by a newer round of the same principal
// and Shutdown end it. Expiry is the call's deadline: the round lifetime
// from its last park. Ending a call settles its prompts closed and
// cancels its context, so it always returns; a request that ended it
// waits for that, so the call counts against its carrier's in-flight
// bound until it has returned.

// promptKey is the one key under which a round's input request travels.
const promptKey = "prompt"

// Causes of a parked call's end when its round ended without an answer.
var (
	errEvicted     = roundEnded("a newer round of the same client took its place")
	errExpired     = roundEnded("no retry within the round lifetime")
	errStreamEnded = roundEnded("the stream that minted it ended")
)

type roundEnded string

func (e roundEnded) Error() string { return "input-required round ended: " + string(e) }

// callWithRounds serves a modern tools/call under rounds: a fresh call, or
// the retry of a parked one (requestState present). taskable: the tool
// starts in its request, so the session may make it a task.
func (e *Engine) callWithRounds(ctx context.Context, p *peer, in *inbound, name string, args []byte, taskable bool) reply {
	digest, ok := domain.ArgumentsDigest(args)
	if !ok {
		return answerErr(in.id, jsonrpc.InvalidParams("arguments are not valid JSON"))
	}
	bind := domain.RoundBinding{Principal: p.origin.owner().key(), Tool: name, ArgsDigest: digest}
	responses, rerr := inputResponses(in)
	if rerr != nil {
		return answerErr(in.id, rerr)
	}
	tasks := taskable && declaresTasks(in.clientCaps())
	raw, resuming := in.param("requestState")
	if !resuming {
		c := e.newCall(ctx, p, modeRounds, askForms)
		c.taskable = taskable
		// The deadline exists, stopped, before any round can name the call:
		// whoever ends the call can stop it.
		c.deadline = time.AfterFunc(math.MaxInt64, e.expireRounds)
		c.deadline.Stop()
		return e.await(ctx, p, in, bind, c, tasks, func() { c.start(name, args) })
	}
	if !jsonrpc.IsString(raw) {
		return answerErr(in.id, jsonrpc.InvalidParams("requestState must be a string"))
	}
	prompt, err := e.index.resume(ctx, jsonrpc.Unquote(raw), p.origin.owner(), bind)
	switch {
	case errors.Is(err, domain.ErrUnknownRound):
		return answerErr(in.id, errUnknownState)
	case err != nil:
		e.logger.Error("engine: the call store failed resuming a round", "err", err)
		return answerErr(in.id, errCallStore)
	}
	answer, answered := jsonrpc.Lookup(responses, promptKey)
	c := prompt.c
	if c.elsewhere != "" {
		// Its call is parked on another replica: the retry goes there.
		return e.shared.retryElsewhere(ctx, in, bind, c, answer, answered, tasks)
	}
	c.deadline.Stop()
	e.index.requests.remove(c) // the chain's latest id is this request's now
	// This request is the call's waiter (its progress goes here) before the
	// call resumes: its first report is not lost.
	return e.await(ctx, p, in, bind, c, tasks, resumeWith(c, prompt, answer, answered))
}

// resumeWith is what a retry does to the call it resumed: it hands the
// answer to the prompt, or, when the answer is missing, has the same
// prompt shown again under a new token (if the session still waits on
// it). An answer to a prompt the session gave up on is dropped: the retry
// gets the call's next prompt or its result.
func resumeWith(c *call, prompt *input, answer []byte, answered bool) func() {
	return func() {
		if answered {
			c.answer(prompt, append(json.RawMessage(nil), answer...))
			return
		}
		c.update(func(s *callState) {
			for _, x := range s.inputs {
				if x == prompt {
					prompt.shown = false
				}
			}
		})
	}
}

// callInRequest serves a modern tools/call of a tool that starts in its
// request, from a client that declared the tasks extension, where no round
// can exist (asking is off, or the client cannot answer forms): the call's
// prompts settle closed, also once the session makes it a task (nobody
// could answer them), and the request answers its result or the
// CreateTaskResult.
func (e *Engine) callInRequest(ctx context.Context, p *peer, in *inbound, name string, args []byte) reply {
	c := e.newCall(ctx, p, modeInRequest, askNone)
	c.taskable = true
	return e.await(ctx, p, in, domain.RoundBinding{}, c, true, func() { c.start(name, args) })
}

// await makes the request c's waiter, runs then, and waits for the call's
// next prompt (it parks a round and answers input_required), its outcome,
// or its becoming a task (the CreateTaskResult), or for the request to
// end. tasks: the request declared the tasks extension.
func (e *Engine) await(ctx context.Context, p *peer, in *inbound, bind domain.RoundBinding, c *call, tasks bool, then func()) reply {
	w := &in.report
	w.setToken(in, p.notify)
	return follow(e, ctx, c, w, tasks, then, waiting[reply]{
		task:     func() reply { return e.taskCreated(in, c) }, // SEP-2663: no requestState, no inputRequests
		returned: func(o toolOutcome) reply { return e.callResult(in, o) },
		prompt:   func(fresh *input) (reply, bool) { return e.park(ctx, p, in, bind, c, fresh) },
		left: func(stopping, becameTask bool) reply {
			switch {
			case stopping:
				return e.callResult(in, errShutdownResult)
			case becameTask:
				// It became a task meanwhile: the answer naming it, which
				// the carrier drops (the client left or cancelled), and
				// abandon then ends the task nobody can name.
				return e.taskCreated(in, c)
			}
			return reply{kind: Cancelled}
		},
	})
}

// waiting is what a request waiting for a call (follow) does with what it
// sees: a request here answers its client (await); a retry forwarded from
// another replica answers that replica (shared.go).
type waiting[R any] struct {
	task     func() R               // the call became a task
	returned func(toolOutcome) R    // the call returned
	prompt   func(*input) (R, bool) // a prompt no request has shown: park it (false: no room, keep waiting)
	// left: the request ended first (the client left, or the server
	// stops); the call ended with it, unless it had become a task.
	left func(stopping, becameTask bool) R
}

// follow makes w c's waiter (tasks: its request declared the extension),
// runs then, and waits for what h handles: the call's next prompt, its
// outcome, its becoming a task, or ctx's end — the request's, which ends
// the call (it is this client's), after which it waits for the call's
// goroutine.
func follow[R any](e *Engine, ctx context.Context, c *call, w *reporter, tasks bool, then func(), h waiting[R]) R {
	c.update(func(s *callState) { s.waiter, s.waiterTasks = w, tasks })
	defer func() {
		w.finish() // no progress of the call follows this request's answer
		c.update(func(s *callState) {
			if s.waiter == w {
				s.waiter, s.waiterTasks = nil, false
			}
		})
	}()
	then()
	for {
		var task, returned bool
		var o toolOutcome
		var fresh *input
		c.update(func(s *callState) {
			switch {
			case s.task:
				task = true
			case s.returned:
				returned, o = true, s.outcome
			default:
				for _, x := range s.inputs {
					if x.round && !x.shown {
						x.shown, fresh = true, x
						break
					}
				}
			}
		})
		switch {
		case task:
			return h.task()
		case returned:
			return h.returned(o)
		case fresh != nil:
			if r, ok := h.prompt(fresh); ok {
				return r
			}
			continue // no room: the prompt settled closed; keep waiting
		}
		select {
		case <-c.wake:
		case <-ctx.Done():
			cause := context.Cause(ctx)
			stopping := e.shuttingDown(ctx)
			if stopping {
				cause = ErrShuttingDown
			}
			ended := c.leave(cause)
			if ended {
				<-c.done
			}
			return h.left(stopping, !ended && c.isTask())
		}
	}
}

func (c *call) isTask() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.s.task
}

// park names prompt by a fresh round token and answers input_required;
// the call's deadline is the round lifetime from now. With no room left it
// settles the prompt closed and reports false. The request's answer names
// the call (in.named: if it is dropped, the call ends), and on a stream
// so does its id (a notifications/cancelled naming it ends the call).
func (e *Engine) park(ctx context.Context, p *peer, in *inbound, bind domain.RoundBinding, c *call, prompt *input) (reply, bool) {
	token, evicted, err := e.index.park(ctx, prompt, bind)
	if !e.parked(c, prompt, evicted, err) {
		return reply{}, false
	}
	in.named = c
	if p.origin.lasting() {
		e.index.requests.add(in.id, c)
	}
	return e.inputRequired(in, prompt.form, token), true
}

// parked finishes a park (what the names said: the rounds evicted to make
// room, a failure): the evicted rounds' calls end (docs/SPEC.md §6: a
// principal's oldest round makes room); without room the prompt settles
// closed, and when the engine stops the call ends; else the call's
// deadline is the round lifetime from now. It reports whether the round
// stands.
func (e *Engine) parked(c *call, prompt *input, evicted []*input, err error) bool {
	for _, old := range evicted {
		old.c.leave(errEvicted)
	}
	if err != nil {
		if errors.Is(err, domain.ErrRoundsFull) {
			e.logger.Warn("engine: parked round bound reached; prompt settled closed")
		} else {
			e.logger.Error("engine: the call store failed parking a round; prompt settled closed", "err", err)
		}
		c.answer(prompt, nil)
		return false
	}
	if e.isStopping() {
		// Shutdown may have drained the store before this round entered it.
		c.leave(ErrShuttingDown)
		return false
	}
	c.deadline.Reset(e.roundLifetime)
	return true
}

// inputRequired is the answer to in that parks form under token.
func (e *Engine) inputRequired(in *inbound, form domain.Form, token string) reply {
	b := e.resultHead(make([]byte, 0, 256+len(form.Message)+len(form.RequestedSchema)), in, "input_required")
	b = appendInputRequest(append(b, `"inputRequests":{"`+promptKey+`":`...), form)
	b = jsonrpc.AppendString(append(b, `},"requestState":`...), token)
	return answered(e.resultTail(b, in))
}

// elicitParams are an elicitation/create request's params: a round's and
// a task's input requests, and a legacy stream's request.
type elicitParams struct {
	Mode            string          `json:"mode,omitempty"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	Meta            json.RawMessage `json:"_meta,omitempty"`
}

// appendInputRequest appends one input request: an elicitation/create in
// form mode with the form's message and schema (a round's, a task's: one
// rendering for both).
func appendInputRequest(b []byte, f domain.Form) []byte {
	params, _ := domain.MarshalJSON(elicitParams{Mode: "form", Message: f.Message, RequestedSchema: f.RequestedSchema})
	return append(append(append(b, `{"method":"elicitation/create","params":`...), params...), '}')
}

// abandon ends the call a request's answer named when that answer is
// dropped (an HTTP client that left, a stream request cancelled before its
// answer was written): nobody holds its token or id (docs/SPEC.md §6: a
// retry that is cancelled or disconnects ends the parked call; §14: such a
// task is cancelled and forgotten). A round's call is waited for, like a
// request that ends a call while waiting.
func (e *Engine) abandon(in *inbound, cause error) {
	c := in.named
	switch {
	case c == nil:
		return
	case c.elsewhere != "":
		e.shared.abandonElsewhere(c) // its call runs on another replica
		return
	case c.isTask():
		c.drop(cause)
		return
	}
	if c.leave(cause) {
		<-c.done
	}
}

// expireRounds ends every expired round's call.
func (e *Engine) expireRounds() {
	for _, in := range e.index.expireRounds() {
		in.c.leave(errExpired)
	}
}

// closeOwner ends what only o could reach (a stream that ended): its
// parked rounds' calls, and its tasks, which nobody can name again.
func (e *Engine) closeOwner(o owner) {
	rounds, tasks := e.index.closeOwner(o)
	for _, in := range rounds {
		in.c.leave(errStreamEnded)
	}
	for _, c := range tasks {
		c.stop(errTaskStream, "")
		c.update(func(s *callState) { s.unnamed = true })
	}
}
