//go:build !unix || aix

package netcap

import "net"

// hasUnread reports whether c's socket holds bytes nobody has read; where
// that cannot be asked without reading, it reports false.
func hasUnread(net.Conn) bool { return false }

// peerClosed reports whether c's peer closed the connection; where that
// cannot be asked without reading, it reports false.
func peerClosed(net.Conn) bool { return false }
