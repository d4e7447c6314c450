//go:build !unix

package workspace

// openNonblock is 0 where O_NONBLOCK is not available to os.OpenFile.
const openNonblock = 0
