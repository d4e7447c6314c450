package load

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// Clients is how many well-behaved clients every carrier's load test runs
// at once.
const Clients = 64

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

// Check logs what the scenario named name saw and fails t unless all total
// requests were answered, none refused or wrong, and the live heap came
// back within 10 % of before.
func (r Report) Check(t testing.TB, name string, total int) {
	t.Helper()
	res := r.Result
	t.Logf("%s: %v", name, res)
	t.Logf("idle before: %v; after: %v; goroutines after stopping: %d", r.Before, r.After, runtime.NumGoroutine())
	t.Logf("beside them: %s", r.Misbehaved)
	if res.Requests != total || res.Refused != 0 || res.Wrong != 0 {
		t.Errorf("%d of %d requests answered; %d refused, %d wrong: %q", res.Requests, total, res.Refused, res.Wrong, res.Details)
	}
	if !r.Settled {
		t.Errorf("live heap after the load %v, before %v: not within 10 %%", r.After, r.Before)
	}
}

// Stopper is one thing a load test stops when the load is over, named for
// its failure (e.g. "Stop", "engine Shutdown").
type Stopper struct {
	What string
	Stop func(context.Context) error
}

// Stop stops each in order (a carrier before the engine it serves) within
// one 10 s deadline and fails t for each that returns an error.
func Stop(t testing.TB, stops ...Stopper) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range stops {
		if err := s.Stop(ctx); err != nil {
			t.Errorf("%s: %v", s.What, err)
		}
	}
}
