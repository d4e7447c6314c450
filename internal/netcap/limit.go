package netcap

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// DefaultIdleGrace is the default of [Limits.IdleGrace].
const DefaultIdleGrace = 250 * time.Millisecond

// Limits configures [NewListener]: the connection caps of docs/SPEC.md §5.2
// (loopback: 128 in all) and §5.3 (remote: 256 in all, 16 per client
// address).
//
// A connection is idle while it has not sent a complete request header
// (http.StateNew) or waits between keep-alive requests (http.StateIdle);
// it is active while a request is being read or served. A cap is never
// held by idle connections against a newcomer: at a cap, an idle
// connection is closed to admit the new one (see [NewListener]). Active
// connections are never closed to make room.
type Limits struct {
	// Total caps the open connections; at least 1. At the cap, the oldest
	// idle connection that has been idle for at least IdleGrace, and has
	// nothing unread in its socket, is closed to admit the next one: first
	// those that never completed a request, then keep-alive ones (only when
	// no never-used one is open). With none such, Accept waits, holding the
	// new connection, until there is one, or a connection closes.
	Total int
	// PerClient caps the open connections of one client, as ClientOf
	// groups them; 0 means no per-client cap. A client at its cap has its
	// own oldest idle connection with nothing unread closed to admit its new
	// one (however briefly idle: only that client's connections churn);
	// with none such, the new one is closed at once, without a response, so
	// one client can hold neither the slots nor the accept loop.
	PerClient int
	// ClientOf returns the client a connection from peer (its
	// net.Conn.RemoteAddr) counts against: key must be comparable (it is a
	// map key) and equal for connections of one client. exempt true leaves
	// the connection out of the per-client count (Total still applies): the
	// remote host exempts its trusted proxies, every client behind which
	// arrives from the proxy's address. Required when PerClient is set.
	ClientOf func(peer net.Addr) (key any, exempt bool)
	// IdleGrace is how long a connection must have been idle before it may
	// be closed to make room under Total: the time a client that has just
	// connected (or just been answered) has to send its request header
	// before a newcomer may take its place, on a machine loaded enough
	// that the client's first write comes late. Default 250 ms. It also
	// bounds how fast idle connections can be cycled: at most Total per
	// IdleGrace.
	IdleGrace time.Duration
	// OnWait, when set, is called each time Accept starts waiting for a
	// slot; OnRefuse each time it closes a connection over its client's cap
	// unanswered; OnEvict each time it closes an idle connection to make
	// room. They run on the accepting goroutine and must not block for long.
	OnWait, OnRefuse, OnEvict func()
}

// ErrLimits is wrapped by the error of [NewListener] and [Limits.Check]
// for limits that cannot be applied.
var ErrLimits = errors.New("netcap: invalid Limits")

// Check reports why c cannot be applied (an error wrapping [ErrLimits]), or nil.
func (c Limits) Check() error {
	switch {
	case c.Total < 1:
		return fmt.Errorf("%w: Total must be at least 1", ErrLimits)
	case c.PerClient < 0:
		return fmt.Errorf("%w: PerClient must not be negative", ErrLimits)
	case c.PerClient > 0 && c.ClientOf == nil:
		return fmt.Errorf("%w: PerClient needs ClientOf", ErrLimits)
	case c.IdleGrace < 0:
		return fmt.Errorf("%w: IdleGrace must not be negative", ErrLimits)
	}
	return nil
}

// Listener is a net.Listener with connection caps (see
// [NewListener]). Its ConnState method must be installed as (or called
// from) the http.Server's ConnState hook: it is how the listener learns
// which connections are idle.
type Listener struct {
	ln     net.Listener
	limits Limits

	closed    chan struct{}
	closeOnce sync.Once
	wake      chan struct{} // a slot was freed or a connection became idle

	mu       sync.Mutex
	open     int
	byClient map[any]int
	fresh    connQueue // connections that never completed a request, oldest first
	idle     connQueue // connections between keep-alive requests, oldest first
}

