// Package postgres is the shared [ports.ConversationStore]: the reference
// agent's conversations in a PostgreSQL database (docs/SPEC.md §9), on
// github.com/jackc/pgx/v5, so that replicas of agentmcp on several
// machines serve the same conversations.
//
// # Connection
//
// [Open] takes a libpq connection string, postgres://user@host:port/db?…
// (TLS as its sslmode says; libpq's default, prefer, when it says none)
// or key=value pairs. The password is never in it — a string that holds
// one is refused ([ErrPasswordInURL]), because a command line can be read
// by every local user: it is [Options.Password] (the command's
// --store-password-file or PGPASSWORD), else libpq's password file
// (PGPASSFILE, ~/.pgpass). Errors name the store by its URL without any
// password ([Redact]).
//
// # Schema and migrations
//
// Everything lives in the database schema "agentmcp":
//
//	schema_version(version, min_version, written_by)            one row: the schema, the oldest schema a binary must know to use it, who wrote it
//	conversations(id, root, principal, name, forked_from, turns, bytes, updated)  one per (root, principal, name); updated: Unix ms
//	turns(conversation, seq, bytes, messages, changes)          seq: the turn's number; messages, changes: jsonb (adapters/internal/turnjson)
//
// [Open] migrates at start, in one transaction under a transaction-level
// advisory lock ([MigrationLock]), so replicas starting together migrate
// once and in turn. Migrations are additive (a column or table old
// binaries ignore), versioned, and each records the oldest schema version
// a binary must know to use the result: a binary refuses, with one line,
// only a database whose min_version is newer than its own
// [SchemaVersion] — a newer schema that keeps min_version low is used as
// it is, so a rolling deploy's old replicas keep running.
//
// # Writes and bounds
//
// Each Append is one transaction under a second transaction-level
// advisory lock ([WriteLock]): the store's writers, on every replica,
// queue on it as SQLite's do on its file, so the bounds — the principal's
// conversations, the conversation's bytes, the store's conversations,
// bytes and age, with the same fair eviction as adapters/sqlite — hold
// across replicas exactly. A turn takes seconds; its Append milliseconds.
//
// # Faults
//
// Every operation is bounded by [Options.Timeout] (a slow database fails
// it, the connection is cancelled, nothing waits on). A database that is
// unreachable, refuses the login or has a newer schema fails Open with one
// line. A database restarted under a running server fails the operations
// that were under way (an Append's transaction is rolled back: nothing of
// it is kept) and the next ones connect again.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/adapters/internal/turnjson"
	"github.com/agentmcp/agentmcp/ports"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Advisory lock keys (PostgreSQL's one 64-bit key space, per database):
// "agentmcp" in ASCII, then 1 for migrations and 2 for writes.
const (
	MigrationLock int64 = 0x6167656e746d6301
	WriteLock     int64 = 0x6167656e746d6302
	// CallLock serialises the writes that count the shared tasks' and
	// rounds' bounds (calls.go).
	CallLock int64 = 0x6167656e746d6303
)

// DefaultTimeout bounds one operation of the store.
const DefaultTimeout = 30 * time.Second

// DefaultMaxConns is the pool's size when [Options.MaxConns] is 0.
const DefaultMaxConns = 8

// Options configures a [Store]. Zero bounds mean no bound.
type Options struct {
	MaxConversations int           // conversations kept; the least recently updated go first
	MaxBytes         int64         // bytes of turns kept in all (the turns' Bytes)
	MaxAge           time.Duration // a conversation not updated for longer is dropped

	// Password is the database user's password; "" leaves it to libpq's
	// password file (PGPASSFILE, ~/.pgpass) or none.
	Password string

	// Timeout bounds each operation, the connection at Open included
	// (default [DefaultTimeout]).
	Timeout time.Duration

	// MaxConns bounds the pool (default [DefaultMaxConns]).
	MaxConns int32

	// WrittenBy names the binary in schema_version when it migrates
	// (e.g. "agentmcp 0.3.0").
	WrittenBy string

	// Now is the clock (time.Now when nil).
	Now func() time.Time

	// Scope is what the shared tasks and rounds are kept under (calls.go):
	// a served workspace's key, so that servers of other workspaces
	// sharing the database neither see nor count them.
	Scope string

	// Lease is how long a replica's claim on the calls it runs lasts
	// without renewal (default [DefaultLease]); it renews it three times
	// a lease.
	Lease time.Duration
}

// Store is a conversation store in a PostgreSQL database. It is safe for
// concurrent use, and any number of processes may open the same database.
type Store struct {
	pool *pgxpool.Pool
	conn *pgx.ConnConfig // the pool's, for the listening connection
	name string          // the URL without a password, for errors and logs
	opts Options

	calls calls // the shared tasks and rounds, once joined (calls.go)
}

var _ ports.ConversationStore = (*Store)(nil)

// migration takes the schema from its index to the next version; min is
// the oldest schema version a binary must know to use the result.
type migration struct {
	sql string
	min int
}

// migrations[i] takes the schema from version i to i+1. Only ever append:
// a released migration does not change.
var migrations = []migration{
	{min: 1, sql: `
	CREATE TABLE agentmcp.conversations (
		id          bigserial PRIMARY KEY,
		root        text NOT NULL,
		principal   text NOT NULL,
		name        text NOT NULL,
		forked_from text NOT NULL DEFAULT '',
		turns       integer NOT NULL,
		bytes       bigint NOT NULL,
		updated     bigint NOT NULL, -- Unix milliseconds
		UNIQUE (root, principal, name)
	);
	CREATE INDEX conversations_updated ON agentmcp.conversations (updated);
	CREATE INDEX conversations_principal ON agentmcp.conversations (principal);
	CREATE TABLE agentmcp.turns (
		conversation bigint NOT NULL REFERENCES agentmcp.conversations (id) ON DELETE CASCADE,
		seq          integer NOT NULL,
		bytes        bigint NOT NULL,
		messages     jsonb NOT NULL,
		changes      jsonb,
		PRIMARY KEY (conversation, seq)
	);`},
	// 2: tasks and rounds shared by replicas (calls.go). Additive: a
	// binary of schema 1 ignores these tables, so min stays 1 — it keeps
	// its tasks in its own memory, and only the replicas of schema 2
	// share theirs.
	{min: 1, sql: callsSchema},
}

// SchemaVersion is the schema this package writes and the newest it knows.
var SchemaVersion = len(migrations)

// ErrPasswordInURL is the error of [Open] given a connection string that
// holds a password.
var ErrPasswordInURL = errors.New("the store URL holds a password, which a command line shows to every local user: " +
	"remove it and give it with --store-password-file, PGPASSWORD or a password file (PGPASSFILE)")

// ErrNewerSchema is the kind of error of [Open] on a database whose
// schema needs a newer binary.
var ErrNewerSchema = errors.New("the store's schema is newer than this agentmcp")

// Open connects to the database connString names, migrates its schema
// and applies the age bound. Its errors are one line that names the store
// (without a password) and what to do.
func Open(ctx context.Context, connString string, opts Options) (*Store, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if HasPassword(connString) {
		return nil, ErrPasswordInURL
	}
	s := &Store{name: Redact(connString), opts: opts}
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, s.fault("cannot read its URL", err)
	}
	if opts.Password != "" {
		cfg.ConnConfig.Password = opts.Password
	}
	if cfg.ConnConfig.ConnectTimeout == 0 || cfg.ConnConfig.ConnectTimeout > opts.Timeout {
		cfg.ConnConfig.ConnectTimeout = opts.Timeout
	}
	cfg.MaxConns = opts.MaxConns
	cfg.ConnConfig.RuntimeParams["application_name"] = "agentmcp"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, s.fault("cannot connect", err)
	}
	s.pool = pool
	s.conn = cfg.ConnConfig
	pingCtx, cancel := context.WithTimeout(ctx, opts.Timeout)
	err = pool.Ping(pingCtx)
	cancel()
	if err != nil {
		pool.Close()
		return nil, s.fault("cannot connect", err)
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	if err := s.write(ctx, s.expire); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Name is the store's URL without a password.
func (s *Store) Name() string { return s.name }

// Close closes the store's connections (a replica that has not left
// stops listening: its lease lapses).
func (s *Store) Close() error {
	s.calls.stop()
	s.pool.Close()
	return nil
}

// HasPassword reports whether connString, a URL or key=value pairs,
// holds a password.
func HasPassword(connString string) bool {
	if u, err := url.Parse(connString); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		if _, ok := u.User.Password(); ok {
			return true
		}
		for k := range u.Query() {
			if strings.EqualFold(k, "password") {
				return true
			}
		}
		return false
	}
	for _, field := range strings.Fields(connString) {
		if k, _, ok := strings.Cut(field, "="); ok && strings.EqualFold(strings.TrimSpace(k), "password") {
			return true
		}
	}
	return false
}

