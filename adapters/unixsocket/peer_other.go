//go:build !linux

package unixsocket

import (
	"errors"
	"net"
)

// sameUser refuses every peer where SO_PEERCRED is not available.
func sameUser(net.Conn) error {
	return errors.New("peer credentials cannot be checked on this system")
}
