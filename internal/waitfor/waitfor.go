// Package waitfor bounds a test's wait on a channel, so that a value that
// never comes fails the test (naming what it waited for) rather than
// hanging it until go test's own timeout. For tests only.
package waitfor

import (
	"bufio"
	"io"
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

// StreamPast reads an event stream's lines (its keep-alives) until d has
// passed since began, so that a test outlives a server-side deadline paced
// by the server's own writes rather than by a sleep; then it calls release
// (which lets the call answer) and returns the rest of the stream. A stream
// that ends or fails before d has passed fails t.
func StreamPast(t testing.TB, stream io.Reader, began time.Time, d time.Duration, release func()) []byte {
	t.Helper()
	br := bufio.NewReader(stream)
	for time.Since(began) < d {
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatalf("the stream ended %v after it began, before %v: %v", time.Since(began), d, err)
		}
	}
	release()
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	return rest
}