// NewListener returns l with c's caps applied to what its Accept returns
// (docs/SPEC.md §5.2, §5.3). It fails with an error wrapping
// [ErrLimits] when c.Total is less than 1, c.PerClient or c.IdleGrace
// is negative, or c.PerClient is set without c.ClientOf.
//
// Accept takes the next connection from l, then finds it a slot: a free
// one; else, over its client's cap, that client's own oldest idle
// connection (none: the new one is closed unanswered and Accept goes on to
// the next); else, at Total, the oldest connection idle for at least
// IdleGrace with nothing unread in its socket (never-used ones first);
// else it waits, holding the new
// connection, until one of those appears or a connection closes. A closed
// connection gives its slots back once, however often Close is called.
// Connections are active (never closed to make room) until the
// http.Server reports them idle through [Listener.ConnState], so
// without that hook the caps only wait and refuse.
//
// Close stops accepting and closes l; an Accept waiting for a slot then
// returns [net.ErrClosed]; open connections are left to their owner
// (http.Server closes them). Accepted connections keep CloseWrite, which
// net/http uses to avoid resetting a connection whose request body it did
// not read.
func NewListener(l net.Listener, c Limits) (*Listener, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	if c.PerClient == 0 {
		c.ClientOf = nil
	}
	if c.IdleGrace == 0 {
		c.IdleGrace = DefaultIdleGrace
	}
	return &Listener{
		ln:       l,
		limits:   c,
		closed:   make(chan struct{}),
		wake:     make(chan struct{}, 1),
		byClient: make(map[any]int),
	}, nil
}

// Addr is the underlying listener's address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Accept returns the next connection once it has a slot (see
// [NewListener]).
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return nil, err
		}
		lc, err := l.admit(c)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		if lc != nil {
			return lc, nil
		}
		_ = c.Close()
		if l.limits.OnRefuse != nil {
			l.limits.OnRefuse()
		}
	}
}

