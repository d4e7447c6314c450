package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/ports"
)

// ctxWatcher is the fake session with a "slow" tool that reports when its
// ctx ends.
type ctxWatcher struct {
	*fake.Session
	started, ended chan struct{}
}

func (s *ctxWatcher) InvokeTool(ctx context.Context, name string, args json.RawMessage, c ports.Caller) (domain.Envelope, error) {
	if name != "slow" {
		return s.Session.InvokeTool(ctx, name, args, c)
	}
	close(s.started)
	<-ctx.Done()
	close(s.ended)
	return domain.Envelope{}, ctx.Err()
}

// TestCancelledModernCallEndsTheTool: a modern call running under rounds
// (AskClient on, form elicitation declared) whose request is cancelled
// ends at once, its tool's ctx included (docs/SPEC.md §6: "ends it at
// once (the prompt settles closed, the tool's ctx ends …)").
func TestCancelledModernCallEndsTheTool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &ctxWatcher{Session: fake.New(), started: make(chan struct{}), ended: make(chan struct{})}
		e, err := engine.New(s, engine.Options{AskClient: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { shutdown(t, e) })
		c := newClient(t, e)
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + modernMeta + `,"name":"slow","arguments":{}}}`)
		<-s.started
		c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
		synctest.Wait()
		select {
		case <-s.ended:
		default:
			t.Fatal("the cancelled call's tool is still running: its ctx did not end")
		}
	})
}

// TestRoundsProgressFromTheStart: a modern call under rounds that reports
// progress as soon as it starts has every report delivered, the first
// included (the call's goroutine can report before the request starts
// waiting for it). Repeated, since losing it took a race.
func TestRoundsProgressFromTheStart(t *testing.T) {
	e, _ := askEngine(t, engine.Options{})
	c := newClient(t, e)
	for i := range 30 {
		id := fmt.Sprint(i + 1)
		c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"_meta":{"progressToken":"p` + id + `",` + modernMeta[len(`"_meta":{`):] + `,"name":"progress","arguments":{"n":2}}}`)
		var got []float64
		for {
			m := c.recv()
			if m["method"] == "notifications/progress" {
				got = append(got, m["params"].(map[string]any)["progress"].(float64))
				continue
			}
			break
		}
		if len(got) != 2 || got[0] != 1 {
			t.Fatalf("call %d: progress %v, want [1 2]", i+1, got)
		}
	}
}
