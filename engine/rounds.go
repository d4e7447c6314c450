package engine

import (
	"context"
	"encoding/json"
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
	prompt, err := e.index.resume(jsonrpc.Unquote(raw), bind)
	if err != nil {
		return answerErr(in.id, errUnknownState)
	}
	c := prompt.c
	c.deadline.Stop()
	e.index.requests.remove(c) // the chain's latest id is this request's now
	answer, answered := jsonrpc.Lookup(responses, promptKey)
	// This request is the call's waiter (its progress goes here) before the
	// call resumes: its first report is not lost.
	return e.await(ctx, p, in, bind, c, tasks, func() {
		if answered {
			// An answer to a prompt the session gave up on is dropped: the
			// retry gets the call's next prompt or its result.
			c.answer(prompt, append(json.RawMessage(nil), answer...))
			return
		}
		// The answer is missing: the same prompt again, under a new token,
		// if the session still waits on it.
		c.update(func(s *callState) {
			for _, x := range s.inputs {
				if x == prompt {
					prompt.shown = false
				}
			}
		})
	})
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
			return e.taskCreated(in, c) // SEP-2663: no requestState, no inputRequests
		case returned:
			return e.callResult(in, o)
		case fresh != nil:
			if r, ok := e.park(p, in, bind, c, fresh); ok {
				return r
			}
			continue // no room: the prompt settled closed; keep waiting
		}
		select {
		case <-c.wake:
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
			ended := c.leave(cause)
			if ended {
				<-c.done
			}
			if stopping {
				return e.callResult(in, errShutdownResult)
			}
			if !ended && c.isTask() {
				// It became a task meanwhile: the answer naming it, which
				// the carrier drops (the client left or cancelled), and
				// abandon then ends the task nobody can name.
				return e.taskCreated(in, c)
			}
			return reply{kind: Cancelled}
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
func (e *Engine) park(p *peer, in *inbound, bind domain.RoundBinding, c *call, prompt *input) (reply, bool) {
	token, evicted, err := e.index.park(prompt, bind)
	for _, old := range evicted {
		old.c.leave(errEvicted) // docs/SPEC.md §6: a principal's oldest round makes room
	}
	if err != nil {
		e.logger.Warn("engine: parked round bound reached; prompt settled closed")
		c.answer(prompt, nil)
		return reply{}, false
	}
	if e.isStopping() {
		// Shutdown may have drained the store before this round entered it.
		c.leave(ErrShuttingDown)
		return reply{}, false
	}
	c.deadline.Reset(e.roundLifetime)
	in.named = c
	if p.origin.lasting() {
		e.index.requests.add(in.id, c)
	}
	b := e.resultHead(make([]byte, 0, 256+len(prompt.form.Message)+len(prompt.form.RequestedSchema)), in, "input_required")
	b = appendInputRequest(append(b, `"inputRequests":{"`+promptKey+`":`...), prompt.form)
	b = jsonrpc.AppendString(append(b, `},"requestState":`...), token)
	return answered(e.resultTail(b, in)), true
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
	if c == nil {
		return
	}
	if c.isTask() {
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
