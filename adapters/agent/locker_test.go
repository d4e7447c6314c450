package agent_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/agent"
	"github.com/agentmcp/agentmcp/adapters/memstore"
	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/ports"
)

// lockedStore is a store shared by several processes, as far as the
// agent sees it: a ports.ConversationLocker whose claims a test makes for
// "another replica" too. (adapters/postgres tests the real one.)
type lockedStore struct {
	ports.ConversationStore
	mu   sync.Mutex
	held map[ports.ConversationRef]string // who holds each: "me" or "other"
	fail error
}

func (s *lockedStore) HoldTurn(ctx context.Context, ref ports.ConversationRef) (func(), bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, false, s.fail
	}
	if s.held[ref] != "" {
		return nil, false, nil
	}
	s.held[ref] = "me"
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.held[ref] == "me" {
			delete(s.held, ref)
		}
	}, true, nil
}

func (s *lockedStore) holder(ref ports.ConversationRef) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[ref]
}

// TestTurnHeldAcrossReplicas: with a store that locks conversations, a
// turn holds its conversation while it runs and gives it back when it
// ends (answered or failed); a submission while another replica holds it
// is refused as busy there, the model never asked and nothing stored; a
// store that cannot claim fails the turn with the store's error.
func TestTurnHeldAcrossReplicas(t *testing.T) {
	store := &lockedStore{ConversationStore: memstore.New(memstore.Options{}), held: map[ports.ConversationRef]string{}}
	ref := ports.RefOf("/work/a", ports.Principal{})
	var during string
	r := newRig(t, rigOptions{agent: agent.Options{Store: store, Root: "/work/a"}, answer: func(req *chatscript.Request) chatscript.Reply {
		during = store.holder(ref)
		return text("ok")
	}})
	r.turn(t, "one", newCaller())
	if during != "me" || store.holder(ref) != "" {
		t.Errorf("during the turn the conversation was held by %q, after it by %q; want me, then nobody", during, store.holder(ref))
	}

	store.mu.Lock()
	store.held[ref] = "other"
	store.mu.Unlock()
	requests := len(r.srv.Requests())
	_, err := r.session.Submit(t.Context(), ports.Submission{Prompt: "two"}, ports.ClosedCaller{})
	if !errors.Is(err, agent.ErrBusyElsewhere) || !errors.Is(err, ports.ErrRefused) {
		t.Errorf("a submission while another replica holds the conversation: %v, want ErrBusyElsewhere", err)
	}
	if len(r.srv.Requests()) != requests {
		t.Error("the refused submission reached the model")
	}
	if turns, _ := store.Load(t.Context(), ref); len(turns) != 1 {
		t.Errorf("the store holds %d turns, want the first only", len(turns))
	}
	// Another conversation of the same principal is not held.
	if _, err := r.session.Submit(t.Context(), ports.Submission{Prompt: "three", Conversation: "side"}, ports.ClosedCaller{}); err != nil {
		t.Errorf("another conversation while this one is held elsewhere: %v", err)
	}

	store.mu.Lock()
	delete(store.held, ref)
	store.fail = errors.New("connection refused")
	store.mu.Unlock()
	_, err = r.session.Submit(t.Context(), ports.Submission{Prompt: "four"}, ports.ClosedCaller{})
	if err == nil || errors.Is(err, ports.ErrRefused) || err.Error() != "the conversation cannot be claimed: the conversation store failed (the server's log says why)" {
		t.Errorf("a store that cannot claim: %v", err)
	}
	store.mu.Lock()
	store.fail = nil
	store.mu.Unlock()
	r.turn(t, "five", newCaller())
	if store.holder(ref) != "" {
		t.Errorf("after the turn the conversation is held by %q", store.holder(ref))
	}
}
