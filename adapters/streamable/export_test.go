package streamable

import "net"

// HasUnread reports whether a connection LimitListener accepted has bytes
// in its socket that nobody has read.
func HasUnread(c net.Conn) bool {
	lc, ok := c.(*limitConn)
	return ok && hasUnread(lc.Conn)
}
