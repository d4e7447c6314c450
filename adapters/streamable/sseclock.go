package streamable

import (
	"sync"
	"time"
)

// sseClock times the single-message responses in flight on one Handler:
// an answer not ready SSEAfter after its request started gets an event
// stream, then a keep-alive every KeepAlive (docs/SPEC.md §5.2).
//
// One timer per Handler, firing every tick while responses are in flight,
// replaces a runtime timer armed and stopped for every request: a profile
// of the loopback host showed the per-request timers (with the deadlines
// the connection's writes arm) among the framing's largest costs. The
// price is precision: a stream starts between SSEAfter and SSEAfter plus
// one tick, and keep-alives come every KeepAlive to KeepAlive plus one
// tick, a tick being an eighth of the shorter of the two (at least 1 ms).
// When nothing is in flight the timer is left unarmed, so an idle Handler
// costs nothing and leaves no goroutine behind.
type sseClock struct {
	tick      time.Duration
	startIn   uint64 // ticks from registration to the stream's start
	keepEvery uint64 // ticks between keep-alives

	mu     sync.Mutex
	timer  *time.Timer
	armed  bool
	now    uint64     // ticks so far
	head   *responder // the responses in flight, linked through their prev/next
	firing []*responder
}

func newSSEClock(sseAfter, keepAlive time.Duration) *sseClock {
	tick := max(min(sseAfter, keepAlive)/8, time.Millisecond)
	c := &sseClock{
		tick: tick,
		// A response registers part-way through a tick, so one more tick
		// makes its wait at least SSEAfter.
		startIn:   ticksIn(sseAfter, tick) + 1,
		keepEvery: ticksIn(keepAlive, tick),
	}
	c.timer = time.AfterFunc(time.Hour, c.fire)
	c.timer.Stop()
	return c
}

// ticksIn is d in ticks, rounded up.
func ticksIn(d, tick time.Duration) uint64 {
	return uint64((d + tick - 1) / tick)
}

// add starts timing r.
func (c *sseClock) add(r *responder) {
	c.mu.Lock()
	r.due = c.now + c.startIn
	r.next = c.head
	if c.head != nil {
		c.head.prev = r
	}
	c.head = r
	if !c.armed {
		c.armed = true
		c.timer.Reset(c.tick)
	}
	c.mu.Unlock()
}

// remove stops timing r (its answer is being written).
func (c *sseClock) remove(r *responder) {
	c.mu.Lock()
	if r.prev != nil {
		r.prev.next = r.next
	} else if c.head == r {
		c.head = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	}
	r.prev, r.next = nil, nil
	c.mu.Unlock()
}

// fire is one tick: each response that is due gets its stream started or
// a keep-alive, each on a goroutine of its own, so that a client that has
// stopped reading holds up only its own response.
func (c *sseClock) fire() {
	c.mu.Lock()
	c.now++
	due := c.firing[:0]
	for r := c.head; r != nil; r = r.next {
		if r.due <= c.now {
			r.due = c.now + c.keepEvery
			due = append(due, r)
		}
	}
	if c.head == nil {
		c.armed = false // add re-arms it
	} else {
		c.timer.Reset(c.tick)
	}
	for _, r := range due {
		go r.tick()
	}
	clear(due)
	c.firing = due
	c.mu.Unlock()
}