// Redact returns connString as errors and logs may show it: a URL without
// its password and password parameter; key=value pairs without password=.
func Redact(connString string) string {
	if u, err := url.Parse(connString); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		if u.User != nil {
			u.User = url.User(u.User.Username())
		}
		q := u.Query()
		for k := range q {
			if strings.EqualFold(k, "password") {
				q.Del(k)
			}
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	var kept []string
	for _, field := range strings.Fields(connString) {
		if k, _, _ := strings.Cut(field, "="); !strings.EqualFold(strings.TrimSpace(k), "password") {
			kept = append(kept, field)
		}
	}
	return strings.Join(kept, " ")
}

// migrate brings the schema to SchemaVersion under MigrationLock, or
// refuses a schema that needs a newer binary.
func (s *Store) migrate(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, MigrationLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS agentmcp;
			CREATE TABLE IF NOT EXISTS agentmcp.schema_version (
				one         boolean PRIMARY KEY DEFAULT true CHECK (one),
				version     integer NOT NULL,
				min_version integer NOT NULL,
				written_by  text NOT NULL
			)`); err != nil {
			return err
		}
		var v, minV int
		var by string
		err := tx.QueryRow(ctx, `SELECT version, min_version, written_by FROM agentmcp.schema_version`).Scan(&v, &minV, &by)
		if errors.Is(err, pgx.ErrNoRows) {
			v, minV = 0, 0
		} else if err != nil {
			return err
		}
		if minV > SchemaVersion {
			return fmt.Errorf("%w: conversation store %s has schema version %d (written by %s), which needs an agentmcp that knows schema %d; this one knows %d: upgrade agentmcp",
				ErrNewerSchema, s.name, v, by, minV, SchemaVersion)
		}
		if v >= SchemaVersion {
			return nil // current, or newer and still readable by this binary
		}
		for ; v < SchemaVersion; v++ {
			if _, err := tx.Exec(ctx, migrations[v].sql); err != nil {
				return fmt.Errorf("migration to schema %d: %w", v+1, err)
			}
			minV = max(minV, migrations[v].min)
		}
		_, err = tx.Exec(ctx, `INSERT INTO agentmcp.schema_version (version, min_version, written_by) VALUES ($1, $2, $3)
			ON CONFLICT (one) DO UPDATE SET version = excluded.version, min_version = excluded.min_version, written_by = excluded.written_by`,
			SchemaVersion, minV, s.writtenBy())
		return err
	})
	if errors.Is(err, ErrNewerSchema) {
		return err
	}
	if err != nil {
		return s.fault("cannot migrate its schema", err)
	}
	return nil
}

func (s *Store) writtenBy() string {
	if s.opts.WrittenBy != "" {
		return s.opts.WrittenBy
	}
	return "agentmcp"
}

// fault turns err into one line that names the store, the cause and what
// to do.
func (s *Store) fault(doing string, err error) error {
	return s.faultOf("conversation store", doing, err)
}

// faultOf is fault for the store as what (its conversations, its tasks).
func (s *Store) faultOf(what, doing string, err error) error {
	cause := oneLine(err.Error())
	todo := "check that the server runs and --store names it"
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && (pe.Code == "28P01" || pe.Code == "28000"):
		cause = "the server refused the login (" + pe.Message + ")"
		todo = "check the user and its password (--store-password-file, PGPASSWORD or PGPASSFILE)"
	case errors.As(err, &pe) && pe.Code == "3D000":
		cause = "the database does not exist (" + pe.Message + ")"
		todo = "create it (createdb), or name another in --store"
	case errors.As(err, &pe) && pe.Code == "53100":
		cause = "the database's disk is full"
		todo = "free space on it"
	case errors.Is(err, context.DeadlineExceeded):
		cause = fmt.Sprintf("no answer within %v", s.opts.Timeout)
	}
	return fmt.Errorf("%s %s: %s: %s: %s", what, s.name, doing, cause, todo)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// write runs fn in one transaction under WriteLock, bounded by the
// store's timeout; its error is fn's refusal ([ports.ErrConversationLimit]
// and its kin) as it is, else [Store.fault]'s line (wrapping
// [ports.ErrStoreFull] for a full disk).
func (s *Store) write(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, WriteLock); err != nil {
			return err
		}
		return fn(ctx, tx)
	})
	if err == nil {
		return nil
	}
	for _, kind := range []error{ports.ErrConversationLimit, ports.ErrConversationExists, ports.ErrNoConversation} {
		if errors.Is(err, kind) {
			return err
		}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "53100" {
		return fmt.Errorf("%w: %w", ports.ErrStoreFull, s.fault("cannot write it", err))
	}
	return s.fault("cannot write it", err)
}

// cutoff is the oldest update time kept, in Unix milliseconds (0: no age
// limit).
func (s *Store) cutoff() int64 {
	if s.opts.MaxAge <= 0 {
		return 0
	}
	return s.opts.Now().Add(-s.opts.MaxAge).UnixMilli()
}

// Load returns ref's committed turns, oldest first.
func (s *Store) Load(ctx context.Context, ref ports.ConversationRef) ([]ports.Turn, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT t.seq, t.bytes, t.messages, t.changes FROM agentmcp.turns t
		JOIN agentmcp.conversations c ON c.id = t.conversation
		WHERE c.root = $1 AND c.principal = $2 AND c.name = $3 AND c.updated >= $4
		ORDER BY t.seq`, ref.Root, ref.Principal, ref.Name, s.cutoff())
	if err != nil {
		return nil, s.fault("cannot read it", err)
	}
	defer rows.Close()
	turns, err := turnjson.ScanTurns(rows)
	if err != nil {
		return nil, s.fault("cannot read it", err)
	}
	return turns, nil
}

