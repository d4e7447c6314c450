//go:build unix

package sqlite

import (
	"os"
	"syscall"
)

// owner returns the user id owning fi's file.
func owner(fi os.FileInfo) (uid int, known bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