// admit finds c a slot, closing idle connections or waiting as the caps
// say. It returns nil when c is over its client's cap with none of that
// client's connections idle, and net.ErrClosed when l was closed meanwhile.
func (l *Listener) admit(c net.Conn) (*conn, error) {
	var key any
	counted := false
	if l.limits.ClientOf != nil {
		var exempt bool
		key, exempt = l.limits.ClientOf(c.RemoteAddr())
		counted = !exempt
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	waited := false
	for {
		select {
		case <-l.closed:
			return nil, net.ErrClosed
		default:
		}
		l.mu.Lock()
		if counted && l.byClient[key] >= l.limits.PerClient {
			victim := l.oldestOf(key)
			if victim == nil {
				l.mu.Unlock()
				return nil, nil
			}
			l.evictUnlock(victim)
			continue
		}
		if l.open >= l.limits.Total {
			victim, wait := l.oldestIdle(time.Now())
			if victim != nil {
				l.evictUnlock(victim)
				continue
			}
			l.mu.Unlock()
			if !waited && l.limits.OnWait != nil {
				l.limits.OnWait()
			}
			waited = true
			var expiry <-chan time.Time
			if wait > 0 {
				if timer == nil {
					timer = time.NewTimer(wait)
				} else {
					timer.Reset(wait)
				}
				expiry = timer.C
			}
			select {
			case <-l.wake:
			case <-expiry:
			case <-l.closed:
			}
			continue
		}
		l.open++
		if counted {
			l.byClient[key]++
		}
		l.mu.Unlock()
		return &conn{Conn: c, l: l, key: key, counted: counted}, nil
	}
}

// oldestOf returns key's oldest idle connection with nothing unread in
// its socket, never-used ones first, however briefly idle; nil when none
// is. l.mu is held.
func (l *Listener) oldestOf(key any) *conn {
	for _, q := range []*connQueue{&l.fresh, &l.idle} {
		for c := q.head; c != nil; c = c.next {
			if c.counted && c.key == key && !hasUnread(c.Conn) {
				return c
			}
		}
	}
	return nil
}

// oldestIdle returns the connection to close to make room under Total: the
// oldest never-used one that has been so for IdleGrace, else, when no
// connection is never-used, the oldest keep-alive one idle for IdleGrace.
// A connection whose socket holds bytes nobody has read is passed over: its
// request has arrived and only waits for the server's goroutine (a loaded
// machine), which will find it. Otherwise it returns how long to wait
// before asking again (0: until something changes — none is idle): until a
// connection will have been idle long enough, or IdleGrace when the ones
// that have all hold unread bytes (which the server may read without the
// connection leaving the idle state: a partial header). l.mu is held.
func (l *Listener) oldestIdle(now time.Time) (*conn, time.Duration) {
	queues := []*connQueue{&l.fresh, &l.idle}
	if l.fresh.head != nil {
		queues = queues[:1] // kept-alive connections only when no never-used one is open
	}
	wait, unread := time.Duration(0), false
	for _, q := range queues {
		for c := q.head; c != nil; c = c.next {
			if age := now.Sub(c.since); age < l.limits.IdleGrace {
				if wait == 0 || l.limits.IdleGrace-age < wait {
					wait = l.limits.IdleGrace - age
				}
				break // the rest of this queue is younger
			}
			if !hasUnread(c.Conn) {
				return c, 0
			}
			unread = true
		}
	}
	if unread && (wait == 0 || l.limits.IdleGrace < wait) {
		wait = l.limits.IdleGrace
	}
	return nil, wait
}

// evictUnlock gives the slots of c back, unlocks l.mu (held on entry) and
// closes c.
func (l *Listener) evictUnlock(c *conn) {
	l.releaseLocked(c)
	l.mu.Unlock()
	_ = c.Conn.Close()
	if l.limits.OnEvict != nil {
		l.limits.OnEvict()
	}
}

// releaseLocked gives c's slots back, once; l.mu is held.
func (l *Listener) releaseLocked(c *conn) {
	if c.released {
		return
	}
	c.released = true
	l.untrack(c)
	l.open--
	if c.counted {
		if l.byClient[c.key]--; l.byClient[c.key] == 0 {
			delete(l.byClient, c.key)
		}
	}
	l.signal()
}

func (l *Listener) untrack(c *conn) {
	if c.queue != nil {
		c.queue.remove(c)
	}
}

// signal wakes a waiting Accept, without blocking.
func (l *Listener) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// ConnState records what http.Server reports of a connection this listener
// accepted (others are ignored): StateNew and StateIdle make it idle, any
// other state active. Install it as http.Server.ConnState, or call it from
// the server's own hook.
func (l *Listener) ConnState(nc net.Conn, state http.ConnState) {
	c, ok := nc.(*conn)
	if !ok || c.l != l {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.released {
		return
	}
	l.untrack(c)
	var q *connQueue
	switch state {
	case http.StateNew:
		q = &l.fresh
	case http.StateIdle:
		q = &l.idle
	default:
		return
	}
	c.since = time.Now()
	q.pushBack(c)
	l.signal()
}

// Close stops accepting and closes the underlying listener; only the first
// call does anything (later calls return net.ErrClosed).
func (l *Listener) Close() error {
	err := net.ErrClosed
	l.closeOnce.Do(func() {
		close(l.closed)
		err = l.ln.Close()
	})
	return err
}

// connQueue is a queue of idle connections linked through the connections
// themselves, so the two state changes of every request allocate nothing.
// l.mu guards it.
type connQueue struct{ head, tail *conn }

func (q *connQueue) pushBack(c *conn) {
	c.queue, c.prev, c.next = q, q.tail, nil
	if q.tail != nil {
		q.tail.next = c
	} else {
		q.head = c
	}
	q.tail = c
}

func (q *connQueue) remove(c *conn) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		q.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		q.tail = c.prev
	}
	c.queue, c.prev, c.next = nil, nil, nil
}