// Append adds turn to ref's conversation (creating it, or forking it, as
// [ports.ConversationStore] says) and applies the bounds, in one
// transaction.
func (s *Store) Append(ctx context.Context, ref ports.ConversationRef, turn ports.Turn, o ports.AppendOptions) (int, error) {
	b, err := turnjson.EncodeMessages(turn.Messages)
	if err != nil {
		return 0, fmt.Errorf("conversation store %s: the turn cannot be encoded: %w", s.name, err)
	}
	changes, err := turnjson.EncodeChanges(turn.Changes)
	if err != nil {
		return 0, fmt.Errorf("conversation store %s: the turn's changes cannot be encoded: %w", s.name, err)
	}
	var number int
	err = s.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := s.expire(ctx, tx); err != nil {
			return err
		}
		id, err := s.conversation(ctx, tx, ref, o)
		if err != nil {
			return err
		}
		var ch any // NULL when there are none
		if changes != nil {
			ch = changes
		}
		if err := tx.QueryRow(ctx, `INSERT INTO agentmcp.turns (conversation, seq, bytes, messages, changes)
			VALUES ($1, (SELECT coalesce(max(seq), 0) + 1 FROM agentmcp.turns WHERE conversation = $1), $2, $3, $4) RETURNING seq`,
			id, turn.Bytes, b, ch).Scan(&number); err != nil {
			return err
		}
		if err := s.trim(ctx, tx, id, o.MaxBytes); err != nil {
			return err
		}
		return s.bound(ctx, tx, id, ref.Principal)
	})
	if err != nil {
		return 0, err
	}
	return number, nil
}

