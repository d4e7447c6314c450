//go:build unix

package app

import "syscall"

// maxSocketPath is the longest Unix socket path bind(2) takes here, in
// bytes: sun_path's size less its terminating NUL (107 on Linux, 103 on
// the BSDs and macOS).
var maxSocketPath = len(syscall.RawSockaddrUnix{}.Path) - 1
