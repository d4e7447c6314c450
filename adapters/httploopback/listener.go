package httploopback

import (
	"net"
	"sync"
)

// limitListener accepts at most cap(slots) open connections. When they are
// all open, Accept waits for one to close before taking the next connection
// from the kernel's accept queue, so the excess clients wait there (SPEC
// §5.2: "the 33rd waits in the accept queue").
type limitListener struct {
	net.Listener
	slots  chan struct{}
	closed chan struct{}
	once   sync.Once
	// onWait, when set (tests), is called each time Accept starts waiting
	// for a free slot.
	onWait func()
}

func newLimitListener(l net.Listener, n int, onWait func()) *limitListener {
	return &limitListener{Listener: l, slots: make(chan struct{}, n), closed: make(chan struct{}), onWait: onWait}
}

// Accept waits for a free slot, then for a connection. After Close it
// returns net.ErrClosed.
func (l *limitListener) Accept() (net.Conn, error) {
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
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
}

// Close stops accepting; a waiting Accept returns at once. Open connections
// are not closed (http.Server does that).
func (l *limitListener) Close() error {
	err := net.ErrClosed
	l.once.Do(func() {
		close(l.closed)
		err = l.Listener.Close()
	})
	return err
}

// limitConn gives its slot back when closed (once, however often Close is
// called).
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

// CloseWrite half-closes the TCP connection; net/http uses it to avoid
// resetting a connection whose request body it did not read.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
