//go:build !unix

package app

import (
	"io/fs"
	"os"
)

// lockFile cannot tell a stale token file from one in use here: an existing
// file is refused (the person removes it), a new one needs no lock.
func lockFile(*os.File, lockMode) error { return errLockUnsupported }

func openNoFollow(path string) (*os.File, error) { return os.OpenFile(path, os.O_RDWR, 0) }

func ownedByMe(fs.FileInfo) bool { return true }
