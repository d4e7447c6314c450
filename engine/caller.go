package engine

import (
	"context"
	"encoding/json"
	"math"
	"sync"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/jsonrpc"
	"github.com/agentmcp/agentmcp/ports"
)

// elicitFunc sends a form to the client and returns its ElicitResult, or
// nil when it could not be answered.
type elicitFunc func(ctx context.Context, f domain.Form) json.RawMessage

// callCaller is the ports.Caller of one request outside input-required
// rounds. Prompts go to the client through elicit (a legacy stream client
// that can answer forms) or settle closed at once (docs/SPEC.md §6);
// progress goes out as notifications/progress when the request carried a
// progressToken, only while the call is in flight and only when it
// increases (MCP: progress MUST increase with each notification).
type callCaller struct {
	token  []byte // nil: the client asked for no progress
	notify func(msg []byte)
	who    ports.Principal
	elicit elicitFunc // nil: prompts settle closed
	askOn  bool       // asking the client is on (AskClient): without elicit, this client cannot be asked
	meta   []byte     // the _meta of its notifications; nil: none (a 2025-11-25 task's: the related task)
	// tasks: the request declared the tasks extension and its call may
	// become a task (parkedCall.startTask); set by the rounds' callers.
	tasks bool

	mu   sync.Mutex // guards done, sent, last; held while a notification is written
	done bool
	sent bool
	last float64
}

var _ ports.Caller = (*callCaller)(nil)

// newCallCaller returns the Caller of in's call, held in in itself: a
// request has at most one (a plain call's or a parked call's waiter).
func (e *Engine) newCallCaller(in *inbound, p *peer, elicit elicitFunc) *callCaller {
	c := &in.caller
	c.notify, c.who, c.elicit, c.askOn = p.notify, p.principal, elicit, e.rounds != nil
	if tok, ok := in.metaValue(metaProgressToken); ok && p.notify != nil && validProgressToken(tok) {
		c.token = tok
	}
	return c
}

// validProgressToken: MCP's ProgressToken is a string or an integer.
func validProgressToken(tok []byte) bool {
	_, ok := jsonrpc.ParseID(tok)
	return ok
}

func (c *callCaller) RequestPermission(ctx context.Context, p domain.PermissionPrompt) domain.Decision {
	if c.elicit == nil || c.isDone() {
		return domain.Deny
	}
	return decide(c.elicit(ctx, domain.PermissionForm(p)))
}

func (c *callCaller) Ask(ctx context.Context, p domain.AskPrompt) domain.Answer {
	form, ok := domain.AskForm(p)
	if c.elicit == nil || !ok || c.isDone() {
		return domain.Answer{}
	}
	return answerOf(p, c.elicit(ctx, form))
}

func (c *callCaller) Principal() ports.Principal { return c.who }

// Asking reports where the call's prompts go (ports.AskingOf).
func (c *callCaller) Asking() ports.Asking { return asking(c.elicit != nil, c.askOn) }

// asking is where prompts go: to the client when it can be asked, else
// nowhere, because asking is off or because this client cannot be asked.
func asking(canAsk, askOn bool) ports.Asking {
	switch {
	case canAsk:
		return ports.AskingClient
	case askOn:
		return ports.AskingUnable
	}
	return ports.AskingOff
}

func (c *callCaller) isDone() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

func (c *callCaller) Progress(ctx context.Context, progress, total float64, message string) {
	if c.token == nil || ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done || (c.sent && progress <= c.last) {
		return
	}
	if math.IsNaN(progress) || math.IsInf(progress, 0) || math.IsNaN(total) || math.IsInf(total, 0) {
		return // not JSON numbers
	}
	c.sent, c.last = true, progress
	c.notify(progressNotification(c.token, progress, total, message, c.meta))
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

// finish ends the call for the Caller: no progress after it returns, so
// nothing for this request follows its response.
func (c *callCaller) finish() {
	c.mu.Lock()
	c.done = true
	c.mu.Unlock()
}

// principalKey encodes a principal unambiguously (a JSON array of issuer,
// subject and client) for binding rounds; it stays in memory.
func principalKey(p ports.Principal) string {
	if p == (ports.Principal{}) {
		return ""
	}
	b, _ := json.Marshal([3]string{p.Issuer, p.Subject, p.Client})
	return string(b)
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

// declaresFormElicitation reports whether capabilities (a ClientCapabilities
// object) declare form-mode elicitation: "elicitation":{} or
// "elicitation":{"form":{}} (an elicitation object naming only url does not).
func declaresFormElicitation(caps []byte) bool {
	if !jsonrpc.IsObject(caps) {
		return false
	}
	el, ok := jsonrpc.Lookup(mustMembers(caps), "elicitation")
	if !ok || !jsonrpc.IsObject(el) {
		return false
	}
	ms := mustMembers(el)
	if len(ms) == 0 {
		return true
	}
	_, form := jsonrpc.Lookup(ms, "form")
	return form
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
