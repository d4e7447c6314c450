// Package memstore is the in-memory [ports.ConversationStore]: what the
// agent keeps when started with --ephemeral, its default when no store is
// given, and the store of tests (docs/SPEC.md §9). Nothing outlives the
// process.
//
// Its bounds are the same as adapters/sqlite's: at most
// [Options.MaxConversations] conversations and [Options.MaxBytes] in all
// (at a bound, the least recently updated conversation of the principal
// that holds the most goes first, the appending principal's own on a tie),
// and none older than [Options.MaxAge] since its last turn.
package memstore

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/ports"
)

// Options bounds a [Store]. Zero values mean no bound.
type Options struct {
	MaxConversations int
	MaxBytes         int64
	MaxAge           time.Duration

	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Store keeps conversations in memory. It is safe for concurrent use.
type Store struct {
	opts  Options
	mu    sync.Mutex
	convs map[ports.ConversationRef]*conv
	seq   uint64 // the last update's number
}

type conv struct {
	turns      []ports.Turn
	bytes      int64
	next       int    // the next turn's number
	forkedFrom string // the name it was forked from
	updated    time.Time
	seq        uint64 // order of updates, for ties of updated
}

var _ ports.ConversationStore = (*Store)(nil)

// New returns an empty store.
func New(opts Options) *Store {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{opts: opts, convs: map[ports.ConversationRef]*conv{}}
}

// Load returns ref's turns, oldest first.
func (s *Store) Load(_ context.Context, ref ports.ConversationRef) ([]ports.Turn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	c, ok := s.convs[ref]
	if !ok {
		return nil, nil
	}
	return slices.Clone(c.turns), nil
}

// Append adds turn to ref's conversation (creating it, or forking it, as
// [ports.ConversationStore] says) and applies the bounds.
func (s *Store) Append(_ context.Context, ref ports.ConversationRef, turn ports.Turn, o ports.AppendOptions) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	c, ok := s.convs[ref]
	switch {
	case ok && o.ForkFrom != "":
		return 0, ports.ErrConversationExists
	case !ok:
		if o.MaxPerPrincipal > 0 && s.held(ref) >= o.MaxPerPrincipal {
			return 0, ports.ErrConversationLimit
		}
		c = &conv{next: 1}
		if o.ForkFrom != "" {
			from, ok := s.convs[ref.Named(o.ForkFrom)]
			if !ok {
				return 0, ports.ErrNoConversation
			}
			c.forkedFrom = o.ForkFrom
			for _, t := range from.turns {
				if o.ForkThrough > 0 && t.Number > o.ForkThrough {
					break
				}
				c.turns = append(c.turns, t)
				c.bytes += int64(t.Bytes)
				c.next = t.Number + 1
			}
		}
		s.convs[ref] = c
	}
	turn.Number = c.next
	turn.Messages = slices.Clone(turn.Messages)
	turn.Changes = slices.Clone(turn.Changes)
	c.next++
	c.turns = append(slices.Clone(c.turns), turn)
	c.bytes += int64(turn.Bytes)
	for len(c.turns) > 1 && c.bytes > int64(o.MaxBytes) {
		c.bytes -= int64(c.turns[0].Bytes)
		c.turns = c.turns[1:]
	}
	s.seq++
	c.updated, c.seq = s.opts.Now(), s.seq
	s.bound(ref)
	return turn.Number, nil
}

// held counts the conversations ref's principal holds on ref's root.
func (s *Store) held(ref ports.ConversationRef) int {
	n := 0
	for r := range s.convs {
		if r.Root == ref.Root && r.Principal == ref.Principal {
			n++
		}
	}
	return n
}

// expire drops conversations older than MaxAge.
func (s *Store) expire() {
	if s.opts.MaxAge <= 0 {
		return
	}
	cutoff := s.opts.Now().Add(-s.opts.MaxAge)
	for ref, c := range s.convs {
		if c.updated.Before(cutoff) {
			delete(s.convs, ref)
		}
	}
}

// bound drops conversations (never keep) while there are too many or they
// hold too many bytes: each time the least recently updated one of the
// principal that holds the most (conversations, or bytes), keep's
// principal's own on a tie.
func (s *Store) bound(keep ports.ConversationRef) {
	for {
		count := map[string]int64{}
		size := map[string]int64{}
		var total int64
		for ref, c := range s.convs {
			count[ref.Principal]++
			size[ref.Principal] += c.bytes
			total += c.bytes
		}
		var held map[string]int64
		switch {
		case s.opts.MaxConversations > 0 && len(s.convs) > s.opts.MaxConversations:
			held = count
		case s.opts.MaxBytes > 0 && total > s.opts.MaxBytes:
			held = size
		default:
			return
		}
		var victim ports.ConversationRef
		var vc *conv
		for ref, c := range s.convs {
			if ref != keep && (vc == nil || before(held, keep.Principal, ref, c, victim, vc)) {
				victim, vc = ref, c
			}
		}
		if vc == nil {
			return
		}
		delete(s.convs, victim)
	}
}

// before reports whether conversation a goes before b at a bound: its
// principal holds more, or as much and is the appender's, or as much and
// a is the older.
func before(held map[string]int64, appender string, a ports.ConversationRef, ac *conv, b ports.ConversationRef, bc *conv) bool {
	if ha, hb := held[a.Principal], held[b.Principal]; ha != hb {
		return ha > hb
	}
	if ma, mb := a.Principal == appender, b.Principal == appender; ma != mb {
		return ma
	}
	return ac.seq < bc.seq
}

// List returns the conversations f selects, the most recently updated
// first.
func (s *Store) List(_ context.Context, f ports.ConversationFilter) ([]ports.ConversationInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	type item struct {
		info ports.ConversationInfo
		seq  uint64
	}
	var items []item
	for ref, c := range s.convs {
		if (f.Root != "" && ref.Root != f.Root) || (f.Principal != "" && ref.Principal != f.Principal) {
			continue
		}
		items = append(items, item{ports.ConversationInfo{Ref: ref, ForkedFrom: c.forkedFrom, Turns: len(c.turns), Bytes: c.bytes, Updated: c.updated}, c.seq})
	}
	slices.SortFunc(items, func(a, b item) int { return cmp.Compare(b.seq, a.seq) })
	if f.Limit > 0 && len(items) > f.Limit {
		items = items[:f.Limit]
	}
	out := make([]ports.ConversationInfo, len(items))
	for i, it := range items {
		out[i] = it.info
	}
	return out, nil
}

// Delete forgets ref's conversation.
func (s *Store) Delete(_ context.Context, ref ports.ConversationRef) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.convs, ref)
	return nil
}
