//go:build unix

package app

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// lockFile takes an advisory lock (flock(2)) on f without waiting. The
// kernel drops it when the process ends, however it ends: that is how a
// token file left by a killed host is told from one a running host uses.
func lockFile(f *os.File, mode lockMode) error {
	how := syscall.LOCK_SH
	if mode == exclusiveLock {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errWouldBlock
		}
		return err
	}
}

// openNoFollow opens path for reading and writing without following a
// final symbolic link.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
}

// ownedByMe reports whether fi's file belongs to this process's user.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
