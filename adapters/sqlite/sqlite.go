// Package sqlite is the durable [ports.ConversationStore]: the reference
// agent's conversations in one SQLite file (docs/SPEC.md §9), on
// modernc.org/sqlite (pure Go, no cgo).
//
// # File and sharing
//
// [Open] creates the file (0600; SQLite gives its -wal and -shm files the
// same mode) in a directory it creates 0700. The file is in WAL mode with
// synchronous=FULL, so a committed turn survives a crash of the process
// (kill -9) and of the machine. The Store holds one connection: its own
// writers queue on it. Several processes may open the same file (two
// clients each starting "serve stdio" on one root): every Append is one
// IMMEDIATE transaction, which waits up to [Options.LockTimeout] for
// another process's, and Load reads what is committed, so no turn is lost.
//
// # Schema
//
// The schema is versioned in SQLite's user_version; [Open] migrates an
// older file forward in one transaction, step by step, and refuses a file
// of a newer version (written by a newer agentmcp) without touching it.
//
//	conversations(id, root, principal, name, forked_from, turns, bytes, updated)  one per (root, principal, name)
//	turns(conversation, seq, bytes, messages, changes)                             seq: the turn's number; messages, changes: JSON
//	meta(key, value)                                                               "opened": the last Open
//
// Version 2 (named conversations) made each conversation of version 1 the
// default conversation ("default") of its root and principal, and added
// the turns' changes (none for the turns before it).
//
// # Bounds
//
// Append refuses a new conversation beyond the principal's
// [ports.AppendOptions].MaxPerPrincipal, drops the conversation's oldest
// whole turns beyond its byte budget (the agent's 256 KiB), then, while
// there are more than [Options.MaxConversations] conversations or they
// hold more than [Options.MaxBytes], the least recently updated
// conversation of the principal that holds the most (the appending
// principal's own on a tie; never the one appended to), and every
// conversation not updated within [Options.MaxAge] — in the same
// transaction. [Open] applies the age limit too.
//
// # Faults
//
// A file that is locked past LockTimeout, corrupt, read-only or of a newer
// schema fails [Open] with one line that names the file and what to do. A
// full disk during Append fails that Append with an error of kind
// [ports.ErrStoreFull] and leaves the store as it was.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/adapters/internal/turnjson"
	"github.com/agentmcp/agentmcp/ports"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// FileName is the store's file name inside the state directory.
const FileName = "conversations.db"

// DefaultLockTimeout is how long an open or a write waits for another
// process's transaction on the same file.
const DefaultLockTimeout = 5 * time.Second

// Options configures a [Store]. Zero bounds mean no bound.
type Options struct {
	MaxConversations int           // conversations kept; the least recently updated go first
	MaxBytes         int64         // bytes of turns kept in all (the turns' Bytes)
	MaxAge           time.Duration // a conversation not updated for longer is dropped

	// LockTimeout bounds the wait for another process's transaction
	// (default [DefaultLockTimeout]).
	LockTimeout time.Duration

	// Now is the clock (time.Now when nil).
	Now func() time.Time

	// readOnly opens the file with SQLite's read-only mode (tests: a
	// read-only file as root, who may write any file).
	readOnly bool
}

// Store is a conversation store in one SQLite file. It is safe for
// concurrent use, and several processes may open the same file.
type Store struct {
	db   *sql.DB
	path string
	opts Options

	mu     sync.Mutex // guards stmts and wanted
	stmts  map[string]*sql.Stmt
	wanted map[string]bool // queries to prepare once no transaction runs
}

var _ ports.ConversationStore = (*Store)(nil)

