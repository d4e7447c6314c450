//go:build race

package load

// Race reports whether the race detector is on: load tests scale down
// under it, which slows every request several times.
const Race = true
