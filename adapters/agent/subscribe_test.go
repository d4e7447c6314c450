package agent_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/agent"
	"github.com/agentmcp/agentmcp/adapters/memstore"
	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/ports"
)

// TestAgentSubscriptions: a subscription to one of the principal's
// conversations is told each time a turn of it is stored, and stops being
// told once cancelled; one to a turn's changes is held and never told; a
// conversation the principal does not have (yet, or at all: another's) is
// not found; and the workspace's file subscriptions survive the wrapping.
func TestAgentSubscriptions(t *testing.T) {
	store := memstore.New(memstore.Options{})
	r := newRig(t, rigOptions{
		files:     map[string]string{"a.txt": "a\n"},
		script:    []chatscript.Reply{text("one"), text("two"), text("three")},
		agent:     agent.Options{Store: store, Root: "/root"},
		resources: workspace.WorkspaceURIs,
	})
	sub := r.session.Features().Subscriber
	if sub == nil {
		t.Fatal("the agent serves no subscriptions")
	}
	ctx := t.Context()
	local := ports.Principal{}
	alice := ports.Principal{Issuer: "https://issuer", Subject: "alice", Client: "c"}
	const conv = "agentmcp://conversations/default"
	if _, err := sub.SubscribeResource(ctx, conv, local, func() {}); !errors.Is(err, ports.ErrResourceNotFound) {
		t.Fatalf("a conversation not yet held: %v, want not found", err)
	}
	r.turn(t, "first", nil)
	var told atomic.Int32
	cancel, err := sub.SubscribeResource(ctx, conv, local, func() { told.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sub.SubscribeResource(ctx, conv, alice, func() {}); !errors.Is(err, ports.ErrResourceNotFound) {
		t.Fatalf("another principal's conversation: %v, want not found", err)
	}
	var changesTold atomic.Int32
	cancelChanges, err := sub.SubscribeResource(ctx, conv+"/turns/1/changes", local, func() { changesTold.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sub.SubscribeResource(ctx, conv+"/turns/9/changes", local, func() {}); !errors.Is(err, ports.ErrResourceNotFound) {
		t.Fatalf("a turn that is not stored: %v, want not found", err)
	}
	r.turn(t, "second", nil)
	if n := told.Load(); n != 1 {
		t.Fatalf("told %d times after one more turn, want 1", n)
	}
	cancel()
	r.turn(t, "third", nil)
	if n, c := told.Load(), changesTold.Load(); n != 1 || c != 0 {
		t.Fatalf("after cancel: told %d times (want 1), the changes' subscription %d (want 0)", n, c)
	}
	cancelChanges()

	updates := make(chan struct{}, 1)
	cancelFile, err := sub.SubscribeResource(ctx, "agentmcp://workspace/a.txt", local, func() {
		select {
		case updates <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatalf("the workspace's file through the agent: %v", err)
	}
	defer cancelFile()
	if err := os.WriteFile(filepath.Join(r.root, "a.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-updates:
	case <-time.After(patience):
		t.Fatal("no update of the workspace's file")
	}
}
