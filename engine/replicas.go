package engine

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/jsonrpc"
	"github.com/agentmcp/agentmcp/ports"
)

// What replicas tell each other through the shared store (shared.go):
// what is done to a call that runs on the receiver, and a forwarded
// retry's answer. A message is JSON, engine to engine; the store carries
// it unread.
type message struct {
	Kind string `json:"k"`
	From string `json:"from,omitempty"` // the sender's replica (a retry's answer goes there)
	Task string `json:"task,omitempty"`
	Call string `json:"call,omitempty"` // a call's ref
	Wait string `json:"wait,omitempty"` // a forwarded retry's wait
	// Answer is a round's answer (Answered: there is one) or tasks/update's
	// inputResponses object.
	Answer   json.RawMessage `json:"answer,omitempty"`
	Answered bool            `json:"answered,omitempty"`
	// A forwarded retry's: the digest of the token its next round parks
	// under (the token stays with the sender), its tool and arguments'
	// digest, and whether its request declared the tasks extension.
	Next   []byte `json:"next,omitempty"`
	Tool   string `json:"tool,omitempty"`
	Digest []byte `json:"digest,omitempty"`
	Tasks  bool   `json:"tasks,omitempty"`
	Cause  string `json:"cause,omitempty"`
	// A forwarded retry's answer: the call's next prompt, its result (the
	// CallToolResult's members, not a JSON value on their own, or the
	// JSON-RPC error), or the task it became (its id, creation in Unix ns,
	// TTL in ns).
	Message   string          `json:"message,omitempty"`
	Schema    json.RawMessage `json:"schema,omitempty"`
	Result    []byte          `json:"result,omitempty"`
	ToolError bool            `json:"toolError,omitempty"`
	Error     json.RawMessage `json:"error,omitempty"`
	Created   int64           `json:"created,omitempty"`
	TTL       int64           `json:"ttl,omitempty"`
}

// Message kinds.
const (
	msgAnswer  = "answer" // tasks/update's responses for task Task
	msgCancel  = "cancel" // tasks/cancel of task Task (the store has it cancelled already)
	msgDrop    = "drop"   // the answer naming task Task was dropped: nobody can reach it
	msgResume  = "resume" // a retry of the round parked for call Call
	msgLeave   = "leave"  // the request waiting for call Call ended, or its round was evicted (Cause)
	msgPrompt  = "prompt" // a retry's answer: the call parked its next prompt
	msgResult  = "result" // a retry's answer: the call's result
	msgTask    = "task"   // a retry's answer: the call became a task
	msgUnknown = "unknown"
	msgGone    = "gone" // (never sent) the replica a retry went to is gone
)

// causeEvicted is a leave's cause for a round evicted by a newer one of
// its principal.
const causeEvicted = "evicted"

func (n *sharedNames) self() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.me
}

// send sends m to replica, with this replica as its sender.
func (n *sharedNames) send(ctx context.Context, replica string, m message) error {
	b, err := n.encode(m)
	if err != nil {
		return err
	}
	return n.store.Send(ctx, replica, b)
}

// encode is m as it travels, from this replica.
func (n *sharedNames) encode(m message) ([]byte, error) {
	m.From = n.self()
	return json.Marshal(m)
}

// sendLater sends m through the writer: for a sender that does not wait.
// A message that cannot be encoded is a bug, logged, never retried.
func (n *sharedNames) sendLater(replica string, m message) {
	b, err := n.encode(m)
	if err != nil {
		n.e.logger.Error("engine: a message to another replica cannot be encoded; dropped", "kind", m.Kind, "err", err)
		return
	}
	n.w.add(writeJob{do: func(ctx context.Context) error { return ignoreGone(n.store.Send(ctx, replica, b)) }})
}

// ignoreGone is err, unless it says the receiver is gone: what was sent
// there concerned only what ran there, and the store has ended it.
func ignoreGone(err error) error {
	if errors.Is(err, ports.ErrReplicaGone) {
		return nil
	}
	return err
}

// onMessage serves a message another replica sent (ports.CallEvents): it
// never blocks the store's goroutine.
func (n *sharedNames) onMessage(b []byte) {
	var m message
	if json.Unmarshal(b, &m) != nil {
		n.e.logger.Warn("engine: a message from the call store is not one of ours; dropped")
		return
	}
	switch m.Kind {
	case msgAnswer, msgCancel, msgDrop:
		n.mu.Lock()
		c := n.live[m.Task]
		n.mu.Unlock()
		if c == nil {
			return // it ended meanwhile
		}
		switch m.Kind {
		case msgAnswer:
			if ms, dup := jsonrpc.Members(m.Answer, nil); !dup && jsonrpc.IsObject(m.Answer) {
				c.answerTask(ms)
			}
		case msgCancel:
			c.stop(errTaskCancelled, "")
		case msgDrop:
			c.drop(errClientGone)
		}
	case msgResume:
		n.onResume(m)
	case msgLeave:
		n.onLeave(m)
	case msgPrompt, msgResult, msgTask, msgUnknown:
		n.mu.Lock()
		f := n.forwards[m.Wait]
		n.mu.Unlock()
		if f != nil {
			select {
			case f.reply <- m:
			default: // answered already
			}
		}
	}
}

