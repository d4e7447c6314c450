package httpremote

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/ports"
)

// Verdict cache bounds (docs/SPEC.md §5.3 step 4).
const (
	// MaxCachedVerdicts bounds the cache of successful verifications; the
	// entry used least recently goes first.
	MaxCachedVerdicts = 1024
	// VerdictCacheTTL bounds how long a successful verification is reused
	// when the verifier does not say when its keys are next refreshed (see
	// [ports.KeyRefreshReporter]). The port gives the host no signal of a key
	// refresh, so a cached verdict may outlive the refresh that would have
	// withdrawn its key by at most this long: with the oauth verifier, a
	// withdrawn key stops admitting within its 10-minute refresh plus 60 s.
	VerdictCacheTTL = time.Minute
)

// verdictCache remembers admitted tokens by the SHA-256 of their text (the
// text itself is never kept), each until a deadline: the earliest of the
// token's exp, the verifier's next key refresh and the TTL.
type verdictCache struct {
	max int
	ttl time.Duration

	mu      sync.Mutex
	entries map[[sha256.Size]byte]*list.Element // of *cachedVerdict
	lru     list.List                           // front: used most recently
}

type cachedVerdict struct {
	key       [sha256.Size]byte
	principal ports.Principal
	until     time.Time
}

func newVerdictCache(max int, ttl time.Duration) *verdictCache {
	return &verdictCache{max: max, ttl: ttl, entries: make(map[[sha256.Size]byte]*list.Element)}
}

func tokenKey(token string) [sha256.Size]byte { return sha256.Sum256([]byte(token)) }

// get returns the principal of a cached, unexpired verdict for key.
func (c *verdictCache) get(key [sha256.Size]byte, now time.Time) (ports.Principal, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return ports.Principal{}, false
	}
	v := el.Value.(*cachedVerdict)
	if !now.Before(v.until) {
		delete(c.entries, key)
		c.lru.Remove(el)
		return ports.Principal{}, false
	}
	c.lru.MoveToFront(el)
	return v.principal, true
}

// put caches an admitted verdict until the earliest of exp (Unix seconds;
// 0 means unknown, and nothing is cached), keysDue (zero: unknown) and
// now+ttl.
func (c *verdictCache) put(key [sha256.Size]byte, p ports.Principal, exp int64, keysDue, now time.Time) {
	if exp <= 0 {
		return
	}
	until := now.Add(c.ttl)
	if e := time.Unix(exp, 0); e.Before(until) {
		until = e
	}
	if !keysDue.IsZero() && keysDue.Before(until) {
		until = keysDue
	}
	if !now.Before(until) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		v := el.Value.(*cachedVerdict)
		v.principal, v.until = p, until
		c.lru.MoveToFront(el)
		return
	}
	for len(c.entries) >= c.max {
		oldest := c.lru.Back()
		delete(c.entries, oldest.Value.(*cachedVerdict).key)
		c.lru.Remove(oldest)
	}
	c.entries[key] = c.lru.PushFront(&cachedVerdict{key: key, principal: p, until: until})
}
