// Package memstore is the in-memory [ports.ConversationStore]: what the
// agent keeps when started with --ephemeral, its default when no store is
// given, and the store of tests (docs/SPEC.md §9). Nothing outlives the
// process.
//
// Its bounds are the same as adapters/sqlite's: at most
// [Options.MaxConversations] conversations (the least recently updated is
// dropped first), at most [Options.MaxBytes] in all, and none older than
// [Options.MaxAge] since its last turn.
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
	turns   []ports.Turn
	bytes   int64
	updated time.Time
	seq     uint64 // order of updates, for ties of updated
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

// Append adds turn to ref's conversation and applies the bounds.
func (s *Store) Append(_ context.Context, ref ports.ConversationRef, turn ports.Turn, maxBytes int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[ref]
	if !ok {
		c = &conv{}
		s.convs[ref] = c
	}
	turn.Messages = slices.Clone(turn.Messages)
	c.turns = append(slices.Clone(c.turns), turn)
	c.bytes += int64(turn.Bytes)
	for len(c.turns) > 1 && c.bytes > int64(maxBytes) {
		c.bytes -= int64(c.turns[0].Bytes)
		c.turns = c.turns[1:]
	}
	s.seq++
	c.updated, c.seq = s.opts.Now(), s.seq
	s.expire()
	s.bound(ref)
	return nil
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

// bound drops the least recently updated conversations (never keep) while
// there are too many or they hold too many bytes.
func (s *Store) bound(keep ports.ConversationRef) {
	var total int64
	for _, c := range s.convs {
		total += c.bytes
	}
	for (s.opts.MaxConversations > 0 && len(s.convs) > s.opts.MaxConversations) ||
		(s.opts.MaxBytes > 0 && total > s.opts.MaxBytes) {
		var oldest ports.ConversationRef
		var oc *conv
		for ref, c := range s.convs {
			if ref != keep && (oc == nil || c.seq < oc.seq) {
				oldest, oc = ref, c
			}
		}
		if oc == nil {
			return
		}
		total -= oc.bytes
		delete(s.convs, oldest)
	}
}

// List returns every conversation, the most recently updated first.
func (s *Store) List(context.Context) ([]ports.ConversationInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	type item struct {
		info ports.ConversationInfo
		seq  uint64
	}
	var items []item
	for ref, c := range s.convs {
		items = append(items, item{ports.ConversationInfo{Ref: ref, Turns: len(c.turns), Bytes: c.bytes, Updated: c.updated}, c.seq})
	}
	slices.SortFunc(items, func(a, b item) int { return cmp.Compare(b.seq, a.seq) })
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
