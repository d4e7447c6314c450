package httploopback_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/httploopback"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/hostile"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
)

// lockoutBound is how long a token holder may wait while idle connections
// fill the host (docs/SPEC.md §5.2: "a few seconds").
const lockoutBound = 3 * time.Second

// TestIdleConnectionsDoNotLockOutTokenHolders: a process without the token
// holds 400 idle connections (the cap is 128) and reconnects as each is
// closed; a token holder's request on a new connection is still answered
// within a few seconds, again and again (docs/SPEC.md §5.2).
func TestIdleConnectionsDoNotLockOutTokenHolders(t *testing.T) {
	leakcheck.Check(t)
	e := start(t, fake.New(), httploopback.Limits{})
	churn := hostile.Churn(e.addr, 400)
	defer churn.Stop()
	hostile.CheckNotLockedOut(t, churn, func(ctx context.Context) *http.Request { return e.request(ctx, ping) }, lockoutBound, guard)
}
