package porttest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/agentmcp/agentmcp/ports"
)

// TestConversationStore is the contract test of [ports.ConversationStore]
// (docs/SPEC.md §9). open returns an empty store without bounds of its own;
// every adapter runs it from its own tests.
//
// It proves what the agent relies on: a turn comes back as appended, whole
// and in order; conversations of another root or principal are apart; the
// byte budget drops the oldest whole turns and keeps the newest; List and
// Delete see what is stored; concurrent appends to one conversation lose
// none.
func TestConversationStore(t *testing.T, open func(t *testing.T) ports.ConversationStore) {
	a := ports.RefOf("/work/a", ports.Principal{})
	b := ports.RefOf("/work/b", ports.Principal{})
	alice := ports.RefOf("/work/a", ports.Principal{Issuer: "https://issuer", Subject: "alice", Client: "c"})

	t.Run("RoundTrip", func(t *testing.T) {
		s := open(t)
		want := []ports.Turn{sampleTurn(1), sampleTurn(2)}
		for _, turn := range want {
			if err := s.Append(t.Context(), a, turn, 1<<20); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Load(t.Context(), a)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Load = %v\nwant %v", got, want)
		}
		for _, ref := range []ports.ConversationRef{b, alice} {
			if got, err := s.Load(t.Context(), ref); err != nil || len(got) != 0 {
				t.Errorf("Load(%v) = %v, %v; want nothing: another root or principal", ref, got, err)
			}
		}
	})

	t.Run("Budget", func(t *testing.T) {
		s := open(t)
		for i := 1; i <= 5; i++ {
			turn := sampleTurn(i)
			turn.Bytes = 100
			if err := s.Append(t.Context(), a, turn, 250); err != nil {
				t.Fatal(err)
			}
		}
		got, _ := s.Load(t.Context(), a)
		if len(got) != 2 || got[0].Messages[0].Content != "prompt 4" || got[1].Messages[0].Content != "prompt 5" {
			t.Errorf("after 5 turns of 100 bytes within 250: %v, want turns 4 and 5", got)
		}
		big := sampleTurn(6)
		big.Bytes = 1000
		if err := s.Append(t.Context(), a, big, 250); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Load(t.Context(), a); len(got) != 1 || got[0].Messages[0].Content != "prompt 6" {
			t.Errorf("a turn larger than the budget: %v, want it alone", got)
		}
	})

	t.Run("ListDelete", func(t *testing.T) {
		s := open(t)
		for _, ref := range []ports.ConversationRef{a, alice, b} {
			if err := s.Append(t.Context(), ref, sampleTurn(1), 1<<20); err != nil {
				t.Fatal(err)
			}
		}
		list, err := s.List(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 3 || list[0].Ref != b || list[2].Ref != a || list[0].Turns != 1 || list[0].Bytes != int64(sampleTurn(1).Bytes) {
			t.Errorf("List = %+v, want b, alice, a (newest first), one turn each", list)
		}
		if err := s.Delete(t.Context(), alice); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(t.Context(), alice); err != nil {
			t.Errorf("deleting a missing conversation: %v", err)
		}
		if got, _ := s.Load(t.Context(), alice); len(got) != 0 {
			t.Errorf("deleted conversation still loads %v", got)
		}
		if list, _ := s.List(t.Context()); len(list) != 2 {
			t.Errorf("List after Delete = %+v", list)
		}
	})

	t.Run("ConcurrentAppends", func(t *testing.T) {
		s := open(t)
		const n = 20
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() { errs <- s.Append(t.Context(), a, sampleTurn(i), 1<<20) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		got, _ := s.Load(t.Context(), a)
		seen := map[string]bool{}
		for _, turn := range got {
			seen[turn.Messages[0].Content] = true
		}
		if len(seen) != n {
			t.Errorf("%d distinct turns stored of %d appended", len(seen), n)
		}
	})
}

// sampleTurn is a turn with every kind of message: a prompt, an assistant
// tool call, its result and the answer.
func sampleTurn(i int) ports.Turn {
	msgs := []ports.Message{
		{Role: ports.RoleUser, Content: fmt.Sprintf("prompt %d", i)},
		{Role: ports.RoleAssistant, ToolCalls: []ports.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"a.txt"}`}}},
		{Role: ports.RoleTool, ToolCallID: "call_1", Content: `{"success":true}`},
		{Role: ports.RoleAssistant, Content: fmt.Sprintf("answer %d ✓", i)},
	}
	return ports.Turn{Messages: msgs, Bytes: 64 + i}
}
