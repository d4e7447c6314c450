package agent

import (
	"context"
	"errors"
	"net/url"
	"strconv"

	"github.com/agentmcp/agentmcp/ports"
)

// AgentName is the gen_ai.agent.name the agent reports to its Observer;
// Provider the gen_ai.provider.name of the OpenAI-compatible endpoints it
// drives (the conventions' "openai": the API spoken, whoever serves it).
const (
	AgentName = "agentmcp"
	Provider  = "openai"
)

// observedStep describes the session's model request for the Observer: the
// model and the endpoint's host and port, never its path or query.
func (s *Session) observedStep() ports.ObservedModelStep {
	d := s.model.Describe()
	o := ports.ObservedModelStep{Model: d.Model, Provider: Provider}
	if u, err := url.Parse(d.Endpoint); err == nil && u.Host != "" {
		o.ServerAddress = u.Hostname()
		port, _ := strconv.Atoi(u.Port())
		if port == 0 {
			port = 80
			if u.Scheme == "https" {
				port = 443
			}
		}
		o.ServerPort = port
	}
	return o
}

// stepEnd is a model step's outcome for the Observer.
func stepEnd(ctx context.Context, reply ports.AssistantMessage, err error) ports.ModelStepEnd {
	e := ports.ModelStepEnd{FinishReason: reply.FinishReason, Usage: reply.Usage}
	switch {
	case err == nil:
	case ctx.Err() != nil:
		e.ErrorType = "cancelled"
	case errors.Is(err, ports.ErrNoChoices):
		e.ErrorType = "no_choices"
	default:
		e.ErrorType = "_OTHER"
	}
	return e
}

// turnErrorType classifies a turn's failure: ctx is the submission's, tctx
// the turn's (with its timeout).
func turnErrorType(ctx, tctx context.Context, err error) string {
	switch {
	case err == nil:
		return ""
	case ctx.Err() != nil:
		return "cancelled"
	case tctx.Err() != nil:
		return "timeout"
	}
	return "_OTHER"
}
