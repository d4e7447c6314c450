package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/internal/leakcheck"
	"github.com/agentmcp/agentmcp/internal/pgtest"
	"github.com/agentmcp/agentmcp/ports"
	"github.com/agentmcp/agentmcp/ports/porttest"

	"github.com/jackc/pgx/v5"
)

// openT opens a store of database db on c, closed when t ends.
func openT(t *testing.T, c *pgtest.Cluster, db string, opts Options) *Store {
	t.Helper()
	opts.Password = c.Password
	s, err := Open(t.Context(), c.URL(db), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	c := pgtest.Start(t)
	porttest.TestConversationStore(t, func(t *testing.T, b porttest.StoreBounds) ports.ConversationStore {
		return openT(t, c, c.CreateDatabase(t), Options{MaxConversations: b.MaxConversations, MaxBytes: b.MaxBytes})
	})
}

var local = ports.RefOf("/work/a", ports.Principal{})

func turn(text string, bytes int) ports.Turn {
	return ports.Turn{Messages: []ports.Message{{Role: ports.RoleUser, Content: text}, {Role: ports.RoleAssistant, Content: "ok"}}, Bytes: bytes}
}

// TestReplicasShare: two stores on one database (two replicas) see each
// other's turns, and their appends to one conversation, interleaved, lose
// none and number them once.
func TestReplicasShare(t *testing.T) {
	c := pgtest.Start(t)
	db := c.CreateDatabase(t)
	a, b := openT(t, c, db, Options{}), openT(t, c, db, Options{})
	var wg sync.WaitGroup
	for i := range 10 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			if _, err := s.Append(t.Context(), local, turn(fmt.Sprint("turn ", i), 10), ports.AppendOptions{MaxBytes: 1 << 20}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := b.Load(t.Context(), local)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, turn := range got {
		seen[turn.Messages[0].Content] = true
		if turn.Number != i+1 {
			t.Errorf("turn %d numbered %d", i+1, turn.Number)
		}
	}
	if len(got) != 10 || len(seen) != 10 {
		t.Errorf("replica B loads %d turns (%d distinct) of the 10 both appended", len(got), len(seen))
	}
}

// TestMigrateTogether: replicas starting together on an empty database
// all open it, and the schema is made once (without the advisory lock,
// concurrent CREATE TABLEs fail on PostgreSQL's catalog).
func TestMigrateTogether(t *testing.T) {
	c := pgtest.Start(t)
	db := c.CreateDatabase(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			s, err := Open(t.Context(), c.URL(db), Options{Password: c.Password})
			if err == nil {
				s.Close()
			}
			errs <- err
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a replica starting beside %d others: %v", n-1, err)
		}
	}
	if got := c.SQL(t, db, "SELECT version, min_version FROM agentmcp.schema_version"); got != fmt.Sprintf("%d|%d", SchemaVersion, migrations[SchemaVersion-1].min) {
		t.Errorf("schema_version = %q", got)
	}
}

// TestSchemaVersions: a schema newer than the binary whose minimum it
// still meets is used as it is (a rolling deploy's old replica); one whose
// minimum is newer is refused with one line, the database untouched.
func TestSchemaVersions(t *testing.T) {
	c := pgtest.Start(t)
	db := c.CreateDatabase(t)
	s := openT(t, c, db, Options{})
	if _, err := s.Append(t.Context(), local, turn("kept", 10), ports.AppendOptions{MaxBytes: 1000}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	c.SQL(t, db, fmt.Sprintf("UPDATE agentmcp.schema_version SET version = %d, written_by = 'agentmcp 9.0.0'", SchemaVersion+1))
	old := openT(t, c, db, Options{})
	if got, err := old.Load(t.Context(), local); err != nil || len(got) != 1 {
		t.Errorf("an older binary on a newer schema it may use: Load = %v, %v", got, err)
	}
	old.Close()

	c.SQL(t, db, fmt.Sprintf("UPDATE agentmcp.schema_version SET min_version = %d", SchemaVersion+1))
	_, err := Open(t.Context(), c.URL(db), Options{Password: c.Password})
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("Open on a schema needing a newer binary: %v, want ErrNewerSchema", err)
	}
	msg := err.Error()
	for _, want := range []string{c.URL(db), "agentmcp 9.0.0", "upgrade agentmcp", fmt.Sprintf("this one knows %d", SchemaVersion)} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") || strings.Contains(msg, c.Password) {
		t.Errorf("refusal is not one line without the password: %q", msg)
	}
	if got := c.SQL(t, db, "SELECT version FROM agentmcp.schema_version"); got != fmt.Sprint(SchemaVersion+1) {
		t.Errorf("the refusing binary changed the schema version to %s", got)
	}
}

