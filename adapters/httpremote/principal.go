package httpremote

import (
	"context"

	"github.com/agentmcp/agentmcp/adapters/streamable"
)

// withPrincipal binds an admitted request to its principal: the framing
// passes id to engine.Exchange as ExchangeOptions.Principal, so an
// input-required round (docs/SPEC.md §6) minted for one principal (issuer + subject
// + client) can only be resumed, and only counts against the per-principal
// bound, for that principal.
func withPrincipal(ctx context.Context, id string) context.Context {
	return streamable.WithPrincipal(ctx, id)
}
