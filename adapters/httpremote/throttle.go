package httpremote

import (
	"container/list"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Throttle parameters (docs/SPEC.md §5.3).
const (
	// ThrottleBurst is how many counted refusals a client may collect at
	// once before it is answered 429.
	ThrottleBurst = 20
	// ThrottlePerMinute is how many counted refusals a client's budget
	// regains per minute (one every 3 s).
	ThrottlePerMinute = 20
	// MaxThrottledClients bounds the throttle table; beyond it the client
	// counted least recently is forgotten (an idle one, if any is: see
	// [throttle.spend]).
	MaxThrottledClients = 4096
)

// throttle holds one token bucket (golang.org/x/time/rate) per client key
// that has collected a counted refusal. Only counted refusals touch it: an
// admitted request, or an uncounted refusal, never reads or spends a
// budget, so a valid token is never throttled.
type throttle struct {
	limit rate.Limit
	burst int
	max   int

	mu      sync.Mutex
	entries map[clientKey]*list.Element // of *bucket
	lru     list.List                   // front: spent most recently
}

type bucket struct {
	key clientKey
	lim *rate.Limiter
}

func newThrottle(perMinute, burst, max int) *throttle {
	every := time.Minute / time.Duration(perMinute)
	return &throttle{
		limit:   rate.Every(every),
		burst:   burst,
		max:     max,
		entries: make(map[clientKey]*list.Element),
	}
}

// spend charges one counted refusal to key at now. It reports whether the
// client is over its budget and, if so, the limiter's delay until it may
// spend again, in whole seconds, at least 1 (the Retry-After value). An
// over-budget refusal does not spend: it is answered 429 and leaves the
// budget where it was, so a client that keeps failing regains its budget
// at the same pace as one that waits.
//
// A new key, when the table is full, evicts the key spent least recently.
// Since buckets are ordered by their last spend, that is an idle one
// (untouched for a full refill, 60 s, so its bucket is full again and
// forgetting it changes nothing) whenever any entry is idle; only a table of
// busy clients loses a busy one.
func (t *throttle) spend(key clientKey, now time.Time) (throttled bool, retryAfter int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b *bucket
	if el, ok := t.entries[key]; ok {
		b = el.Value.(*bucket)
		t.lru.MoveToFront(el)
	} else {
		for len(t.entries) >= t.max {
			oldest := t.lru.Back()
			delete(t.entries, oldest.Value.(*bucket).key)
			t.lru.Remove(oldest)
		}
		b = &bucket{key: key, lim: rate.NewLimiter(t.limit, t.burst)}
		t.entries[key] = t.lru.PushFront(b)
	}
	r := b.lim.ReserveN(now, 1)
	delay := r.DelayFrom(now)
	if delay <= 0 {
		return false, 0
	}
	r.CancelAt(now)
	return true, max(1, int(math.Ceil(delay.Seconds())))
}

// len returns the number of clients tracked.
func (t *throttle) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}
