package porttest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/agentmcp/agentmcp/ports"
)

// StoreBounds are the store-wide bounds [TestConversationStore] asks of a
// store it opens; zero means none.
type StoreBounds struct {
	MaxConversations int
	MaxBytes         int64
}

// TestConversationStore is the contract test of [ports.ConversationStore]
// (docs/SPEC.md §9). open returns an empty store with the bounds b and
// none of its own; every adapter runs it from its own tests.
//
// It proves what the agent relies on: a turn comes back as appended, whole
// and in order, with its number and its changes; conversations of another
// root, principal or name are apart; a fork starts with its parent's turns
// (up to the turn it names) and the two go on apart; a fork of a missing
// conversation, onto an existing one, or one conversation past the
// principal's bound is refused and keeps nothing; the byte budget drops
// the oldest whole turns and keeps the newest; the store-wide bounds make room from the principal
// that holds the most, never from another's smaller share; List filters
// and Delete see what is stored; concurrent appends to one conversation
// lose none.
func TestConversationStore(t *testing.T, open func(t *testing.T, b StoreBounds) ports.ConversationStore) {
	a := ports.RefOf("/work/a", ports.Principal{})
	b := ports.RefOf("/work/b", ports.Principal{})
	alice := ports.RefOf("/work/a", ports.Principal{Issuer: "https://issuer", Subject: "alice", Client: "c"})
	bob := ports.RefOf("/work/a", ports.Principal{Issuer: "https://issuer", Subject: "bob", Client: "c"})
	budget := ports.AppendOptions{MaxBytes: 1 << 20}
	unbounded := func(t *testing.T) ports.ConversationStore { return open(t, StoreBounds{}) }

	t.Run("RoundTrip", func(t *testing.T) {
		s := unbounded(t)
		want := []ports.Turn{sampleTurn(1), sampleTurn(2)}
		want[1].Changes = []ports.FileDiff{
			{Path: "a.txt", Added: 1, Removed: 1, Diff: "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-alpha\n+beta ✓\n"},
			{Path: "dir/new.go", Added: 2, Diff: "--- /dev/null\n+++ b/dir/new.go\n@@ -0,0 +1,2 @@\n+package x\n+\n"},
		}
		for i, turn := range want {
			n, err := s.Append(t.Context(), a, turn, budget)
			if err != nil {
				t.Fatal(err)
			}
			if n != i+1 {
				t.Errorf("Append of turn %d returned number %d", i+1, n)
			}
			want[i].Number = i + 1
		}
		got := load(t, s, a)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("Load = %v\nwant %v", got, want)
		}
		for _, ref := range []ports.ConversationRef{b, alice, a.Named("other")} {
			if got := load(t, s, ref); len(got) != 0 {
				t.Errorf("Load(%v) = %v; want nothing: another root, principal or name", ref, got)
			}
		}
		if a.Named("") != a || a.Name != "default" {
			t.Errorf("the default conversation is %+v; Named(\"\") = %+v", a, a.Named(""))
		}
	})

	t.Run("Names", func(t *testing.T) {
		s := unbounded(t)
		fix, docs := a.Named("fix-1"), a.Named("docs")
		for _, step := range []struct {
			ref ports.ConversationRef
			i   int
		}{{fix, 1}, {docs, 2}, {fix, 3}, {a, 4}} {
			if _, err := s.Append(t.Context(), step.ref, sampleTurn(step.i), budget); err != nil {
				t.Fatal(err)
			}
		}
		if got := prompts(load(t, s, fix)); !slices.Equal(got, []string{"prompt 1", "prompt 3"}) {
			t.Errorf("fix-1 holds %q, want prompts 1 and 3", got)
		}
		if got := load(t, s, docs); len(got) != 1 || got[0].Number != 1 || got[0].Messages[0].Content != "prompt 2" {
			t.Errorf("docs holds %v, want prompt 2 as its turn 1", got)
		}
		if got := prompts(load(t, s, a)); !slices.Equal(got, []string{"prompt 4"}) {
			t.Errorf("default holds %q, want prompt 4", got)
		}
		if names := names(list0(t, s)); !slices.Equal(names, []string{"default", "fix-1", "docs"}) {
			t.Errorf("List names %q, want default, fix-1, docs (newest first)", names)
		}
		if err := s.Delete(t.Context(), fix); err != nil {
			t.Fatal(err)
		}
		if names := names(list0(t, s)); !slices.Equal(names, []string{"default", "docs"}) {
			t.Errorf("after deleting fix-1, List names %q", names)
		}
	})

	t.Run("Fork", func(t *testing.T) {
		s := unbounded(t)
		for i := 1; i <= 2; i++ {
			if _, err := s.Append(t.Context(), a, sampleTurn(i), budget); err != nil {
				t.Fatal(err)
			}
		}
		fork := a.Named("try")
		n, err := s.Append(t.Context(), fork, sampleTurn(3), ports.AppendOptions{MaxBytes: 1 << 20, ForkFrom: "default"})
		if err != nil || n != 3 {
			t.Fatalf("fork's first Append = %d, %v; want number 3, after the 2 it copied", n, err)
		}
		if _, err := s.Append(t.Context(), a, sampleTurn(4), budget); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(t.Context(), fork, sampleTurn(5), budget); err != nil {
			t.Fatal(err)
		}
		got := load(t, s, fork)
		if p := prompts(got); !slices.Equal(p, []string{"prompt 1", "prompt 2", "prompt 3", "prompt 5"}) {
			t.Errorf("the fork holds %q, want its parent's 1 and 2, then its own 3 and 5", p)
		}
		if len(got) == 4 && (got[0].Number != 1 || got[3].Number != 4) {
			t.Errorf("the fork's turn numbers: %d … %d, want 1 … 4", got[0].Number, got[3].Number)
		}
		if p := prompts(load(t, s, a)); !slices.Equal(p, []string{"prompt 1", "prompt 2", "prompt 4"}) {
			t.Errorf("the parent holds %q: it must not see the fork's turns", p)
		}
		var forked string
		for _, c := range list0(t, s) {
			if c.Ref == fork {
				forked = c.ForkedFrom
			}
		}
		if forked != "default" {
			t.Errorf("List says the fork was forked from %q, want default", forked)
		}

		before := list0(t, s)
		for _, c := range []struct {
			name string
			ref  ports.ConversationRef
			from string
			want error
		}{
			{"from nothing", a.Named("new"), "missing", ports.ErrNoConversation},
			{"onto an existing one", fork, "default", ports.ErrConversationExists},
			{"onto itself", a, "default", ports.ErrConversationExists},
			{"from another principal's", alice.Named("mine"), "default", ports.ErrNoConversation},
		} {
			if _, err := s.Append(t.Context(), c.ref, sampleTurn(9), ports.AppendOptions{MaxBytes: 1 << 20, ForkFrom: c.from}); !errors.Is(err, c.want) {
				t.Errorf("fork %s: %v, want %v", c.name, err, c.want)
			}
		}
		if after := list0(t, s); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("refused forks changed the store:\n%v\nwas %v", after, before)
		}

		// A fork through turn 2 of the parent (what its first turn was
		// shown) leaves out the parent's turn 3, appended since.
		late := a.Named("late")
		n, err = s.Append(t.Context(), late, sampleTurn(6), ports.AppendOptions{MaxBytes: 1 << 20, ForkFrom: "default", ForkThrough: 2})
		if err != nil || n != 3 {
			t.Fatalf("a fork through turn 2 = %d, %v; want number 3", n, err)
		}
		if got := load(t, s, late); !slices.Equal(prompts(got), []string{"prompt 1", "prompt 2", "prompt 6"}) || got[2].Number != 3 {
			t.Errorf("the fork through turn 2 holds %q, want the parent's 1 and 2, then its own as turn 3", prompts(got))
		}

		if err := s.Delete(t.Context(), a); err != nil {
			t.Fatal(err)
		}
		if got := load(t, s, fork); len(got) != 4 {
			t.Errorf("deleting the parent took the fork's turns: %v", got)
		}
	})

	t.Run("PerPrincipal", func(t *testing.T) {
		s := unbounded(t)
		limit := ports.AppendOptions{MaxBytes: 1 << 20, MaxPerPrincipal: 2}
		for _, ref := range []ports.ConversationRef{a, a.Named("two"), alice, b, b.Named("two")} {
			if _, err := s.Append(t.Context(), ref, sampleTurn(1), limit); err != nil {
				t.Fatalf("Append %v within the bound: %v", ref, err)
			}
		}
		before := list0(t, s)
		for _, o := range []ports.AppendOptions{limit, {MaxBytes: 1 << 20, MaxPerPrincipal: 2, ForkFrom: "default"}} {
			if _, err := s.Append(t.Context(), a.Named("three"), sampleTurn(2), o); !errors.Is(err, ports.ErrConversationLimit) {
				t.Errorf("a third conversation (fork %q): %v, want ErrConversationLimit", o.ForkFrom, err)
			}
		}
		if after := list0(t, s); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("a refused conversation changed the store:\n%v\nwas %v", after, before)
		}
		if _, err := s.Append(t.Context(), a.Named("two"), sampleTurn(3), limit); err != nil {
			t.Errorf("continuing a conversation at the bound: %v", err)
		}
		if _, err := s.Append(t.Context(), alice.Named("two"), sampleTurn(3), limit); err != nil {
			t.Errorf("another principal at the same root, within its own bound: %v", err)
		}
	})

	t.Run("FairEviction", func(t *testing.T) {
		// A store of 4: alice holds one, the oldest of all; bob fills the
		// rest and goes on creating. Each time, the store makes room from
		// bob's own, never alice's.
		s := open(t, StoreBounds{MaxConversations: 4})
		appendTo(t, s, alice.Named("mine"), 1)
		for i := 1; i <= 6; i++ {
			appendTo(t, s, bob.Named(fmt.Sprintf("b%d", i)), i)
		}
		if got := load(t, s, alice.Named("mine")); len(got) != 1 {
			t.Fatalf("bob, over his share, evicted alice's only conversation")
		}
		if got := names(list0(t, s)); !slices.Equal(got, []string{"b6", "b5", "b4", "mine"}) {
			t.Errorf("the store holds %q, want bob's newest three and alice's", got)
		}
		// alice creating one more takes room from bob, the bigger holder.
		appendTo(t, s, alice.Named("second"), 7)
		if got := names(list0(t, s)); !slices.Equal(got, []string{"second", "b6", "b5", "mine"}) {
			t.Errorf("after alice's second: %q, want bob's oldest gone", got)
		}
		// At a tie (2 and 2, 3 with the new one), the appender's own goes.
		appendTo(t, s, alice.Named("third"), 8)
		if got := names(list0(t, s)); !slices.Equal(got, []string{"third", "second", "b6", "b5"}) {
			t.Errorf("after alice's third: %q, want alice's own oldest gone", got)
		}

		// The byte bound the same way: alice's small conversation stays
		// while bob's bytes grow.
		s = open(t, StoreBounds{MaxBytes: 1000})
		small := sampleTurn(1)
		small.Bytes = 100
		if _, err := s.Append(t.Context(), alice, small, budget); err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 5; i++ {
			big := sampleTurn(i)
			big.Bytes = 300
			if _, err := s.Append(t.Context(), bob.Named(fmt.Sprintf("b%d", i)), big, budget); err != nil {
				t.Fatal(err)
			}
		}
		if got := load(t, s, alice); len(got) != 1 {
			t.Errorf("bob's bytes evicted alice's conversation: %v", names(list0(t, s)))
		}
		var total int64
		for _, c := range list0(t, s) {
			total += c.Bytes
		}
		if total > 1000 {
			t.Errorf("the store holds %d bytes, over its 1000", total)
		}
	})

	t.Run("Budget", func(t *testing.T) {
		s := unbounded(t)
		for i := 1; i <= 5; i++ {
			turn := sampleTurn(i)
			turn.Bytes = 100
			if n, err := s.Append(t.Context(), a, turn, ports.AppendOptions{MaxBytes: 250}); err != nil || n != i {
				t.Fatalf("Append %d = %d, %v; want number %d though older turns were dropped", i, n, err, i)
			}
		}
		got := load(t, s, a)
		if len(got) != 2 || got[0].Messages[0].Content != "prompt 4" || got[1].Messages[0].Content != "prompt 5" || got[0].Number != 4 || got[1].Number != 5 {
			t.Errorf("after 5 turns of 100 bytes within 250: %v, want turns 4 and 5", got)
		}
		big := sampleTurn(6)
		big.Bytes = 1000
		if _, err := s.Append(t.Context(), a, big, ports.AppendOptions{MaxBytes: 250}); err != nil {
			t.Fatal(err)
		}
		if got := load(t, s, a); len(got) != 1 || got[0].Messages[0].Content != "prompt 6" {
			t.Errorf("a turn larger than the budget: %v, want it alone", got)
		}
	})

	t.Run("ListDelete", func(t *testing.T) {
		s := unbounded(t)
		for _, ref := range []ports.ConversationRef{a, alice, b} {
			if _, err := s.Append(t.Context(), ref, sampleTurn(1), budget); err != nil {
				t.Fatal(err)
			}
		}
		all := list0(t, s)
		if len(all) != 3 || all[0].Ref != b || all[2].Ref != a || all[0].Turns != 1 || all[0].Bytes != int64(sampleTurn(1).Bytes) {
			t.Errorf("List = %+v, want b, alice, a (newest first), one turn each", all)
		}
		for _, c := range []struct {
			f    ports.ConversationFilter
			want []ports.ConversationRef
		}{
			{ports.ConversationFilter{Root: "/work/a"}, []ports.ConversationRef{alice, a}},
			{ports.ConversationFilter{Principal: ports.LocalPrincipal}, []ports.ConversationRef{b, a}},
			{ports.ConversationFilter{Root: "/work/a", Principal: alice.Principal}, []ports.ConversationRef{alice}},
			{ports.ConversationFilter{Limit: 2}, []ports.ConversationRef{b, alice}},
			{ports.ConversationFilter{Root: "/work/c"}, nil},
		} {
			var got []ports.ConversationRef
			for _, info := range list(t, s, c.f) {
				got = append(got, info.Ref)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("List(%+v) = %v, want %v", c.f, got, c.want)
			}
		}
		if err := s.Delete(t.Context(), alice); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(t.Context(), alice); err != nil {
			t.Errorf("deleting a missing conversation: %v", err)
		}
		if got := load(t, s, alice); len(got) != 0 {
			t.Errorf("deleted conversation still loads %v", got)
		}
		if after := list0(t, s); len(after) != 2 {
			t.Errorf("List after Delete = %+v", after)
		}
	})

	t.Run("ConcurrentAppends", func(t *testing.T) {
		s := unbounded(t)
		const n = 20
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Go(func() {
				_, err := s.Append(t.Context(), a, sampleTurn(i), budget)
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		got := load(t, s, a)
		seen := map[string]bool{}
		numbers := map[int]bool{}
		for _, turn := range got {
			seen[turn.Messages[0].Content] = true
			numbers[turn.Number] = true
		}
		if len(seen) != n || len(numbers) != n {
			t.Errorf("%d distinct turns (%d distinct numbers) stored of %d appended", len(seen), len(numbers), n)
		}
	})
}

func load(t *testing.T, s ports.ConversationStore, ref ports.ConversationRef) []ports.Turn {
	t.Helper()
	turns, err := s.Load(t.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return turns
}

func list(t *testing.T, s ports.ConversationStore, f ports.ConversationFilter) []ports.ConversationInfo {
	t.Helper()
	l, err := s.List(t.Context(), f)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func list0(t *testing.T, s ports.ConversationStore) []ports.ConversationInfo {
	t.Helper()
	return list(t, s, ports.ConversationFilter{})
}

func appendTo(t *testing.T, s ports.ConversationStore, ref ports.ConversationRef, i int) {
	t.Helper()
	if _, err := s.Append(t.Context(), ref, sampleTurn(i), ports.AppendOptions{MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
}

func prompts(turns []ports.Turn) []string {
	var out []string
	for _, t := range turns {
		out = append(out, t.Messages[0].Content)
	}
	return out
}

func names(list []ports.ConversationInfo) []string {
	var out []string
	for _, c := range list {
		out = append(out, c.Ref.Name)
	}
	return out
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
