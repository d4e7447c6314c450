package httploopback_test

import (
	"context"
	"io"
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
	select {
	case <-churn.Established():
	case <-time.After(guard):
		t.Fatal("the idle connections were not established")
	}
	for i := range 5 {
		tr := &http.Transport{DisableKeepAlives: true}
		client := &http.Client{Transport: tr}
		ctx, cancel := context.WithTimeout(t.Context(), 4*lockoutBound)
		begin := time.Now()
		resp, err := client.Do(e.request(ctx, ping))
		took := time.Since(begin)
		if err != nil {
			cancel()
			t.Fatalf("request %d: %v after %v (%d idle connections closed so far)", i, err, took.Round(time.Millisecond), churn.Closed())
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
		if took > lockoutBound {
			t.Errorf("request %d took %v with idle connections churning, want ≤ %v", i, took.Round(time.Millisecond), lockoutBound)
		}
		t.Logf("request %d answered in %v; %d idle connections closed so far", i, took.Round(time.Millisecond), churn.Closed())
	}
}