// migrations[i] takes a file from schema version i to i+1.
var migrations = []string{
	`CREATE TABLE conversations (
		id        INTEGER PRIMARY KEY,
		root      TEXT NOT NULL,
		principal TEXT NOT NULL,
		turns     INTEGER NOT NULL,
		bytes     INTEGER NOT NULL,
		updated   INTEGER NOT NULL, -- Unix milliseconds
		UNIQUE (root, principal)
	);
	CREATE INDEX conversations_updated ON conversations (updated);
	CREATE TABLE turns (
		conversation INTEGER NOT NULL,
		seq          INTEGER NOT NULL,
		bytes        INTEGER NOT NULL,
		messages     TEXT NOT NULL, -- JSON: [{role, content, tool_calls, tool_call_id}]
		PRIMARY KEY (conversation, seq)
	) WITHOUT ROWID;
	CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID; -- opened: the last Open, Unix milliseconds`,

	// 2: named conversations and forks; each conversation of version 1 is
	// its principal's default conversation. Turns keep their changes.
	`CREATE TABLE conversations_v2 (
		id          INTEGER PRIMARY KEY,
		root        TEXT NOT NULL,
		principal   TEXT NOT NULL,
		name        TEXT NOT NULL,
		forked_from TEXT NOT NULL DEFAULT '',
		turns       INTEGER NOT NULL,
		bytes       INTEGER NOT NULL,
		updated     INTEGER NOT NULL, -- Unix milliseconds
		UNIQUE (root, principal, name)
	);
	INSERT INTO conversations_v2 (id, root, principal, name, turns, bytes, updated)
		SELECT id, root, principal, 'default', turns, bytes, updated FROM conversations;
	DROP TABLE conversations;
	ALTER TABLE conversations_v2 RENAME TO conversations;
	CREATE INDEX conversations_updated ON conversations (updated);
	CREATE INDEX conversations_principal ON conversations (principal);
	ALTER TABLE turns ADD COLUMN changes TEXT; -- JSON: [{path, added, removed, diff}]; NULL: none`,
}

// SchemaVersion is the schema this package writes.
var SchemaVersion = len(migrations)

// Open opens (creating it when missing) the store file at path. Its errors
// are one line that names the file and what to do.
func Open(path string, opts Options) (*Store, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Store{path: path, opts: opts, stmts: map[string]*sql.Stmt{}}
	if err := s.open(); err != nil {
		if s.db != nil {
			s.db.Close()
		}
		return nil, err
	}
	return s, nil
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) open() error {
	dir := filepath.Dir(s.path)
	if !s.opts.readOnly {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return s.fault("cannot create its directory", err)
		}
	}
	// Before a file is made in it: a directory someone else controls
	// could hold their planted history (docs/SPEC.md §9).
	if err := s.checkOwned(dir, "its directory"); err != nil {
		return err
	}
	if !s.opts.readOnly {
		f, err := os.OpenFile(s.path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return s.fault("cannot open it", err)
		}
		f.Close()
	}
	for _, p := range []string{s.path, s.path + "-wal", s.path + "-shm"} {
		if err := s.checkOwned(p, filepath.Base(p)); err != nil {
			return err
		}
	}
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(s.opts.LockTimeout.Milliseconds(), 10))
	q.Set("_txlock", "immediate")
	if s.opts.readOnly {
		q.Set("mode", "ro")
	} else {
		q.Set("_journal_mode", "WAL")
		q.Set("_synchronous", "FULL")
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: s.path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return s.fault("cannot open it", err)
	}
	s.db = db
	db.SetMaxOpenConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	ctx := context.Background()
	if err := db.PingContext(ctx); err != nil {
		return s.fault("cannot open it", err)
	}
	if err := s.migrate(ctx); err != nil {
		return err
	}
	// One write even when there is nothing to expire: a file that cannot
	// be written, or whose lock another process keeps, fails here rather
	// than at the first turn.
	return s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('opened', ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, s.opts.Now().UnixMilli()); err != nil {
			return err
		}
		return s.expire(ctx, tx)
	})
}

// migrate brings the file to SchemaVersion, or refuses a newer one.
func (s *Store) migrate(ctx context.Context) error {
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return s.fault("cannot read it", err)
	}
	if v > SchemaVersion {
		return s.newer(v)
	}
	if v == SchemaVersion {
		return nil
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		// Another process may have migrated since the read above.
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return err
		}
		if v > SchemaVersion {
			return s.newer(v)
		}
		for ; v < SchemaVersion; v++ {
			if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(SchemaVersion))
		return err
	})
}

// openFault is an error of Open, already one line.
type openFault struct{ msg string }

func (e *openFault) Error() string { return e.msg }

func (s *Store) newer(v int) error {
	return &openFault{fmt.Sprintf("conversation store %s has schema version %d, newer than this agentmcp's %d: upgrade agentmcp, or start it with another --state-dir or with --ephemeral", s.path, v, SchemaVersion)}
}