// TestPasswordInURL: a connection string that holds a password is refused
// before any connection, in either form; without one nothing is refused.
func TestPasswordInURL(t *testing.T) {
	for _, s := range []string{
		"postgres://u:secret@127.0.0.1:1/db",
		"postgresql://u:secret@127.0.0.1:1/db",
		"postgres://u@127.0.0.1:1/db?password=secret",
		"host=127.0.0.1 user=u password=secret dbname=db",
	} {
		_, err := Open(t.Context(), s, Options{})
		if !errors.Is(err, ErrPasswordInURL) {
			t.Errorf("Open(%q) = %v, want ErrPasswordInURL", s, err)
		}
		if strings.Contains(Redact(s), "secret") {
			t.Errorf("Redact(%q) = %q", s, Redact(s))
		}
	}
	for _, s := range []string{"postgres://u@h/db?sslmode=verify-full", "host=h user=u dbname=db"} {
		if HasPassword(s) {
			t.Errorf("HasPassword(%q)", s)
		}
	}
}

// TestUnreachable: a server that is not there fails Open with one line
// naming the store and what to do.
func TestUnreachable(t *testing.T) {
	c := pgtest.Start(t)
	url := c.URL("postgres")
	c.Stop(t)
	_, err := Open(t.Context(), url, Options{Password: c.Password, Timeout: 5 * time.Second})
	if err == nil {
		t.Fatal("Open of a stopped server succeeded")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "conversation store "+url+": cannot") || !strings.Contains(msg, "check that the server runs") || strings.Contains(msg, "\n") {
		t.Errorf("Open of a stopped server: %q", msg)
	}
}

// TestWrongPassword: a refused login says so.
func TestWrongPassword(t *testing.T) {
	c := pgtest.Start(t)
	_, err := Open(t.Context(), c.URL("postgres"), Options{Password: "wrong"})
	if err == nil || !strings.Contains(err.Error(), "refused the login") || strings.Contains(err.Error(), "wrong") {
		t.Errorf("Open with a wrong password: %v", err)
	}
}

// TestSlowDatabase: a database that does not answer (another session
// holds the write lock) fails an Append within the timeout, keeps
// nothing of it, and leaves no goroutine behind; the store then works.
func TestSlowDatabase(t *testing.T) {
	c := pgtest.Start(t)
	db := c.CreateDatabase(t)
	s := openT(t, c, db, Options{Timeout: 300 * time.Millisecond})
	ctx := t.Context()
	hold, err := pgx.Connect(ctx, c.URL(db)+"&password="+c.Password)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close(context.Background())
	if _, err := hold.Exec(ctx, `SELECT pg_advisory_lock($1)`, WriteLock); err != nil {
		t.Fatal(err)
	}
	base := leakcheck.Snapshot()
	for i := range 5 {
		_, err := s.Append(ctx, local, turn(fmt.Sprint("slow ", i), 10), ports.AppendOptions{MaxBytes: 1000})
		if err == nil || !strings.Contains(err.Error(), "no answer within 300ms") {
			t.Fatalf("Append on a database that does not answer: %v", err)
		}
	}
	if _, err := hold.Exec(ctx, `SELECT pg_advisory_unlock($1)`, WriteLock); err != nil {
		t.Fatal(err)
	}
	base.Verify(t)
	if _, err := s.Append(ctx, local, turn("after", 10), ports.AppendOptions{MaxBytes: 1000}); err != nil {
		t.Fatalf("Append once the database answers: %v", err)
	}
	if got, err := s.Load(ctx, local); err != nil || len(got) != 1 || got[0].Messages[0].Content != "after" {
		t.Errorf("after the timeouts the conversation holds %v, %v; want the one turn that was committed", got, err)
	}
}

