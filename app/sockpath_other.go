//go:build !unix

package app

// maxSocketPath is 0 where the limit is not known: no check.
var maxSocketPath = 0
