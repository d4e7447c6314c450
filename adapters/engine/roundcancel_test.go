package engine_test

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"

	"github.com/agentmcp/agentmcp/adapters/engine"
	"github.com/agentmcp/agentmcp/domain"
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
		t.Cleanup(e.Shutdown)
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
