package streamable

import (
	"sync"
	"time"
)

// sseClock times the single-message responses in flight on one Handler:
// an answer not ready SSEAfter after its request started gets an event
// stream, then a keep-alive every KeepAlive (docs/SPEC.md §4, the status
// table).
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

	// dispatch runs a due response's tick: on a goroutine of its own (tests
	// run it in line, to step the clock by hand).
	dispatch func(*responder)

	mu    sync.Mutex
	timer *time.Timer
	armed bool
	now   uint64     // ticks so far
	head  *responder // the responses in flight, linked through their prev/next
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
	c.dispatch = func(r *responder) { go c.tickOne(r) }
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
// stopped reading holds up only its own response. A response whose last
// one is still being written (a blocked write lasts up to the write-stall
// timeout) is skipped until it is done: one goroutine per response at
// most, and no burst of keep-alives when a slow client catches up.
func (c *sseClock) fire() {
	c.mu.Lock()
	c.now++
	var due []*responder // rarely any: a response slower than SSEAfter
	for r := c.head; r != nil; r = r.next {
		if r.due <= c.now && !r.ticking {
			r.due = c.now + c.keepEvery
			r.ticking = true
			due = append(due, r)
		}
	}
	if c.head == nil {
		c.armed = false // add re-arms it
	} else {
		c.timer.Reset(c.tick)
	}
	c.mu.Unlock()
	for _, r := range due {
		c.dispatch(r)
	}
}

// tickOne runs r's tick and lets fire pick r again.
func (c *sseClock) tickOne(r *responder) {
	r.tick()
	c.mu.Lock()
	r.ticking = false
	c.mu.Unlock()
}
