package memstore_test

import (
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/memstore"
	"github.com/agentmcp/agentmcp/ports"
	"github.com/agentmcp/agentmcp/ports/porttest"
)

func TestContract(t *testing.T) {
	porttest.TestConversationStore(t, func(_ *testing.T, b porttest.StoreBounds) ports.ConversationStore {
		return memstore.New(memstore.Options{MaxConversations: b.MaxConversations, MaxBytes: b.MaxBytes})
	})
}

// TestBounds: the least recently updated conversation goes first past the
// conversation and byte caps, and an old one expires.
func TestBounds(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	s := memstore.New(memstore.Options{MaxConversations: 2, MaxBytes: 250, MaxAge: time.Hour, Now: func() time.Time { return now }})
	ref := func(root string) ports.ConversationRef { return ports.RefOf(root, ports.Principal{}) }
	turn := ports.Turn{Messages: []ports.Message{{Role: ports.RoleUser, Content: "x"}}, Bytes: 100}
	for _, root := range []string{"/a", "/b", "/c"} {
		if _, err := s.Append(t.Context(), ref(root), turn, ports.AppendOptions{MaxBytes: 1000}); err != nil {
			t.Fatal(err)
		}
	}
	list, _ := s.List(t.Context(), ports.ConversationFilter{})
	if len(list) != 2 || list[0].Ref != ref("/c") || list[1].Ref != ref("/b") {
		t.Fatalf("after three conversations with a cap of two: %+v, want /c, /b", list)
	}
	turn.Bytes = 200
	if _, err := s.Append(t.Context(), ref("/b"), turn, ports.AppendOptions{MaxBytes: 1000}); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.List(t.Context(), ports.ConversationFilter{}); len(list) != 1 || list[0].Ref != ref("/b") {
		t.Fatalf("300 bytes over a cap of 250: %+v, want /b alone", list)
	}
	now = now.Add(2 * time.Hour)
	if got, _ := s.Load(t.Context(), ref("/b")); len(got) != 0 {
		t.Errorf("a conversation two hours old with a one-hour limit still loads")
	}
}
