package streamable

import (
	"net"
	"sync"
)

// ConnLimits configures [LimitListener]: the connection caps of docs/SPEC.md §5.2
// (loopback: 32 in all) and §5.3 (remote: 256 in all, 16 per client
// address).
type ConnLimits struct {
	// Total caps the open connections; at least 1. With every slot taken,
	// Accept waits for a connection to close before it takes the next one
	// from the kernel's accept queue, so the excess clients wait there (or
	// are refused by the kernel when the queue is full).
	Total int
	// PerClient caps the open connections of one client, as ClientOf
	// groups them; a connection over its client's cap is accepted and
	// closed at once, without a response, so one client can hold neither
	// the slots nor the accept queue. Zero or less, or a nil ClientOf:
	// no per-client cap.
	PerClient int
	// ClientOf returns the client a connection from peer (its
	// net.Conn.RemoteAddr) counts against: key must be comparable (it is a
	// map key) and equal for connections of one client. exempt true leaves
	// the connection out of the per-client count (Total still applies): the
	// remote host exempts its trusted proxies, every client behind which
	// arrives from the proxy's address.
	ClientOf func(peer net.Addr) (key any, exempt bool)
	// OnWait, when set, is called each time Accept starts waiting for a free
	// slot; OnRefuse each time it closes a connection over its client's cap.
	// Both run on the accepting goroutine and must not block for long.
	OnWait, OnRefuse func()
}

// LimitListener returns l with c's caps applied to what its Accept returns.
// A slot is taken before a connection is accepted and given back when that
// connection is closed (once, however often Close is called). Close stops
// accepting and closes l; an Accept waiting for a slot then returns
// [net.ErrClosed]; open connections are left to their owner (http.Server
// closes them). Accepted connections keep CloseWrite, which net/http uses to
// avoid resetting a connection whose request body it did not read.
//
// It panics when c.Total is less than 1.
func LimitListener(l net.Listener, c ConnLimits) net.Listener {
	if c.Total < 1 {
		panic("streamable: LimitListener needs ConnLimits.Total ≥ 1")
	}
	if c.PerClient <= 0 {
		c.ClientOf = nil
	}
	return &limitListener{
		Listener: l,
		limits:   c,
		slots:    make(chan struct{}, c.Total),
		closed:   make(chan struct{}),
		byClient: make(map[any]int),
	}
}

type limitListener struct {
	net.Listener
	limits ConnLimits

	slots  chan struct{} // one token per open connection
	closed chan struct{}
	once   sync.Once

	mu       sync.Mutex
	byClient map[any]int // open connections per counted client
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	default:
		if l.limits.OnWait != nil {
			l.limits.OnWait()
		}
		select {
		case l.slots <- struct{}{}:
		case <-l.closed:
			return nil, net.ErrClosed
		}
	}
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.slots
			return nil, err
		}
		key, counted, ok := l.admit(c.RemoteAddr())
		if !ok {
			_ = c.Close()
			if l.limits.OnRefuse != nil {
				l.limits.OnRefuse()
			}
			continue
		}
		return &limitConn{Conn: c, release: func() { l.release(key, counted) }}, nil
	}
}

// admit takes a per-client slot for a connection from peer, unless its
// client already holds PerClient connections.
func (l *limitListener) admit(peer net.Addr) (key any, counted, ok bool) {
	if l.limits.ClientOf == nil {
		return nil, false, true
	}
	key, exempt := l.limits.ClientOf(peer)
	if exempt {
		return nil, false, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byClient[key] >= l.limits.PerClient {
		return nil, false, false
	}
	l.byClient[key]++
	return key, true, true
}

func (l *limitListener) release(key any, counted bool) {
	if counted {
		l.mu.Lock()
		if l.byClient[key]--; l.byClient[key] == 0 {
			delete(l.byClient, key)
		}
		l.mu.Unlock()
	}
	<-l.slots
}

func (l *limitListener) Close() error {
	err := net.ErrClosed
	l.once.Do(func() {
		close(l.closed)
		err = l.Listener.Close()
	})
	return err
}

// limitConn gives its slots back when closed, once however often Close is
// called.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite half-closes the TCP connection.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
