package agent_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentmcp/agentmcp/adapters/agent"
	"github.com/agentmcp/agentmcp/adapters/memstore"
	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/ports"
)

// TestConversationFromStore: a new session on the same store and root (a
// restarted process) answers turn 2 with turn 1's messages; another root
// starts empty; the store holds the finished turn, and a failed turn
// leaves it as it was.
func TestConversationFromStore(t *testing.T) {
	store := memstore.New(memstore.Options{})
	answer := func(req *chatscript.Request) chatscript.Reply { return text("heard: " + req.LastUser()) }
	first := newRig(t, rigOptions{agent: agent.Options{Store: store, Root: "/work/a"}, answer: answer})
	if got := first.turn(t, "the word is heliotrope", newCaller()); got != "heard: the word is heliotrope" {
		t.Fatalf("turn 1 = %q", got)
	}
	turns, err := store.Load(t.Context(), ports.RefOf("/work/a", ports.Principal{}))
	if err != nil || len(turns) != 1 || len(turns[0].Messages) != 2 || turns[0].Bytes <= 0 {
		t.Fatalf("stored after turn 1: %+v, %v; want one turn of prompt and answer", turns, err)
	}

	second := newRig(t, rigOptions{agent: agent.Options{Store: store, Root: "/work/a"}, answer: answer})
	second.turn(t, "what was the word?", newCaller())
	if got := contents(second.srv.Requests()[0]); !strings.Contains(got, "the word is heliotrope") || !strings.Contains(got, "heard: the word is heliotrope") {
		t.Errorf("the restarted session's request lacks turn 1: %q", got)
	}

	other := newRig(t, rigOptions{agent: agent.Options{Store: store, Root: "/work/b"}, answer: answer})
	other.turn(t, "hello", newCaller())
	if got := contents(other.srv.Requests()[0]); strings.Contains(got, "heliotrope") {
		t.Errorf("another root's request carries /work/a's conversation: %q", got)
	}

	failing := newRig(t, rigOptions{agent: agent.Options{Store: store, Root: "/work/a"}, script: []chatscript.Reply{{Status: 400, Body: `{"error":{"message":"bad"}}`}}})
	failing.failTurn(t, "this one fails")
	if turns, _ := store.Load(t.Context(), ports.RefOf("/work/a", ports.Principal{})); len(turns) != 2 {
		t.Errorf("after a failed turn the store holds %d turns, want 2", len(turns))
	}
}

// TestStoreKeepsTheBoundedTurn: what the store appends is the finished
// turn as boundTurn bounded it to HistoryBytes (a 100 kB prompt kept cut,
// with the response), and its Bytes are that turn's size counted as the
// history counts it: the store's budget and the history's are one.
func TestStoreKeepsTheBoundedTurn(t *testing.T) {
	const budget = 4096
	store := memstore.New(memstore.Options{})
	r := newRig(t, rigOptions{agent: agent.Options{Store: store, Root: "/work/a", HistoryBytes: budget}, answer: func(req *chatscript.Request) chatscript.Reply {
		return text("re: " + req.LastUser()[:4])
	}})
	r.turn(t, strings.Repeat("p", 100_000), nil)
	r.turn(t, "second", nil)
	turns, err := store.Load(t.Context(), ports.RefOf("/work/a", ports.Principal{}))
	if err != nil || len(turns) == 0 {
		t.Fatalf("stored: %d turns, %v", len(turns), err)
	}
	total := 0
	for i, turn := range turns {
		size := 0
		for _, m := range turn.Messages {
			size += len(m.Role) + len(m.Content) + len(m.ToolCallID)
			for _, tc := range m.ToolCalls {
				size += len(tc.ID) + len(tc.Name) + len(tc.Arguments)
			}
		}
		if turn.Bytes != size {
			t.Errorf("turn %d: Bytes = %d, its messages count %d", i, turn.Bytes, size)
		}
		total += turn.Bytes
	}
	if total > budget {
		t.Errorf("the store holds %d bytes of the conversation, budget %d", total, budget)
	}
	first := turns[0].Messages
	if len(turns) != 2 || len(first) != 2 || !strings.HasPrefix(first[0].Content, "pppp") || first[1].Content != "re: pppp" {
		t.Errorf("stored turns = %d, the first %d messages; want the cut prompt and its response, then the second turn", len(turns), len(first))
	}
}

// TestProgressCarriesText: while the model streams, progress carries the
// newest text, one line of at most 200 characters ending with what was
// streamed last; the response is the whole text. The endpoint holds its
// stream mid-text until the client has seen that text in a progress
// message.
func TestProgressCarriesText(t *testing.T) {
	// Numbered lines: no 40-character stretch of the text repeats, so only
	// a message that carries the newest text can end with its end.
	var b strings.Builder
	for i := range 12 {
		fmt.Fprintf(&b, "Ünïcode line %02d ✓ of the answer.\n", i)
	}
	full := b.String() + "The newest words are here. And the rest."
	held := 100 // the stream holds after 100 of its pieces of 4 bytes
	streamed := firstPieces(full, held)
	end := strings.Join(strings.Fields(streamed), " ")
	end = string([]rune(end)[len([]rune(end))-40:])
	seen := make(chan struct{})
	r := newRig(t, rigOptions{agent: agent.Options{TextInterval: time.Millisecond}, answer: func(*chatscript.Request) chatscript.Reply {
		return chatscript.Reply{Text: full, MidAfterText: held, Mid: func(ctx context.Context) {
			select {
			case <-seen:
			case <-ctx.Done():
			}
		}}
	}})
	c := newCaller()
	var once sync.Once
	c.onMsg = func(msg string) {
		if strings.HasSuffix(msg, end) {
			once.Do(func() { close(seen) })
		}
	}
	if got := r.turn(t, "write", c); got != full {
		t.Fatalf("response = %q", got)
	}
	found := false
	for _, msg := range c.messages() {
		if !strings.HasSuffix(msg, end) {
			continue
		}
		found = true
		if n := utf8.RuneCountInString(msg); n > agent.MaxProgressText || strings.ContainsAny(msg, "\n\r") ||
			!strings.HasPrefix(msg, "model step 1: …") {
			t.Errorf("text progress %q (%d characters): want one line of at most %d starting with the step and a cut mark", msg, n, agent.MaxProgressText)
		}
	}
	if !found {
		t.Errorf("no progress carried the streamed text: %q", c.messages())
	}
}

// firstPieces is the text of the first n pieces chatscript streams s in
// (4 bytes each, on UTF-8 boundaries).
func firstPieces(s string, n int) string {
	rest := s
	for range n {
		cut := min(4, len(rest))
		for cut < len(rest) && !utf8.RuneStart(rest[cut]) {
			cut--
		}
		rest = rest[cut:]
	}
	return s[:len(s)-len(rest)]
}