// conversation returns the id of ref's conversation, updated now: the one
// that exists, or a new one within o.MaxPerPrincipal, with o.ForkFrom's
// turns (up to o.ForkThrough) when set.
func (s *Store) conversation(ctx context.Context, tx pgx.Tx, ref ports.ConversationRef, o ports.AppendOptions) (int64, error) {
	now := s.opts.Now().UnixMilli()
	const find = `SELECT id FROM agentmcp.conversations WHERE root = $1 AND principal = $2 AND name = $3`
	var id int64
	err := tx.QueryRow(ctx, find, ref.Root, ref.Principal, ref.Name).Scan(&id)
	switch {
	case err == nil && o.ForkFrom != "":
		return 0, ports.ErrConversationExists
	case err == nil:
		_, err = tx.Exec(ctx, `UPDATE agentmcp.conversations SET updated = $1 WHERE id = $2`, now, id)
		return id, err
	case !errors.Is(err, pgx.ErrNoRows):
		return 0, err
	}
	if o.MaxPerPrincipal > 0 {
		var held int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM agentmcp.conversations WHERE root = $1 AND principal = $2`,
			ref.Root, ref.Principal).Scan(&held); err != nil {
			return 0, err
		}
		if held >= o.MaxPerPrincipal {
			return 0, ports.ErrConversationLimit
		}
	}
	var from int64
	if o.ForkFrom != "" {
		err := tx.QueryRow(ctx, find, ref.Root, ref.Principal, o.ForkFrom).Scan(&from)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, ports.ErrNoConversation
		}
		if err != nil {
			return 0, err
		}
	}
	if err := tx.QueryRow(ctx, `INSERT INTO agentmcp.conversations (root, principal, name, forked_from, turns, bytes, updated)
		VALUES ($1, $2, $3, $4, 0, 0, $5) RETURNING id`, ref.Root, ref.Principal, ref.Name, o.ForkFrom, now).Scan(&id); err != nil {
		return 0, err
	}
	if o.ForkFrom != "" {
		if _, err := tx.Exec(ctx, `INSERT INTO agentmcp.turns (conversation, seq, bytes, messages, changes)
			SELECT $1, seq, bytes, messages, changes FROM agentmcp.turns WHERE conversation = $2 AND ($3 = 0 OR seq <= $3)`,
			id, from, o.ForkThrough); err != nil {
			return 0, err
		}
	}
	return id, nil
}

// trim drops conversation id's oldest whole turns until the rest fit
// maxBytes (the newest stays), and updates its totals.
func (s *Store) trim(ctx context.Context, tx pgx.Tx, id int64, maxBytes int) error {
	rows, err := tx.Query(ctx, `SELECT seq, bytes FROM agentmcp.turns WHERE conversation = $1 ORDER BY seq DESC`, id)
	if err != nil {
		return err
	}
	turns, total, dropFrom, err := turnjson.Kept(rows, maxBytes)
	rows.Close() // before the writes below: the transaction's connection is the rows' until then
	if err != nil {
		return err
	}
	if dropFrom > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM agentmcp.turns WHERE conversation = $1 AND seq <= $2`, id, dropFrom); err != nil {
			return err
		}
	}
	_, err = tx.Exec(ctx, `UPDATE agentmcp.conversations SET turns = $1, bytes = $2 WHERE id = $3`, turns, total, id)
	return err
}

