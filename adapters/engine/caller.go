package engine

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// callCaller is the ports.Caller of one request outside input-required
// rounds. Prompts go to the client through elicit (a legacy stdio client
// that can answer forms) or settle closed at once (docs/SPEC.md §6); progress goes out as
// notifications/progress when the request carried a progressToken, only
// while the call is in flight and only when it increases (MCP: progress MUST
// increase with each notification).
type callCaller struct {
	token  json.RawMessage // nil: the client asked for no progress
	notify func(msg []byte)
	who    ports.Principal
	// elicit sends a form to the client and returns its ElicitResult, or nil
	// when it could not be answered; nil means prompts settle closed.
	elicit func(ctx context.Context, f domain.Form) json.RawMessage

	mu   sync.Mutex // guards done, sent, last; held while a notification is written
	done bool
	sent bool
	last float64
}

var _ ports.Caller = (*callCaller)(nil)

func newCallCaller(meta map[string]json.RawMessage, notify func([]byte), who ports.Principal) *callCaller {
	c := &callCaller{notify: notify, who: who}
	if tok, ok := meta[metaProgressToken]; ok && notify != nil && validProgressToken(tok) {
		c.token = tok
	}
	return c
}

// validProgressToken: MCP's ProgressToken is a string or an integer.
func validProgressToken(tok json.RawMessage) bool {
	_, ok := parseID(tok)
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

// principalKey encodes a principal unambiguously (a JSON array of issuer,
// subject and client) for binding rounds; it stays in memory.
func principalKey(p ports.Principal) string {
	b, _ := json.Marshal([3]string{p.Issuer, p.Subject, p.Client})
	return string(b)
}

func (c *callCaller) isDone() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

type progressParams struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      float64         `json:"progress"`
	Total         float64         `json:"total,omitempty"`
	Message       string          `json:"message,omitempty"`
}

type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
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
	if total < 0 {
		total = 0
	}
	b, err := domain.MarshalJSON(notification{JSONRPC: "2.0", Method: "notifications/progress",
		Params: progressParams{ProgressToken: c.token, Progress: progress, Total: total, Message: message}})
	if err != nil {
		return
	}
	c.sent, c.last = true, progress
	c.notify(b)
}

// finish ends the call for the Caller: no progress after it returns, so
// nothing for this request follows its response.
func (c *callCaller) finish() {
	c.mu.Lock()
	c.done = true
	c.mu.Unlock()
}
