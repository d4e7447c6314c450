package engine_test

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
)

// TestStopDuringTheDrainStopsAtOnce: once the input has ended, requests in
// flight may finish for DrainTimeout; a stop meanwhile (the carrier's ctx)
// cancels them at once as shutting down rather than waiting out the drain
// (docs/SPEC.md §3 "Ending"). Every reason to stop reaches the stream
// through its one context, including during the drain.
func TestStopDuringTheDrainStopsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fake.New()
		started := s.Started()
		e, err := engine.New(s, engine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer shutdown(t, e)
		c := newClientOpts(t, e, engine.ConnOptions{DrainTimeout: time.Hour})
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{}}}`)
		<-started
		c.in.Close() // the input ends: the drain begins
		synctest.Wait()
		c.cancel() // the carrier stops
		synctest.Wait()
		select {
		case err := <-c.done:
			c.done <- err // for the cleanup
			if err != nil {
				t.Errorf("ServeConn = %v, want nil", err)
			}
		default:
			t.Fatal("ServeConn still drains after its ctx ended")
		}
		m := c.recv()
		if text, _ := result(t, m)["content"].([]any)[0].(map[string]any)["text"].(string); !strings.Contains(text, "shutting down") {
			t.Errorf("the call in flight answered %v, want server is shutting down", m)
		}
	})
}
