package pgtest

import (
	"strconv"
	"testing"
)

// TestCluster: a cluster starts on a port of its own, answers SQL, keeps
// a database across a restart on the same port, and is not 5432.
func TestCluster(t *testing.T) {
	c := Start(t)
	if c.Port == 5432 || c.Port == 0 {
		t.Fatalf("port %d", c.Port)
	}
	db := c.CreateDatabase(t)
	c.SQL(t, db, "CREATE TABLE x (n int); INSERT INTO x VALUES (41)")
	c.Restart(t)
	if got := c.SQL(t, db, "SELECT n + 1 FROM x"); got != "42" {
		t.Errorf("after a restart SELECT = %q, want 42", got)
	}
	if got := c.SQL(t, db, "SHOW port"); got != strconv.Itoa(c.Port) {
		t.Errorf("port %q, want %d", got, c.Port)
	}
}