// fault turns err into one line that names the file, the cause and what
// to do.
// checkOwned refuses the store when path (its directory or one of its
// files; a missing file is fine) is not owned by this process's user or
// can be written by others (group or world): whoever controls it could
// plant the history the model is sent, and read every new turn.
func (s *Store) checkOwned(path, what string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return s.fault("cannot check "+what, err)
	}
	uid, known := owner(fi)
	me := os.Geteuid()
	switch {
	case known && me >= 0 && uid != me:
		return &openFault{fmt.Sprintf("conversation store %s: refusing it: %s %s is owned by uid %d, not by this user (uid %d): "+
			"use a state directory of your own (--state-dir), or --ephemeral", s.path, what, path, uid, me)}
	case known && fi.Mode().Perm()&0o022 != 0:
		return &openFault{fmt.Sprintf("conversation store %s: refusing it: %s %s can be written by others (mode %#o): "+
			"chmod go-w it, or use another --state-dir, or --ephemeral", s.path, what, path, fi.Mode().Perm())}
	}
	return nil
}

func (s *Store) fault(doing string, err error) error {
	var of *openFault
	if errors.As(err, &of) {
		return err
	}
	what := "start agentmcp with another --state-dir, or with --ephemeral"
	cause := err.Error()
	var se *sqlite.Error
	switch {
	case errors.As(err, &se):
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			cause = fmt.Sprintf("it is locked by another process (held past %v)", s.opts.LockTimeout)
			what = "stop the process that holds it, or " + what
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			cause = "it is corrupt (" + sqlite.ErrorCodeString[se.Code()&0xff] + ")"
			what = "move it aside (a new store is started), or " + what
		case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM, sqlite3.SQLITE_CANTOPEN:
			cause = "it cannot be written (read-only file, directory or disk)"
			what = "make it and its directory writable, or " + what
		case sqlite3.SQLITE_FULL:
			cause = "the disk is full"
			what = "free space on it, or " + what
		default:
			cause = sqlite.ErrorCodeString[se.Code()&0xff]
		}
	case errors.Is(err, fs.ErrPermission):
		cause = "permission denied"
	}
	return &openFault{fmt.Sprintf("conversation store %s: %s: %s: %s", s.path, doing, cause, what)}
}

// write runs fn in one IMMEDIATE transaction; its error is [Store.fault]'s
// line, wrapping [ports.ErrStoreFull] when the disk is full, or fn's own
// refusal ([ports.ErrConversationLimit] and its kin) as it is.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	err := s.tx(ctx, fn)
	s.prepareWanted(ctx)
	if err == nil {
		return nil
	}
	for _, kind := range []error{ports.ErrConversationLimit, ports.ErrConversationExists, ports.ErrNoConversation} {
		if errors.Is(err, kind) {
			return err
		}
	}
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_FULL {
		return fmt.Errorf("%w: %w", ports.ErrStoreFull, s.fault("cannot write it", err))
	}
	return s.fault("cannot write it", err)
}

func (s *Store) tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// stmt returns query's statement prepared once on the store's one
// connection (parsing is a good part of a small transaction's cost), in tx
// when tx is not nil. The connection is tx's while tx runs, so a query
// first met there runs unprepared and is prepared once tx has ended
// ([Store.prepareWanted]); err is then errUnprepared.
func (s *Store) stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	s.mu.Lock()
	st, ok := s.stmts[query]
	if !ok && tx != nil {
		if s.wanted == nil {
			s.wanted = map[string]bool{}
		}
		s.wanted[query] = true
	}
	s.mu.Unlock()
	switch {
	case ok && tx != nil:
		return tx.StmtContext(ctx, st), nil
	case ok:
		return st, nil
	case tx != nil:
		return nil, errUnprepared
	}
	st, err := s.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.stmts[query]; ok {
		st.Close()
		return old, nil
	}
	s.stmts[query] = st
	return st, nil
}

var errUnprepared = errors.New("not prepared yet")

// prepareWanted prepares the queries first met inside a transaction.
func (s *Store) prepareWanted(ctx context.Context) {
	s.mu.Lock()
	wanted := s.wanted
	s.wanted = nil
	s.mu.Unlock()
	for q := range wanted {
		s.stmt(ctx, nil, q) // an error here shows again when the query runs
	}
}

func (s *Store) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	st, err := s.stmt(ctx, tx, query)
	switch {
	case err == nil:
		return st.ExecContext(ctx, args...)
	case errors.Is(err, errUnprepared):
		return tx.ExecContext(ctx, query, args...)
	}
	return nil, err
}

