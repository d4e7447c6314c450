package agent

import (
	"context"
	"errors"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// through; prompts pass through bounded by ApprovalTimeout each; progress
// joins the turn's counter, labelled with the tool's name.
type toolCaller struct {
	ports.Caller
	turn *turn
	tool string
}

// Asking forwards to the turn's Caller (ports.AskingOf).
func (c toolCaller) Asking() ports.Asking { return ports.AskingOf(c.Caller) }

func (c toolCaller) Progress(_ context.Context, _, _ float64, message string) {
	if message == "" {
		message = "working"
	}
	c.turn.report.send(c.tool + ": " + message)
}

// FileChanged keeps a change the tool made for the turn's diffs
// ([ports.ChangeReporter]): the inner session reports each write that
// landed, so the agent never reads the workspace itself.
func (c toolCaller) FileChanged(fc ports.FileChange) {
	c.turn.changes.add(fc)
	c.turn.r.live.changed(fc.Path)
}

var _ ports.ChangeReporter = toolCaller{}

// RequestPermission asks on a ctx bounded by ApprovalTimeout: a prompt no
// one answers (the client walked away) settles closed then, not at the end
// of the turn or of the carrier's round.
func (c toolCaller) RequestPermission(ctx context.Context, p domain.PermissionPrompt) domain.Decision {
	defer c.turn.r.live.waiting(p)() // the view shows it while the host's dialog asks
	return bounded(ctx, c, "permission", func(ctx context.Context) domain.Decision { return c.Caller.RequestPermission(ctx, p) })
}

// Ask asks on a ctx bounded by ApprovalTimeout, as RequestPermission.
func (c toolCaller) Ask(ctx context.Context, p domain.AskPrompt) domain.Answer {
	return bounded(ctx, c, "question", func(ctx context.Context) domain.Answer { return c.Caller.Ask(ctx, p) })
}

// bounded runs ask on ctx bounded by ApprovalTimeout, and ended at once
// when a new submission supersedes the turn, and notes a prompt that ran
// out of time while the turn itself went on. While it waits, the turn
// counts as waiting on a prompt (running.prompts).
func bounded[T any](ctx context.Context, c toolCaller, kind string, ask func(context.Context) T) T {
	r := c.turn.r
	r.prompts.Add(1)
	defer r.prompts.Add(-1)
	actx, cancel := context.WithTimeout(ctx, c.turn.s.opts.ApprovalTimeout)
	defer cancel()
	defer context.AfterFunc(r.superseded, cancel)()
	answer := ask(actx)
	c.settled(ctx, actx, kind)
	return answer
}

// settled notes a prompt that ran out of ApprovalTimeout while the turn
// itself went on: the turn stops after this call.
func (c toolCaller) settled(ctx, actx context.Context, kind string) {
	if ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		c.turn.stopAt(ports.StopPromptUnanswered, c.tool)
		c.turn.s.log.Info("prompt unanswered", "tool", c.tool, "kind", kind, "waitedMs", c.turn.s.opts.ApprovalTimeout.Milliseconds())
	}
}
