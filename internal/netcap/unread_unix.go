//go:build unix && !aix

package netcap

import (
	"net"
	"syscall"
)

// hasUnread reports whether c's socket holds bytes nobody has read: a
// request that has arrived while the server's goroutine for it has not run
// yet.
func hasUnread(c net.Conn) bool {
	n, ok, _ := peek(c)
	return ok && n > 0
}

// peerClosed reports whether c's peer closed the connection: a peek that
// reads the end of input (0 bytes, no error) or fails other than "would
// block" (reset).
func peerClosed(c net.Conn) bool {
	n, ok, err := peek(c)
	return ok && (n == 0 && err == nil || err != nil && err != syscall.EAGAIN && err != syscall.EWOULDBLOCK && err != syscall.EINTR)
}

// peek reads one byte of c's socket without blocking and without consuming
// it; ok is false when c exposes no socket.
func peek(c net.Conn) (n int, ok bool, err error) {
	sc, isSocket := c.(syscall.Conn)
	if !isSocket {
		return 0, false, nil
	}
	rc, rerr := sc.SyscallConn()
	if rerr != nil {
		return 0, false, nil
	}
	var buf [1]byte
	if cerr := rc.Control(func(fd uintptr) {
		n, _, err = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	}); cerr != nil {
		return 0, false, nil
	}
	return n, true, err
}
