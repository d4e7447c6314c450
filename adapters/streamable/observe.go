package streamable

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"

	"github.com/agentmcp/agentmcp/internal/netcap"
	"github.com/agentmcp/agentmcp/ports"
)

// ObserveConns reports every connection ln accepts to o
// ([ports.Observer.StartConnection], network.transport "tcp") until it is
// closed, for a connections-open gauge (docs/SPEC.md §13). A nil o or ln is
// returned as is: a host calls it on whatever its listen returned.
func ObserveConns(ln net.Listener, o ports.Observer) net.Listener {
	if o == nil || ln == nil {
		return ln
	}
	return &observedListener{Listener: ln, o: o}
}

type observedListener struct {
	net.Listener
	o ports.Observer
}

func (l *observedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &observedConn{Conn: c, end: l.o.StartConnection("tcp")}, nil
}

// observedConn ends its observation on its first Close.
type observedConn struct {
	net.Conn
	once sync.Once
	end  func()
}

func (c *observedConn) Close() error {
	c.once.Do(c.end)
	return c.Conn.Close()
}

// SyscallConn and SetWriteBuffer reach the socket beneath, so that the
// connection caps still peek at unread bytes and tune the send buffer
// (internal/netcap) on an observed connection.
func (c *observedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}

func (c *observedConn) SetWriteBuffer(bytes int) error {
	if wb, ok := c.Conn.(interface{ SetWriteBuffer(int) error }); ok {
		return wb.SetWriteBuffer(bytes)
	}
	return nil
}

// CloseWrite half-closes the TCP connection (net/http uses it to end a
// refused request gracefully).
func (c *observedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// clientGoneKey keys, in a connection's context, the function that tells
// whether its client has closed it (engine.ExchangeOptions.ClientGone).
type clientGoneKey struct{}

// withClientGone is the Server's http.Server.ConnContext: each
// connection's requests can tell, by a peek at the socket, that the client
// has closed it before net/http's background read has noticed, so an
// answer naming a parked round or a task is not written to nobody
// (docs/SPEC.md §6, §14). One function per connection, none per request.
func withClientGone(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, clientGoneKey{}, func() bool { return netcap.PeerClosed(c) })
}
