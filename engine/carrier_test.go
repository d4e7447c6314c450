package engine_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
)

// recordingCarrier is a carrier that ends when told to (end) or stopped,
// and records, when stopped, whether its engine still served calls.
type recordingCarrier struct {
	eng          *engine.Engine
	ended        chan error
	once         sync.Once
	stops        int
	servedAtStop bool
	mu           sync.Mutex
}

func newRecordingCarrier(eng *engine.Engine) *recordingCarrier {
	return &recordingCarrier{eng: eng, ended: make(chan error, 1)}
}

func (c *recordingCarrier) Start(context.Context) error { return nil }

func (c *recordingCarrier) Wait() error { err := <-c.ended; c.ended <- err; return err }

func (c *recordingCarrier) end(err error) { c.once.Do(func() { c.ended <- err }) }

func (c *recordingCarrier) Stop(context.Context) error {
	c.mu.Lock()
	c.stops++
	c.servedAtStop = !shutDown(c.eng)
	c.mu.Unlock()
	c.end(nil)
	return nil
}

// shutDown reports whether eng answers a tools/call "server is shutting
// down".
func shutDown(eng *engine.Engine) bool {
	r := eng.Exchange(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`), engine.ExchangeOptions{})
	return strings.Contains(string(r.Body), "server is shutting down")
}

// TestRunStopsCarriersThenShutsDown: Run serves until ctx ends, then stops
// every carrier while the engine still serves, then shuts the engine down;
// it returns nil.
func TestRunStopsCarriersThenShutsDown(t *testing.T) {
	eng, err := engine.New(fake.New(), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := newRecordingCarrier(eng), newRecordingCarrier(eng)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- eng.Run(ctx, a, b) }()
	cancel()
	if err := <-ran; err != nil {
		t.Errorf("Run = %v after ctx ended, want nil", err)
	}
	for i, c := range []*recordingCarrier{a, b} {
		if c.stops != 1 || !c.servedAtStop {
			t.Errorf("carrier %d: stopped %d times, engine serving at its Stop: %v; want once, while serving", i, c.stops, c.servedAtStop)
		}
	}
	if !shutDown(eng) {
		t.Error("the engine still serves after Run")
	}
}

// TestRunEndsWithACarrier: when one carrier ends on its own, Run stops the
// others and returns that carrier's failure (nil for a clean end).
func TestRunEndsWithACarrier(t *testing.T) {
	failure := errors.New("stdout broke")
	for _, want := range []error{nil, failure} {
		eng, err := engine.New(fake.New(), engine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		a, b := newRecordingCarrier(eng), newRecordingCarrier(eng)
		a.end(want)
		if err := eng.Run(context.Background(), a, b); !errors.Is(err, want) || (want == nil && err != nil) {
			t.Errorf("Run = %v, want %v", err, want)
		}
		if b.stops != 1 || !b.servedAtStop || !shutDown(eng) {
			t.Errorf("the other carrier: stopped %d times (serving: %v); engine shut down after: %v", b.stops, b.servedAtStop, shutDown(eng))
		}
	}
}
