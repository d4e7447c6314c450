package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// Quick is the scripted Session with every call bounded, for fuzz tests:
// the slow tool returns at once, a "slow" submission is answered as a
// quick one and progress runs a fixed number of steps whatever was asked,
// so a fuzzed input exercises admission and framing, not the fake's
// blocking. It counts the calls that reach it, so a test can tell whether
// a refused request did.
type Quick struct {
	*Session
	progress json.RawMessage
	calls    atomic.Int64
}

// NewQuick returns a Quick over a fresh scripted Session whose progress
// tool reports steps steps.
func NewQuick(steps int) *Quick {
	return &Quick{Session: New(), progress: json.RawMessage(fmt.Sprintf(`{"n":%d}`, steps))}
}

// InvokeTool counts the call and runs it bounded.
func (q *Quick) InvokeTool(ctx context.Context, name string, args json.RawMessage, c ports.Caller) (domain.Envelope, error) {
	q.calls.Add(1)
	switch name {
	case "slow":
		return domain.Envelope{Success: true, ToolName: name}, nil
	case "progress":
		args = q.progress
	}
	return q.Session.InvokeTool(ctx, name, args, c)
}

// Submit counts the turn and runs it bounded.
func (q *Quick) Submit(ctx context.Context, s ports.Submission, c ports.Caller) (ports.TurnResult, error) {
	q.calls.Add(1)
	if s.Prompt == "slow" {
		s.Prompt = "quick"
	}
	return q.Session.Submit(ctx, s, c)
}

// Calls is how many tool calls and turns have reached the session.
func (q *Quick) Calls() int64 { return q.calls.Load() }
