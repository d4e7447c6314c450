// Package netcap caps and tunes the connections a TCP server accepts: a
// [Listener] that bounds the open connections (in all and per client) and
// makes room by closing idle ones, and [SendBuffer], which bounds each
// accepted connection's kernel send buffer. The HTTP hosts' server
// (adapters/streamable) puts both between its socket and net/http
// (docs/SPEC.md §5.2, §5.3).
//
// It depends on the standard library only and knows nothing of MCP: what it
// learns of a connection's state it learns from net/http's ConnState hook.
package netcap

import "net"

// DefaultSendBuffer is the send buffer the HTTP hosts give each connection,
// in bytes (docs/SPEC.md §5.2).
const DefaultSendBuffer = 256 << 10

// SendBuffer returns l with the kernel send buffer (SO_SNDBUF) of every TCP
// connection it accepts set to size bytes, best effort (the kernel may
// clamp it; a connection that is not TCP is left alone).
//
// Why bound it: a blocked write resumes once about a third of the buffer
// has drained, so with the kernel's autotuned buffer (up to 4 MiB on Linux)
// a client would have to read over a MiB within a write-stall timeout to
// count as progressing; the buffer also bounds the kernel memory a client
// that stops reading can hold.
func SendBuffer(l net.Listener, size int) net.Listener { return sendBufferListener{l, size} }

type sendBufferListener struct {
	net.Listener
	size int
}

func (l sendBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(interface{ SetWriteBuffer(int) error }); ok { // a *net.TCPConn, or a wrapper that reaches one
		_ = tc.SetWriteBuffer(l.size) // best effort: the kernel may clamp it
	}
	return c, err
}

// HasUnread reports whether c's socket holds bytes nobody has read (a
// request that has arrived while no goroutine reads it yet), peeking
// without blocking and consuming nothing. c is a connection a [Listener]
// accepted or any connection exposing syscall.Conn; where the platform
// cannot ask without reading, it reports false.
func HasUnread(c net.Conn) bool {
	if lc, ok := c.(*conn); ok {
		c = lc.Conn
	}
	return hasUnread(c)
}

// PeerClosed reports whether c's peer has closed the connection (its end
// of input is queued, or the connection was reset), peeking without
// blocking and consuming nothing: what net/http's background read learns
// only once its goroutine runs. c is a connection a [Listener] accepted or
// any connection exposing syscall.Conn; where the platform cannot ask
// without reading, it reports false.
func PeerClosed(c net.Conn) bool {
	if lc, ok := c.(*conn); ok {
		c = lc.Conn
	}
	return peerClosed(c)
}
