package jsonrpc

import "sync"

// A Replier takes the answer to one message, exactly once: a JSON text to
// write, or nil when nothing is written (a notification, a cancelled
// request).
type Replier interface{ Reply(answer []byte) }

// Batch collects the answers to the elements of one JSON-RPC batch
// (JSON-RPC 2.0 §6): once every element has been answered, the answers
// that are not nil go out as one array, in the elements' order, or nothing
// when there are none (a batch of notifications).
type Batch struct {
	mu      sync.Mutex // guards pending and the slots' answers
	slots   []batchSlot
	pending int
	done    func(answer []byte) // nil: no element had an answer
}

type batchSlot struct {
	b      *Batch
	answer []byte
}

// NewBatch returns the collector of an n-element batch whose answer goes
// to done, exactly once, on the goroutine of the last element answered.
func NewBatch(n int, done func(answer []byte)) *Batch {
	b := &Batch{slots: make([]batchSlot, n), pending: n, done: done}
	for i := range b.slots {
		b.slots[i].b = b
	}
	return b
}

// Element is the Replier of element i.
func (b *Batch) Element(i int) Replier { return &b.slots[i] }

func (s *batchSlot) Reply(answer []byte) {
	b := s.b
	b.mu.Lock()
	s.answer = answer
	b.pending--
	last := b.pending == 0
	b.mu.Unlock()
	if !last {
		return
	}
	out := []byte{'['}
	for _, s := range b.slots {
		if s.answer != nil {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(out, s.answer...)
		}
	}
	if len(out) == 1 {
		b.done(nil)
		return
	}
	b.done(append(out, ']'))
}
