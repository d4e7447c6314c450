//go:build !unix

package sqlite

import "os"

// owner is unknown where files have no Unix owner.
func owner(os.FileInfo) (uid int, known bool) { return 0, false }
