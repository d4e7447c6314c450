//go:build race

package interop

// raceEnabled reports whether the tests run under the race detector; the
// binary under test is then built with -race too, so a data race in the
// server under real client traffic makes it exit non-zero.
const raceEnabled = true