// bound applies the store's bounds (turnjson.Bound), never dropping
// conversation keep; a conversation's turns go with it (ON DELETE CASCADE).
func (s *Store) bound(ctx context.Context, tx pgx.Tx, keep int64, principal string) error {
	return turnjson.Bound(ctx, turnjson.Evictor{
		Table: "agentmcp.conversations",
		Arg:   func(n int) string { return "$" + strconv.Itoa(n) },
		Int: func(ctx context.Context, query string, args ...any) (n int64, ok bool, err error) {
			err = tx.QueryRow(ctx, query, args...).Scan(&n)
			if errors.Is(err, pgx.ErrNoRows) {
				return 0, false, nil
			}
			return n, err == nil, err
		},
		Delete: func(ctx context.Context, id int64) error {
			_, err := tx.Exec(ctx, `DELETE FROM agentmcp.conversations WHERE id = $1`, id)
			return err
		},
	}, keep, principal, s.opts.MaxConversations, s.opts.MaxBytes)
}

// expire drops the conversations older than MaxAge (their turns with
// them: ON DELETE CASCADE).
func (s *Store) expire(ctx context.Context, tx pgx.Tx) error {
	if s.opts.MaxAge <= 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `DELETE FROM agentmcp.conversations WHERE updated < $1`, s.cutoff())
	return err
}