// onLeave ends call m.Call: the request another replica forwarded its
// retry from ended, or its round was evicted there.
func (n *sharedNames) onLeave(m message) {
	cause := errClientGone
	if m.Cause == causeEvicted {
		cause = errEvicted
	}
	n.mu.Lock()
	a, awaited := n.awaited[m.Call]
	p, parked := n.parked[m.Call]
	n.mu.Unlock()
	switch {
	case awaited:
		a.cancel(cause) // the forwarded retry's wait ends as a request's would
	case parked:
		p.in.c.leave(cause)
	}
}

func (n *sharedNames) onSettled(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ring(n.watchers[id])
}

// ring rings each of a task's watchers, never blocking (n.mu held).
func ring(ws map[chan struct{}]struct{}) {
	for ch := range ws {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// onMissed: events may have been lost; every tasks/result waiting for a
// task on another replica reads it again (settled). A lost Gone of a
// replica a retry was forwarded to still ends that wait only with its
// request.
func (n *sharedNames) onMissed() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ws := range n.watchers {
		ring(ws)
	}
}

// onGone: replica's lease lapsed. Retries forwarded there get no answer
// now, and calls whose waiting request was there end (nobody can answer
// their client); tasks/result waits read their task again (the store
// failed it). This replica's own lapse ends what it runs for the store:
// the store has failed its tasks and dropped its rounds already.
func (n *sharedNames) onGone(replica string) {
	n.mu.Lock()
	me := n.me
	var forwards []*forward
	var cancels []context.CancelCauseFunc
	var calls []*call
	var rounds []*input
	for _, f := range n.forwards {
		if f.to == replica {
			forwards = append(forwards, f)
		}
	}
	for _, a := range n.awaited {
		if a.from == replica || replica == me {
			cancels = append(cancels, a.cancel)
		}
	}
	if replica == me {
		for _, c := range n.live {
			calls = append(calls, c)
		}
		for ref, p := range n.parked {
			rounds = append(rounds, p.in)
			delete(n.parked, ref)
		}
	}
	for _, ws := range n.watchers {
		ring(ws)
	}
	n.mu.Unlock()
	if replica == me {
		n.e.logger.Error("engine: this replica lost its lease in the call store (it could not reach it for longer than the lease): its tasks are failed and its rounds ended")
	}
	for _, f := range forwards {
		select {
		case f.reply <- message{Kind: msgGone}:
		default:
		}
	}
	for _, cancel := range cancels {
		cancel(errReplicaLeft)
	}
	for _, c := range calls {
		c.stop(errLeaseLost, "")
	}
	for _, in := range rounds {
		in.c.leave(errLeaseLost)
	}
}

// onResume serves a retry another replica took the round of: the call
// parked here resumes as it would for a request here, and what it does
// next is the answer sent back — its next prompt parked under the digest
// the retry brought, its result, or the task it became.
func (n *sharedNames) onResume(m message) {
	e := n.e
	n.mu.Lock()
	p, ok := n.parked[m.Call]
	delete(n.parked, m.Call)
	n.mu.Unlock()
	if !ok || len(m.Next) != 32 || len(m.Digest) != 32 {
		n.sendLater(m.From, message{Kind: msgUnknown, Wait: m.Wait})
		return
	}
	c, prompt := p.in.c, p.in
	c.deadline.Stop()
	var next [32]byte
	copy(next[:], m.Next)
	bind := domain.RoundBinding{Principal: c.owner.key(), Tool: m.Tool}
	copy(bind.ArgsDigest[:], m.Digest)
	ctx, cancel := context.WithCancelCause(e.base)
	n.mu.Lock()
	n.awaited[m.Call] = awaitedCall{from: m.From, cancel: cancel}
	n.mu.Unlock()
	done := func() {
		n.mu.Lock()
		if n.awaited[m.Call].from == m.From {
			delete(n.awaited, m.Call)
		}
		n.mu.Unlock()
		cancel(nil)
	}
	var answer []byte
	if m.Answered {
		answer = m.Answer
	}
	started := e.goCall(func() {
		defer done()
		r := follow(e, ctx, c, &reporter{}, m.Tasks, resumeWith(c, prompt, answer, m.Answered), waiting[*message]{
			task: func() *message {
				return &message{Kind: msgTask, Task: c.id, Created: c.created.UnixNano(), TTL: int64(c.ttl)}
			},
			returned: func(o toolOutcome) *message { return resultMessage(o) },
			prompt: func(fresh *input) (*message, bool) {
				evicted, err := n.parkAs(ctx, fresh, bind, next)
				if !e.parked(c, fresh, evicted, err) {
					return nil, false
				}
				return &message{Kind: msgPrompt, Message: fresh.form.Message, Schema: fresh.form.RequestedSchema}, true
			},
			left: func(stopping, becameTask bool) *message {
				switch {
				case stopping:
					return resultMessage(errShutdownResult)
				case becameTask:
					c.drop(errClientGone) // its creating answer cannot reach anyone
				}
				return nil // the retry's request is gone: nobody to answer
			},
		})
		if r != nil {
			r.Wait = m.Wait
			n.sendLater(m.From, *r)
		}
	})
	if !started {
		done()
		c.leave(ErrShuttingDown)
		r := resultMessage(errShutdownResult)
		r.Wait = m.Wait
		n.sendLater(m.From, *r)
	}
}

// resultMessage is a forwarded retry's answer when its call returned.
func resultMessage(o toolOutcome) *message {
	if o.rerr != nil {
		b, _ := json.Marshal(o.rerr)
		return &message{Kind: msgResult, Error: b}
	}
	return &message{Kind: msgResult, Result: o.appendTo(nil, true), ToolError: o.failed()}
}

// retryElsewhere serves a retry whose round the store says is parked on
// another replica: it sends the retry there, with the digest of a token it
// mints for the call's next round, and answers with what comes back — or,
// when the request ends first, tells that replica (the call ends, as for a
// request here), and when that replica is gone, -32603.
func (n *sharedNames) retryElsewhere(ctx context.Context, in *inbound, bind domain.RoundBinding, c *call, answer []byte, answered, tasks bool) reply {
	e := n.e
	token, next := newRoundToken()
	f := &forward{id: newWaitID(), to: c.elsewhere, reply: make(chan message, 1)}
	n.mu.Lock()
	n.forwards[f.id] = f
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		delete(n.forwards, f.id)
		n.mu.Unlock()
	}()
	m := message{Kind: msgResume, Call: c.ref, Wait: f.id, Next: next[:], Tool: bind.Tool, Digest: bind.ArgsDigest[:], Tasks: tasks}
	if answered {
		m.Answer, m.Answered = answer, true
	}
	if err := n.send(ctx, c.elsewhere, m); errors.Is(err, ports.ErrReplicaGone) {
		// Its lease lapsed after the store gave us the round: its Gone
		// may have come before f was registered, and no answer will.
		return answerErr(in.id, errReplicaGone)
	} else if err != nil {
		return answerErr(in.id, e.storeFailed(in.method, err))
	}
	select {
	case r := <-f.reply:
		switch r.Kind {
		case msgPrompt:
			in.named = c // dropped, the call there ends
			return e.inputRequired(in, domain.Form{Message: r.Message, RequestedSchema: r.Schema}, token)
		case msgResult:
			return e.callResult(in, outcomeOf(r))
		case msgTask:
			t := &call{e: e, owner: c.owner, mode: modeTask, id: r.Task, created: time.Unix(0, r.Created), ttl: time.Duration(r.TTL), elsewhere: c.elsewhere}
			t.s = t.createdState()
			return e.taskCreated(in, t)
		case msgGone:
			return answerErr(in.id, errReplicaGone)
		}
		return answerErr(in.id, errUnknownState)
	case <-ctx.Done():
		n.sendLater(c.elsewhere, message{Kind: msgLeave, Call: c.ref})
		if e.shuttingDown(ctx) {
			return e.callResult(in, errShutdownResult)
		}
		return reply{kind: Cancelled}
	}
}

// outcomeOf is a forwarded retry's result.
func outcomeOf(r message) toolOutcome {
	if r.Error != nil {
		var er Error
		if json.Unmarshal(r.Error, &er) != nil {
			er = *jsonrpc.NewError(CodeInternalError, "Internal error")
		}
		return toolOutcome{rerr: &er}
	}
	return toolOutcome{rendered: r.Result, renderedError: r.ToolError}
}

// abandonElsewhere ends what a dropped answer named when its call runs on
// another replica: a forwarded round's call ends, a task is dropped there.
func (n *sharedNames) abandonElsewhere(c *call) {
	if c.isTask() {
		n.sendLater(c.elsewhere, message{Kind: msgDrop, Task: c.id})
		return
	}
	n.sendLater(c.elsewhere, message{Kind: msgLeave, Call: c.ref})
}

func newWaitID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
