//go:build unix && !aix

package netcap

import (
	"net"
	"syscall"
)

// hasUnread reports whether c's socket holds bytes nobody has read: a
// request that has arrived while the server's goroutine for it has not run
// yet. It peeks without blocking and consumes nothing.
func hasUnread(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var n int
	var buf [1]byte
	_ = rc.Control(func(fd uintptr) {
		n, _, _ = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	})
	return n > 0
}

// peerClosed reports whether c's peer closed the connection: a peek that
// reads the end of input (0 bytes, no error) or fails other than "would
// block" (reset).
func peerClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	var buf [1]byte
	_ = rc.Control(func(fd uintptr) {
		n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n == 0 && err == nil || err != nil && err != syscall.EAGAIN && err != syscall.EWOULDBLOCK && err != syscall.EINTR
	})
	return closed
}