// List returns the conversations f selects within the age limit, the
// most recently updated first.
func (s *Store) List(ctx context.Context, f ports.ConversationFilter) ([]ports.ConversationInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	var limit any // NULL: no limit
	if f.Limit > 0 {
		limit = f.Limit
	}
	rows, err := s.pool.Query(ctx, `SELECT root, principal, name, forked_from, turns, bytes, updated FROM agentmcp.conversations
		WHERE updated >= $1 AND ($2 = '' OR root = $2) AND ($3 = '' OR principal = $3)
		ORDER BY updated DESC, id DESC LIMIT $4`, s.cutoff(), f.Root, f.Principal, limit)
	if err != nil {
		return nil, s.fault("cannot read it", err)
	}
	defer rows.Close()
	var out []ports.ConversationInfo
	for rows.Next() {
		var c ports.ConversationInfo
		var updated int64
		if err := rows.Scan(&c.Ref.Root, &c.Ref.Principal, &c.Ref.Name, &c.ForkedFrom, &c.Turns, &c.Bytes, &updated); err != nil {
			return nil, s.fault("cannot read it", err)
		}
		c.Updated = time.UnixMilli(updated)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fault("cannot read it", err)
	}
	return out, nil
}

// Delete forgets ref's conversation.
func (s *Store) Delete(ctx context.Context, ref ports.ConversationRef) error {
	return s.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM agentmcp.conversations WHERE root = $1 AND principal = $2 AND name = $3`,
			ref.Root, ref.Principal, ref.Name)
		return err
	})
}

var _ ports.ConversationLocker = (*Store)(nil)

// HoldTurn claims ref's conversation for one turn with a session-level
// advisory lock, keyed by a 64-bit hash of the reference, on a connection
// of the pool that the turn keeps until release: a replica that dies (or
// loses its connection) releases the claim with its session, so no lease
// needs renewing. ok is false when another session holds it.
//
// A database restarted mid-turn ends the session and so the claim: the
// turn goes on (its Append then commits or fails on its own), and until it
// ends another replica may start a turn of the same conversation; both
// turns' Appends still commit one after the other, each whole.
func (s *Store) HoldTurn(ctx context.Context, ref ports.ConversationRef) (func(), bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, s.fault("cannot claim the conversation", err)
	}
	// Length-prefixed: unambiguous, and no NUL, which text cannot hold.
	key := fmt.Sprintf("%d:%s%d:%s%s", len(ref.Root), ref.Root, len(ref.Principal), ref.Principal, ref.Name)
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended($1, 0))`, key).Scan(&ok); err != nil {
		conn.Release()
		return nil, false, s.fault("cannot claim the conversation", err)
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
			defer cancel()
			var unlocked bool
			if err := conn.QueryRow(ctx, `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, key).Scan(&unlocked); err != nil || !unlocked {
				// The session is broken or lost the lock: end it, so
				// nothing it might still hold outlives the turn.
				conn.Conn().Close(ctx)
			}
			conn.Release()
		})
	}, true, nil
}