// TestRestart: the database restarted under a running store fails what
// was under way (nothing of it kept) and the store serves again once it
// is back, every committed turn intact.
func TestRestart(t *testing.T) {
	c := pgtest.Start(t)
	db := c.CreateDatabase(t)
	s := openT(t, c, db, Options{Timeout: 10 * time.Second})
	ctx := t.Context()
	for i := range 3 {
		if _, err := s.Append(ctx, local, turn(fmt.Sprint("before ", i), 10), ports.AppendOptions{MaxBytes: 1 << 20}); err != nil {
			t.Fatal(err)
		}
	}
	// An Append under way when the server stops: it waits on the write
	// lock another session holds, so it is inside its transaction.
	hold, err := pgx.Connect(ctx, c.URL(db)+"&password="+c.Password)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, `SELECT pg_advisory_lock($1)`, WriteLock); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Append(ctx, local, turn("under way", 10), ports.AppendOptions{MaxBytes: 1 << 20})
		done <- err
	}()
	for c.SQL(t, db, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted") != "1" {
		// PostgreSQL's own lock table says when the Append waits: each psql is the pace
	}
	c.Restart(t)
	hold.Close(context.Background())
	if err := <-done; err == nil {
		t.Error("an Append under way across a restart succeeded; its connection was ended")
	} else if strings.Contains(err.Error(), "\n") {
		t.Errorf("its error is not one line: %q", err)
	}
	n, err := s.Append(ctx, local, turn("after", 10), ports.AppendOptions{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatalf("Append after the restart: %v", err)
	}
	got, err := s.Load(ctx, local)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, turn := range got {
		texts = append(texts, turn.Messages[0].Content)
	}
	if strings.Join(texts, ",") != "before 0,before 1,before 2,after" || n != 4 {
		t.Errorf("after the restart the conversation holds %q (the last numbered %d)", texts, n)
	}
}

// TestHoldTurn: a conversation's turn is held by one replica at a time;
// another conversation is not; a release gives it to the next; a replica
// whose session dies (its backend ended, as when its process is killed)
// gives it up with the session, and its late release is harmless.
func TestHoldTurn(t *testing.T) {
	c := pgtest.Start(t)
	db := c.CreateDatabase(t)
	a, b := openT(t, c, db, Options{}), openT(t, c, db, Options{})
	ctx := t.Context()
	hold := func(s *Store, ref ports.ConversationRef) (func(), bool) {
		t.Helper()
		release, ok, err := s.HoldTurn(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		return release, ok
	}
	releaseA, ok := hold(a, local)
	if !ok {
		t.Fatal("replica A cannot claim a free conversation")
	}
	if _, ok := hold(b, local); ok {
		t.Error("replica B claimed the conversation replica A holds")
	}
	releaseOther, ok := hold(b, local.Named("other"))
	if !ok {
		t.Error("replica B cannot claim another conversation")
	}
	releaseOther()
	releaseA()
	releaseA() // twice is harmless
	releaseB, ok := hold(b, local)
	if !ok {
		t.Fatal("replica B cannot claim the conversation once A released it")
	}
	c.SQL(t, db, "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted")
	releaseA, ok = hold(a, local)
	if !ok {
		t.Fatal("replica A cannot claim the conversation after B's session died")
	}
	defer releaseA()
	releaseB()
	if release, ok := hold(b, local); ok {
		release()
		t.Error("replica B's late release freed A's claim")
	}
}