func (s *Store) query(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	st, err := s.stmt(ctx, tx, query)
	switch {
	case err == nil:
		return st.QueryContext(ctx, args...)
	case errors.Is(err, errUnprepared):
		return tx.QueryContext(ctx, query, args...)
	}
	return nil, err
}

// queryRow is QueryRowContext on query's prepared statement; a statement
// that cannot be prepared reports its error through the Row, unprepared.
func (s *Store) queryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	st, err := s.stmt(ctx, tx, query)
	switch {
	case err == nil:
		return st.QueryRowContext(ctx, args...)
	case tx == nil:
		return s.db.QueryRowContext(ctx, query, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// Load returns ref's committed turns, oldest first.
func (s *Store) Load(ctx context.Context, ref ports.ConversationRef) ([]ports.Turn, error) {
	rows, err := s.query(ctx, nil, `SELECT t.seq, t.bytes, t.messages, t.changes FROM turns t
		JOIN conversations c ON c.id = t.conversation
		WHERE c.root = ? AND c.principal = ? AND c.name = ? AND c.updated >= ?
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

// cutoff is the oldest update time kept, in Unix milliseconds (0: no age
// limit).
func (s *Store) cutoff() int64 {
	if s.opts.MaxAge <= 0 {
		return 0
	}
	return s.opts.Now().Add(-s.opts.MaxAge).UnixMilli()
}

// Append adds turn to ref's conversation (creating it, or forking it, as
// [ports.ConversationStore] says) and applies the bounds, in one
// transaction. A full disk is [ports.ErrStoreFull].
func (s *Store) Append(ctx context.Context, ref ports.ConversationRef, turn ports.Turn, o ports.AppendOptions) (int, error) {
	b, err := turnjson.EncodeMessages(turn.Messages)
	if err != nil {
		return 0, fmt.Errorf("conversation store %s: the turn cannot be encoded: %w", s.path, err)
	}
	ch, err := turnjson.EncodeChanges(turn.Changes)
	if err != nil {
		return 0, fmt.Errorf("conversation store %s: the turn's changes cannot be encoded: %w", s.path, err)
	}
	var changes any // NULL when there are none
	if ch != nil {
		changes = ch
	}
	var number int
	err = s.write(ctx, func(tx *sql.Tx) error {
		if err := s.expire(ctx, tx); err != nil {
			return err
		}
		id, err := s.conversation(ctx, tx, ref, o)
		if err != nil {
			return err
		}
		if err := s.queryRow(ctx, tx, `INSERT INTO turns (conversation, seq, bytes, messages, changes)
			VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM turns WHERE conversation = ?), ?, ?, ?) RETURNING seq`,
			id, id, turn.Bytes, b, changes).Scan(&number); err != nil {
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
func (s *Store) conversation(ctx context.Context, tx *sql.Tx, ref ports.ConversationRef, o ports.AppendOptions) (int64, error) {
	now := s.opts.Now().UnixMilli()
	var id int64
	err := s.queryRow(ctx, tx, `SELECT id FROM conversations WHERE root = ? AND principal = ? AND name = ?`,
		ref.Root, ref.Principal, ref.Name).Scan(&id)
	switch {
	case err == nil && o.ForkFrom != "":
		return 0, ports.ErrConversationExists
	case err == nil:
		_, err = s.exec(ctx, tx, `UPDATE conversations SET updated = ? WHERE id = ?`, now, id)
		return id, err
	case !errors.Is(err, sql.ErrNoRows):
		return 0, err
	}
	if o.MaxPerPrincipal > 0 {
		var held int
		if err := s.queryRow(ctx, tx, `SELECT count(*) FROM conversations WHERE root = ? AND principal = ?`,
			ref.Root, ref.Principal).Scan(&held); err != nil {
			return 0, err
		}
		if held >= o.MaxPerPrincipal {
			return 0, ports.ErrConversationLimit
		}
	}
	var from int64
	if o.ForkFrom != "" {
		err := s.queryRow(ctx, tx, `SELECT id FROM conversations WHERE root = ? AND principal = ? AND name = ?`,
			ref.Root, ref.Principal, o.ForkFrom).Scan(&from)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, ports.ErrNoConversation
		}
		if err != nil {
			return 0, err
		}
	}
	if err := s.queryRow(ctx, tx, `INSERT INTO conversations (root, principal, name, forked_from, turns, bytes, updated)
		VALUES (?, ?, ?, ?, 0, 0, ?) RETURNING id`, ref.Root, ref.Principal, ref.Name, o.ForkFrom, now).Scan(&id); err != nil {
		return 0, err
	}
	if o.ForkFrom != "" {
		if _, err := s.exec(ctx, tx, `INSERT INTO turns (conversation, seq, bytes, messages, changes)
			SELECT ?, seq, bytes, messages, changes FROM turns WHERE conversation = ? AND (? = 0 OR seq <= ?)`,
			id, from, o.ForkThrough, o.ForkThrough); err != nil {
			return 0, err
		}
	}
	return id, nil
}

// trim drops conversation id's oldest whole turns until the rest fit
// maxBytes (the newest stays), and updates its totals.
func (s *Store) trim(ctx context.Context, tx *sql.Tx, id int64, maxBytes int) error {
	rows, err := s.query(ctx, tx, `SELECT seq, bytes FROM turns WHERE conversation = ? ORDER BY seq DESC`, id)
	if err != nil {
		return err
	}
	turns, total, dropFrom, err := turnjson.Kept(rows, maxBytes)
	rows.Close() // before the writes below: the transaction's connection is the rows' until then
	if err != nil {
		return err
	}
	if dropFrom > 0 {
		if _, err := s.exec(ctx, tx, `DELETE FROM turns WHERE conversation = ? AND seq <= ?`, id, dropFrom); err != nil {
			return err
		}
	}
	_, err = s.exec(ctx, tx, `UPDATE conversations SET turns = ?, bytes = ? WHERE id = ?`, turns, total, id)
	return err
}

// bound applies the store's bounds (turnjson.Bound), never dropping
// conversation keep, after the age limit.
func (s *Store) bound(ctx context.Context, tx *sql.Tx, keep int64, principal string) error {
	if err := s.expire(ctx, tx); err != nil {
		return err
	}
	return turnjson.Bound(ctx, turnjson.Evictor{
		Table: "conversations",
		Arg:   func(int) string { return "?" },
		Int: func(ctx context.Context, query string, args ...any) (n int64, ok bool, err error) {
			err = s.queryRow(ctx, tx, query, args...).Scan(&n)
			if errors.Is(err, sql.ErrNoRows) {
				return 0, false, nil
			}
			return n, err == nil, err
		},
		Delete: func(ctx context.Context, id int64) error { return s.deleteConversation(ctx, tx, id) },
	}, keep, principal, s.opts.MaxConversations, s.opts.MaxBytes)
}

// expire drops the conversations older than MaxAge.
func (s *Store) expire(ctx context.Context, tx *sql.Tx) error {
	if s.opts.MaxAge <= 0 {
		return nil
	}
	return s.drop(ctx, tx, `SELECT id FROM conversations WHERE updated < ?`, s.cutoff())
}

// drop deletes the conversations the query selects (their ids).
func (s *Store) drop(ctx context.Context, tx *sql.Tx, query string, args ...any) error {
	rows, err := s.query(ctx, tx, query, args...)
	if err != nil {
		return err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range ids {
		if err := s.deleteConversation(ctx, tx, id); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) deleteConversation(ctx context.Context, tx *sql.Tx, id int64) error {
	if _, err := s.exec(ctx, tx, `DELETE FROM turns WHERE conversation = ?`, id); err != nil {
		return err
	}
	_, err := s.exec(ctx, tx, `DELETE FROM conversations WHERE id = ?`, id)
	return err
}

// List returns the conversations f selects within the age limit, the
// most recently updated first.
func (s *Store) List(ctx context.Context, f ports.ConversationFilter) ([]ports.ConversationInfo, error) {
	limit := int64(f.Limit)
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.query(ctx, nil, `SELECT root, principal, name, forked_from, turns, bytes, updated FROM conversations
		WHERE updated >= ? AND (? = '' OR root = ?) AND (? = '' OR principal = ?)
		ORDER BY updated DESC, id DESC LIMIT ?`, s.cutoff(), f.Root, f.Root, f.Principal, f.Principal, limit)
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
	return s.write(ctx, func(tx *sql.Tx) error {
		var id int64
		err := s.queryRow(ctx, tx, `SELECT id FROM conversations WHERE root = ? AND principal = ? AND name = ?`, ref.Root, ref.Principal, ref.Name).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		return s.deleteConversation(ctx, tx, id)
	})
}
