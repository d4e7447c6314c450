package httpremote

import (
	"net"
	"net/netip"
	"sync"
)

// connLimitListener caps open connections: at most cap(slots) in all and at
// most perClient from one client key (an IPv4 address or IPv6 /64 of the
// socket peer). When every slot is taken Accept waits for one to close, so
// the excess clients wait in the kernel's accept queue; a connection over
// its client's cap is accepted and closed at once, so one address cannot
// hold the queue either.
//
// Peers that are trusted proxies are exempt from the per-client cap: every
// client behind the proxy arrives from the proxy's address, and the proxy's
// connections are bounded by the total alone. (Which client is behind a
// proxied connection is known per request, from X-Forwarded-For, not per
// connection.)
type connLimitListener struct {
	net.Listener
	perClient int
	exempt    proxySet

	slots  chan struct{}
	closed chan struct{}
	once   sync.Once

	mu       sync.Mutex
	byClient map[clientKey]int

	// onWait, when set (tests), is called each time Accept starts waiting
	// for a free slot; onRefuse each time it closes a connection over its
	// client's cap.
	onWait, onRefuse func()
}

func newConnLimitListener(l net.Listener, total, perClient int, exempt proxySet) *connLimitListener {
	return &connLimitListener{
		Listener:  l,
		perClient: perClient,
		exempt:    exempt,
		slots:     make(chan struct{}, total),
		closed:    make(chan struct{}),
		byClient:  make(map[clientKey]int),
	}
}

// Accept waits for a free slot, then returns the next connection whose
// client is under its cap, closing the ones that are not. After Close it
// returns net.ErrClosed.
func (l *connLimitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	default:
		if l.onWait != nil {
			l.onWait()
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
			if l.onRefuse != nil {
				l.onRefuse()
			}
			continue
		}
		return &limitedConn{Conn: c, release: func() { l.release(key, counted) }}, nil
	}
}

// admit takes a per-client slot for a connection from addr, unless its
// client already holds perClient connections.
func (l *connLimitListener) admit(addr net.Addr) (key clientKey, counted, ok bool) {
	var peer netip.Addr
	if tcp, isTCP := addr.(*net.TCPAddr); isTCP {
		peer = tcp.AddrPort().Addr().Unmap().WithZone("")
	}
	if peer.IsValid() && l.exempt[peer] {
		return clientKey{}, false, true
	}
	key = keyOf(peer)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byClient[key] >= l.perClient {
		return key, false, false
	}
	l.byClient[key]++
	return key, true, true
}

func (l *connLimitListener) release(key clientKey, counted bool) {
	if counted {
		l.mu.Lock()
		if l.byClient[key]--; l.byClient[key] == 0 {
			delete(l.byClient, key)
		}
		l.mu.Unlock()
	}
	<-l.slots
}

// Close stops accepting; a waiting Accept returns at once. Open connections
// are not closed (http.Server does that).
func (l *connLimitListener) Close() error {
	err := net.ErrClosed
	l.once.Do(func() {
		close(l.closed)
		err = l.Listener.Close()
	})
	return err
}

// limitedConn gives its slots back when closed, once however often Close is
// called.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite half-closes the TCP connection; net/http uses it to avoid
// resetting a connection whose request body it did not read.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
