package netcap

import (
	"net"
	"testing"
	"time"
)

// deadlineConn records the write deadlines armed on it, and the deadline
// in force at each write.
type deadlineConn struct {
	net.Conn
	armed   []time.Time
	current time.Time
	writes  []time.Time
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.armed = append(c.armed, t)
	c.current = t
	return nil
}

func (c *deadlineConn) SetDeadline(t time.Time) error { return c.SetWriteDeadline(t) }

func (c *deadlineConn) Write(b []byte) (int, error) {
	c.writes = append(c.writes, c.current)
	return len(b), nil
}

// TestConnWriteDeadline: the deadline the framing renews before every
// write, and net/http clears after every response, is armed on the socket
// only when the armed one is not within a sixteenth of the timeout after
// the one asked for; a cleared deadline is disarmed before the next write,
// so no write runs under a deadline nobody asked for.
func TestConnWriteDeadline(t *testing.T) {
	rec := &deadlineConn{}
	c := &conn{Conn: rec}
	const stall = 30 * time.Second

	first := time.Now().Add(stall)
	if err := c.SetWriteDeadline(first); err != nil {
		t.Fatal(err)
	}
	if len(rec.armed) != 1 || rec.armed[0].Before(first) || rec.armed[0].After(first.Add(stall/16)) {
		t.Fatalf("armed %v for %v: want one deadline within %v after it", rec.armed, first, stall/16)
	}
	armed := rec.armed[0]

	// A response later, within the slack: renewed and cleared without
	// touching the socket, and the write runs under the armed deadline.
	if err := c.SetWriteDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetWriteDeadline(first.Add(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if len(rec.armed) != 1 || !rec.writes[0].Equal(armed) {
		t.Fatalf("armed %v, write under %v: want still only %v", rec.armed, rec.writes[0], armed)
	}

	// Cleared, then written (net/http's own writes, which ask for no
	// deadline): disarmed first.
	if err := c.SetWriteDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if len(rec.armed) != 2 || !rec.armed[1].IsZero() || !rec.writes[1].IsZero() {
		t.Fatalf("armed %v, writes %v: want the deadline disarmed before the write", rec.armed, rec.writes)
	}

	// Asked again within the slack of the deadline armed before it was
	// disarmed: armed again (what was armed is gone).
	if err := c.SetWriteDeadline(first.Add(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if len(rec.armed) != 3 || rec.armed[2].Before(first) {
		t.Fatalf("armed %v: want a third deadline, after the disarming", rec.armed)
	}

	// A later deadline than the armed one: armed, never left earlier than
	// asked.
	later := rec.armed[2].Add(time.Second)
	if err := c.SetWriteDeadline(later); err != nil {
		t.Fatal(err)
	}
	if got := rec.armed[len(rec.armed)-1]; got.Before(later) {
		t.Fatalf("armed %v for %v: earlier than asked", got, later)
	}

	// SetDeadline is applied as asked, and forgets what was armed.
	n := len(rec.armed)
	if err := c.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetWriteDeadline(later); err != nil {
		t.Fatal(err)
	}
	if len(rec.armed) != n+2 || !rec.armed[n].IsZero() || rec.armed[n+1].Before(later) {
		t.Fatalf("armed %v after SetDeadline(zero) and a deadline of %v: want the zero, then it armed", rec.armed[n:], later)
	}

	// An earlier deadline than the slack allows, and one in the past, are
	// armed as soon as asked.
	if err := c.SetWriteDeadline(time.Now().Add(stall)); err != nil {
		t.Fatal(err)
	}
	sooner := time.Now().Add(time.Second)
	if err := c.SetWriteDeadline(sooner); err != nil {
		t.Fatal(err)
	}
	if got := rec.armed[len(rec.armed)-1]; got.Before(sooner) || got.After(sooner.Add(time.Second/16)) {
		t.Fatalf("armed %v for %v", got, sooner)
	}
	past := time.Now().Add(-time.Second)
	if err := c.SetWriteDeadline(past); err != nil {
		t.Fatal(err)
	}
	if got := rec.armed[len(rec.armed)-1]; !got.Equal(past) {
		t.Fatalf("armed %v for the past deadline %v", got, past)
	}
}

// TestConnWriteDeadlinePassedBeforeWrite: a write-stall deadline that
// passes before the write it guards has started (the server's goroutine ran
// late: net/http writes the buffered response after the handler returns) is
// moved to the write's start plus the time it was asked ahead, so the
// response is written, not dropped with its connection closed; a deadline
// asked already in the past (how a write is aborted) stays as it is. The
// clock is the test's: nothing waits.
func TestConnWriteDeadlinePassedBeforeWrite(t *testing.T) {
	rec := &deadlineConn{}
	now := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	c := &conn{Conn: rec, now: func() time.Time { return now }}
	const stall = 300 * time.Millisecond

	if err := c.SetWriteDeadline(now.Add(stall)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * stall) // the write starts after the deadline
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if got := rec.writes[0]; got.Before(now.Add(stall)) {
		t.Fatalf("the write ran under %v, passed before it started at %v: want at least %v", got, now, now.Add(stall))
	}

	// Within the deadline: written under it, nothing re-armed.
	armed := len(rec.armed)
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if len(rec.armed) != armed || !rec.writes[1].Equal(rec.writes[0]) {
		t.Fatalf("armed %v, writes %v: want the deadline left alone", rec.armed, rec.writes)
	}

	// A deadline asked in the past aborts the write: not moved.
	past := now.Add(-time.Second)
	if err := c.SetWriteDeadline(past); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if got := rec.writes[2]; !got.Equal(past) {
		t.Fatalf("the write ran under %v, want the past deadline %v", got, past)
	}
}
