package hostile

import "syscall"

// cork holds what is written to fd until the socket is closed or uncorked
// (TCP_CORK), so its last data and its FIN leave in one segment.
func cork(fd uintptr) error {
	return syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, 1)
}
