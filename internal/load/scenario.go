package load

import (
	"context"
	"testing"
	"time"
)

// Scenario is one load test: Clients goroutines sending Total calls while
// the misbehaving clients Misbehave starts run beside them.
type Scenario struct {
	Name           string
	Clients, Total int
	Call           Call
	// Misbehave starts the misbehaving clients and returns what stops
	// them (and reports what they did).
	Misbehave func() (stop func() string)
	// Idle closes the well-behaved clients' idle connections.
	Idle func()
}

// Report is what a scenario saw.
type Report struct {
	Result        Result
	Before, After Memory
	Settled       bool
	Misbehaved    string
}

// Run runs the scenario twice with the same clients: a warm-up of a tenth
// of Total (which grows the runtime's and the carrier's pools and caches
// to their working size), then the whole. Around the second run the
// carrier is idle — misbehaving clients stopped, idle connections closed —
// and its live heap is measured; after, it must come back within 10 % of
// before (plus 64 KiB), which a leak proportional to the calls would not.
func (s Scenario) Run(t testing.TB) Report {
	t.Helper()
	stop := s.Misbehave()
	warm := Run(context.Background(), s.Clients, max(1, s.Total/10), s.Call)
	stop()
	s.Idle()
	if warm.Refused+warm.Wrong > 0 {
		t.Errorf("%s warm-up: %v: %q", s.Name, warm, warm.Details)
	}
	before := Steady(5 * time.Second)
	stop = s.Misbehave()
	res := Run(context.Background(), s.Clients, s.Total, s.Call)
	misbehaved := stop()
	s.Idle()
	after, settled := Settle(before, 0.10, 64<<10, 5*time.Second)
	return Report{Result: res, Before: before, After: after, Settled: settled, Misbehaved: misbehaved}
}
