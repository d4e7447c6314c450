//go:build !race

package interop

// raceEnabled reports whether the tests run under the race detector.
const raceEnabled = false
