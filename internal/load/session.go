package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// Session is a session for load tests: it keeps nothing per call (the
// scripted fake records every call, which a long run would see as
// growth). Its tools:
//
//	echo {text}  → success envelope whose result is the arguments
//	write {text} → asks permission; success only when allowed once
//	slow {}      → blocks until its context ends
type Session struct{}

var _ ports.Session = Session{}

var objectSchema = json.RawMessage(`{"type":"object"}`)

// RuntimeTools returns echo, write and slow.
func (Session) RuntimeTools(context.Context) ([]domain.Tool, error) {
	return []domain.Tool{
		{Name: "echo", Description: "Echo the arguments", InputSchema: objectSchema},
		{Name: "write", Description: "Needs permission", InputSchema: objectSchema},
		{Name: "slow", Description: "Block until cancelled", InputSchema: objectSchema},
	}, nil
}

// InvokeTool runs one of the tools above.
func (Session) InvokeTool(ctx context.Context, name string, args json.RawMessage, caller ports.Caller) (domain.Envelope, error) {
	switch name {
	case "echo":
		return domain.Envelope{Success: true, ToolName: name, Result: args}, nil
	case "write":
		if caller.RequestPermission(ctx, domain.PermissionPrompt{Tool: name, Summary: "write text"}) != domain.AllowOnce {
			return domain.Envelope{Success: false, ToolName: name, Error: "Permission denied"}, nil
		}
		return domain.Envelope{Success: true, ToolName: name}, nil
	case "slow":
		<-ctx.Done()
		return domain.Envelope{}, errors.New("cancelled")
	}
	return domain.Envelope{}, fmt.Errorf("no such tool %q", name)
}

// Submit answers with the prompt.
func (Session) Submit(_ context.Context, s ports.Submission, _ ports.Caller) (ports.TurnResult, error) {
	return ports.TurnResult{Response: s.Prompt}, nil
}
