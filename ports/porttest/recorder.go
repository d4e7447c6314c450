package porttest

import (
	"context"
	"fmt"
	"sync"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// Recorder is a [ports.Caller] for tests: it records every prompt and
// progress report, answers permission prompts with Allow (deny by default)
// and asks with Answer (a cancel by default), and can hold a call at a prompt or a progress report
// through its hooks. Set the exported fields before handing it to a call.
//
// Once the test marks its call finished ([Recorder.Finish]), the Recorder
// answers closed and records the use as late, as a carrier's Caller would
// after the call has ended.
type Recorder struct {
	// Name identifies the call in failure messages.
	Name string

	// Allow answers permission prompts with AllowOnce instead of Deny.
	Allow bool

	// OnPermission, when set, runs inside RequestPermission before it
	// answers; blocking in it holds the call there. If ctx has ended when it
	// returns, the answer is Deny.
	OnPermission func(ctx context.Context, p domain.PermissionPrompt)

	// OnProgress, when set, runs inside Progress; blocking in it holds the
	// call there.
	OnProgress func(ctx context.Context)

	// Answer, when set, answers asks; nil cancels every ask.
	Answer func(p domain.AskPrompt) domain.Answer

	// As is the Principal the call speaks for (zero: the local user).
	As ports.Principal

	mu       sync.Mutex // guards the fields below
	perms    []domain.PermissionPrompt
	asks     []domain.AskPrompt
	progress []float64
	late     []string
	finished bool
}

var _ ports.Caller = (*Recorder)(nil)

// RequestPermission records p and answers Allow's decision.
func (c *Recorder) RequestPermission(ctx context.Context, p domain.PermissionPrompt) domain.Decision {
	if !c.record(func() { c.perms = append(c.perms, p) }, fmt.Sprintf("RequestPermission(%+v)", p)) {
		return domain.Deny
	}
	if c.OnPermission != nil {
		c.OnPermission(ctx, p)
	}
	if !c.Allow || ctx.Err() != nil {
		return domain.Deny
	}
	return domain.AllowOnce
}

// Ask records p and answers cancelled.
func (c *Recorder) Ask(ctx context.Context, p domain.AskPrompt) domain.Answer {
	if !c.record(func() { c.asks = append(c.asks, p) }, fmt.Sprintf("Ask(%+v)", p)) || c.Answer == nil || ctx.Err() != nil {
		return domain.Answer{}
	}
	return c.Answer(p)
}

// Principal returns As.
func (c *Recorder) Principal() ports.Principal { return c.As }

// Progress records progress and runs OnProgress.
func (c *Recorder) Progress(ctx context.Context, progress, total float64, message string) {
	if !c.record(func() { c.progress = append(c.progress, progress) }, fmt.Sprintf("Progress(%v, %v, %q)", progress, total, message)) {
		return
	}
	if c.OnProgress != nil {
		c.OnProgress(ctx)
	}
}

// record runs add under the lock unless the call has finished; then it
// records use as late and reports false.
func (c *Recorder) record(add func(), use string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished {
		c.late = append(c.late, use)
		return false
	}
	add()
	return true
}

// Finish marks the call finished: later uses answer closed and are recorded
// as late. The suite calls it as soon as InvokeTool or Submit returns.
func (c *Recorder) Finish() {
	c.mu.Lock()
	c.finished = true
	c.mu.Unlock()
}

// Requests returns copies of the permission prompts and asks received.
func (c *Recorder) Requests() ([]domain.PermissionPrompt, []domain.AskPrompt) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]domain.PermissionPrompt(nil), c.perms...), append([]domain.AskPrompt(nil), c.asks...)
}

// Prompts describes every permission prompt and ask received, one string each.
func (c *Recorder) Prompts() []string {
	perms, asks := c.Requests()
	var out []string
	for _, p := range perms {
		out = append(out, fmt.Sprintf("permission %+v", p))
	}
	for _, a := range asks {
		out = append(out, fmt.Sprintf("ask %+v", a))
	}
	return out
}

// ProgressReports returns the progress values reported, in order.
func (c *Recorder) ProgressReports() []float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]float64(nil), c.progress...)
}

// LateUses describes every use after Finish.
func (c *Recorder) LateUses() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.late...)
}
