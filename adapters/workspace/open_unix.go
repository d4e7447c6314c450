//go:build unix

package workspace

import "syscall"

// openNonblock makes opening a FIFO or device return at once instead of
// waiting for a writer; regular files ignore it. Every open is followed by a
// regular-file check on the descriptor.
const openNonblock = syscall.O_NONBLOCK
