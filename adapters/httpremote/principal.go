package httpremote

import (
	"context"

	"github.com/agentmcp/agentmcp/adapters/streamable"
	"github.com/agentmcp/agentmcp/ports"
)

// withPrincipal binds an admitted request to its principal: the framing
// passes p to engine.Exchange as ExchangeOptions.Principal, so an
// input-required round (docs/SPEC.md §6) minted for one principal (issuer + subject
// + client) can only be resumed, and only counts against the per-principal
// bound, for that principal, and the session's Caller reports p.
func withPrincipal(ctx context.Context, p ports.Principal) context.Context {
	return streamable.WithPrincipal(ctx, p)
}
