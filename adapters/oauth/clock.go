package oauth

import "time"

// Clock is the verifier's source of time. It keeps the two kinds of time
// apart: token lifetimes are judged on the wall clock, because exp and nbf are
// wall-clock instants (RFC 7519 §4.1.4–§4.1.5), while key-cache ages and the
// refetch interval are measured on a monotonic clock, so that stepping the
// system clock neither ages keys instantly nor keeps withdrawn keys forever.
//
// Implementations must be safe for concurrent use.
type Clock interface {
	// Now returns the current wall-clock time. It is compared with a
	// token's exp and nbf (whole Unix seconds) with 60 s of tolerance.
	Now() time.Time

	// Monotonic returns a reading of a monotonic clock. Only differences
	// between two readings mean anything; readings never decrease.
	Monotonic() time.Duration
}

// systemClock is the default [Clock]: time.Now for the wall clock, and the
// monotonic reading carried by time.Now measured from construction.
type systemClock struct {
	start time.Time // carries a monotonic reading
}

func newSystemClock() systemClock { return systemClock{start: time.Now()} }

func (c systemClock) Now() time.Time { return time.Now() }

func (c systemClock) Monotonic() time.Duration { return time.Since(c.start) }
