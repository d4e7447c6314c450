package fake

import (
	"context"
	"encoding/json"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// Held is a Session whose slow tool tells when its context ends and then
// holds its return until let go: a session slow to notice cancellation, so
// a test can see that a cancelled call still counts until its goroutine
// has returned. With arguments {"ask":true} the slow tool first asks
// permission (through its Caller), then blocks the same way, whatever the
// answer. Every other tool is the scripted Session's.
type Held struct {
	*Session
	ended    chan error    // the cause of each slow call's context end
	returned chan struct{} // one per slow call that returned
	let      chan struct{} // closed by Let
	asked    chan struct{} // one per permission prompt answered (or settled)
}

// NewHeld returns a Held over a fresh scripted Session.
func NewHeld() *Held {
	return &Held{
		Session:  New(),
		ended:    make(chan error, 64),
		returned: make(chan struct{}, 64),
		let:      make(chan struct{}),
		asked:    make(chan struct{}, 64),
	}
}

// CtxEnded receives, for each slow call, the cause of its context's end
// (context.Cause), as soon as the tool sees it.
func (h *Held) CtxEnded() <-chan error { return h.ended }

// Returned receives once for each slow call that has returned.
func (h *Held) Returned() <-chan struct{} { return h.returned }

// Asked receives once for each permission prompt of a slow call that came
// back (answered or settled closed).
func (h *Held) Asked() <-chan struct{} { return h.asked }

// Let lets every held slow call return, now and from now on. Call once.
func (h *Held) Let() { close(h.let) }

// InvokeTool runs slow as described on Held; others as Session does.
func (h *Held) InvokeTool(ctx context.Context, name string, args json.RawMessage, caller ports.Caller) (domain.Envelope, error) {
	if name != "slow" {
		return h.Session.InvokeTool(ctx, name, args, caller)
	}
	h.note(name)
	defer func() { h.returned <- struct{}{} }()
	defer h.done(name)
	var a struct{ Ask bool }
	_ = json.Unmarshal(args, &a)
	if a.Ask {
		caller.RequestPermission(ctx, domain.PermissionPrompt{Tool: name, Summary: "wait"})
		h.asked <- struct{}{}
	}
	<-ctx.Done()
	h.ended <- context.Cause(ctx)
	<-h.let
	return domain.Envelope{}, ctx.Err()
}

var _ ports.Session = (*Held)(nil)
