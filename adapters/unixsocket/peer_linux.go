package unixsocket

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// sameUser reads the peer's credentials (SO_PEERCRED) and accepts only this
// process's user.
func sameUser(c net.Conn) error {
	raw, err := c.(*net.UnixConn).SyscallConn()
	if err != nil {
		return err
	}
	var cred *syscall.Ucred
	cerr := raw.Control(func(fd uintptr) {
		cred, err = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	})
	switch {
	case cerr != nil:
		return cerr
	case err != nil:
		return err
	case int(cred.Uid) != os.Getuid():
		return fmt.Errorf("peer uid %d is not this process's", cred.Uid)
	}
	return nil
}
