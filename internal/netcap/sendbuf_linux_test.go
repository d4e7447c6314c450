package netcap_test

import (
	"net"
	"syscall"
	"testing"

	"github.com/agentmcp/agentmcp/internal/netcap"
)

// sendBuffer is the SO_SNDBUF Linux reports for c.
func sendBuffer(t *testing.T, c net.Conn) int {
	t.Helper()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var serr error
	if err := rc.Control(func(fd uintptr) {
		n, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF)
	}); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	return n
}

// TestSendBuffer: every connection SendBuffer's listener accepts has the
// send buffer asked for (Linux reports twice the size set, its
// bookkeeping overhead included), where an untuned one keeps the kernel's.
func TestSendBuffer(t *testing.T) {
	raw, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	const size = 48 << 10
	l := netcap.SendBuffer(raw, size)
	accepted := func(l net.Listener) net.Conn {
		t.Helper()
		c, err := net.Dial("tcp4", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		s, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	if got := sendBuffer(t, accepted(l)); got != 2*size {
		t.Errorf("tuned connection: SO_SNDBUF %d, want %d", got, 2*size)
	}
	if got := sendBuffer(t, accepted(raw)); got == 2*size {
		t.Errorf("untuned connection: SO_SNDBUF %d, the tuned size", got)
	}
}