// conn is one admitted connection.
type conn struct {
	net.Conn
	l       *Listener
	key     any
	counted bool

	// Guarded by l.mu.
	released   bool
	queue      *connQueue // &l.fresh or &l.idle while idle; nil while active
	prev, next *conn      // its neighbours in queue
	since      time.Time  // when it became idle

	// Guarded by wmu: the write deadline last asked for, how far ahead it
	// was when asked, the one armed on the socket, and how much later than
	// asked it was armed (see SetWriteDeadline and Write).
	wmu    sync.Mutex
	wAsked time.Time
	wAhead time.Duration
	wArmed time.Time
	wSlack time.Duration

	now func() time.Time // the clock of the deadlines; nil means time.Now (tests set it)
}

func (c *conn) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// SetWriteDeadline asks for a write deadline of t, lazily. A deadline
// already armed up to a sixteenth of the time to t after t is left alone,
// else the deadline is armed that much after t; asking for none (zero)
// disarms it only before the next write. The hosts' framing renews the
// deadline before every write (a response that makes no progress for its
// write-stall timeout fails, docs/SPEC.md §5.2) and net/http clears it after
// each response, and arming and disarming the runtime's timer twice per
// request was among the largest costs in a profile of the loopback host;
// this way it is armed about once per sixteenth of the timeout per busy
// connection, and a 30 s stall is detected after 30 to 32 s. A deadline
// cleared while a write is blocked still ends that write. A deadline that
// passes before the next write starts is moved by Write (see there).
func (c *conn) SetWriteDeadline(t time.Time) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wAsked, c.wAhead = t, 0
	if t.IsZero() {
		return nil // disarmed before the next write
	}
	c.wAhead = t.Sub(c.clock())
	if !c.wArmed.IsZero() && !t.After(c.wArmed) && !t.Before(c.wArmed.Add(-c.wSlack)) {
		return nil // armed within the slack after t
	}
	return c.armLocked(t)
}

// armLocked arms t plus a sixteenth of wAhead on the socket; wmu is held.
func (c *conn) armLocked(t time.Time) error {
	c.wSlack = max(c.wAhead/16, 0)
	c.wArmed = t.Add(c.wSlack)
	return c.Conn.SetWriteDeadline(c.wArmed)
}

// Write writes b under the deadline last asked for: a deadline asked to be
// cleared is disarmed first. A deadline asked that far ahead (wAhead > 0)
// but passed before this write starts is moved to now plus wAhead: the
// write-stall timeout measures the client's progress, and a write that has
// not started has stalled on nobody but the server. net/http writes a
// response from its buffer after the handler returns, and on a machine
// loaded enough that the server's goroutine ran later than the timeout
// (seen with a 300 ms one under parallel tests), the response was dropped
// unwritten and its kept-alive connection closed: the client saw "EOF" for
// a POST, which it does not retry. A deadline asked already in the past
// (net/http's way to abort a write) is left as it is.
func (c *conn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	var err error
	switch {
	case c.wAsked.IsZero() && !c.wArmed.IsZero():
		c.wArmed = time.Time{}
		err = c.Conn.SetWriteDeadline(time.Time{})
	case c.wAhead > 0:
		if now := c.clock(); !now.Before(c.wAsked) {
			c.wAsked = now.Add(c.wAhead)
			err = c.armLocked(c.wAsked)
		}
	}
	c.wmu.Unlock()
	if err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// SetDeadline sets both deadlines as asked.
func (c *conn) SetDeadline(t time.Time) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wAsked, c.wArmed, c.wSlack, c.wAhead = t, t, 0, 0
	return c.Conn.SetDeadline(t)
}

// Close closes the connection and gives its slots back.
func (c *conn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return err
}

// CloseWrite half-closes the TCP connection.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
