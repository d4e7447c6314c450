// Package waitfor bounds a test's wait on a channel, so that a value that
// never comes fails the test (naming what it waited for) rather than
// hanging it until go test's own timeout. For tests only.
package waitfor

import (
	"testing"
	"time"
)

// Value returns the next value received from ch, or fails t once patience
// has passed waiting for what.
func Value[T any](t testing.TB, ch <-chan T, patience time.Duration, what string) T {
	t.Helper()
	timer := time.NewTimer(patience)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("gave up after %v waiting for %s", patience, what)
		panic("unreachable")
	}
}
