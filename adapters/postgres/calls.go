package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Shared tasks and rounds: the [ports.CallStore] of replicas
// (docs/SPEC.md §14 "Replicas"). Schema 2 adds, in the schema agentmcp:
//
//	replicas(id, lease_until, started)                       one per running replica; lease_until: the database's clock
//	tasks(scope, id, owner, replica, seq, created, updated,  one per task; times in Unix ns (the replicas' clocks), ttl in ns;
//	      ended, ttl, status, message, returned, inputs,     inputs, result, error: JSON as the wire carries it; held: the
//	      result, tool_error, error, held)                   kept result's bytes
//	rounds(token, scope, owner, tool, digest, replica, call, seq, deadline)   token: the requestState's SHA-256, never the token
//	inbox(id, replica, message)                              messages to a replica, deleted as it takes them
//
// Owners are digests (the engine's), never claims. Writes that count the
// bounds (a task created, a result kept, a round parked) run under
// [CallLock], so the bounds hold across replicas exactly; a running
// task's status writes are single-row updates that never overwrite a
// terminal status already stored.
//
// Every replica renews its lease three times a lease ([Options.Lease]),
// then sweeps: a replica whose lease has lapsed is gone — its running
// tasks become failed with [ports.ErrReplicaGone]'s message, its rounds
// and messages are dropped, every replica is told — and tasks kept past
// their TTL and rounds past their deadline are forgotten. Messages are
// rows of inbox, rung with NOTIFY on the replica's own channel; a replica
// LISTENs on a connection of its own (reconnecting after a restart) and
// also takes its inbox at every renewal, so a notification lost while it
// reconnected delays a message by at most a third of a lease.
const callsSchema = `
	CREATE TABLE agentmcp.replicas (
		id          text PRIMARY KEY,
		lease_until timestamptz NOT NULL,
		started     timestamptz NOT NULL DEFAULT now()
	);
	CREATE TABLE agentmcp.tasks (
		scope      text NOT NULL,
		id         text NOT NULL,
		owner      text NOT NULL,
		replica    text NOT NULL,
		seq        bigserial,
		created    bigint NOT NULL,
		updated    bigint NOT NULL,
		ended      bigint NOT NULL DEFAULT 0,
		ttl        bigint NOT NULL,
		status     text NOT NULL,
		message    text NOT NULL DEFAULT '',
		returned   boolean NOT NULL DEFAULT false,
		inputs     bytea,
		result     bytea,
		tool_error boolean NOT NULL DEFAULT false,
		error      bytea,
		held       bigint NOT NULL DEFAULT 0,
		PRIMARY KEY (scope, id)
	);
	CREATE INDEX tasks_owner ON agentmcp.tasks (scope, owner);
	CREATE INDEX tasks_running ON agentmcp.tasks (replica) WHERE NOT returned;
	CREATE TABLE agentmcp.rounds (
		token    bytea PRIMARY KEY,
		scope    text NOT NULL,
		owner    text NOT NULL,
		tool     text NOT NULL,
		digest   bytea NOT NULL,
		replica  text NOT NULL,
		call     text NOT NULL,
		seq      bigserial,
		deadline bigint NOT NULL
	);
	CREATE INDEX rounds_owner ON agentmcp.rounds (scope, owner);
	CREATE INDEX rounds_call ON agentmcp.rounds (replica, call);
	CREATE TABLE agentmcp.inbox (
		id      bigserial PRIMARY KEY,
		replica text NOT NULL,
		message bytea NOT NULL
	);
	CREATE INDEX inbox_replica ON agentmcp.inbox (replica, id);`

// DefaultLease is [Options.Lease]'s default.
const DefaultLease = 30 * time.Second

// eventsChannel is the NOTIFY channel every replica listens on: "s ID" (a
// task settled), "g ID" (a replica is gone).
const eventsChannel = "agentmcp_events"

// terminalSQL lists the terminal statuses.
const terminalSQL = `('completed','failed','cancelled')`

var _ ports.CallStore = (*Store)(nil)

// calls is a Store's replica: its id, its events and the goroutines that
// renew its lease and listen.
type calls struct {
	mu     sync.Mutex
	id     string
	events ports.CallEvents
	cancel context.CancelFunc
	done   sync.WaitGroup

	inbox sync.Mutex // one taker of the inbox at a time: messages stay in order
}

func (c *calls) stop() {
	c.mu.Lock()
	cancel := c.cancel
	c.cancel = nil
	c.mu.Unlock()
	if cancel != nil {
		cancel()
		c.done.Wait()
	}
}

func (s *Store) me() string {
	s.calls.mu.Lock()
	defer s.calls.mu.Unlock()
	return s.calls.id
}

func (s *Store) inboxChannel(id string) string { return "agentmcp_i_" + id }

// callTx runs fn in one transaction under CallLock (lock) or none,
// bounded by the store's timeout; fn's refusals pass as they are, any
// other failure is one line naming the store.
func (s *Store) callTx(ctx context.Context, lock bool, doing string, fn func(ctx context.Context, tx pgx.Tx) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	tx, err := s.pool.Begin(ctx)
	if err != nil && deadConn(err) && ctx.Err() == nil {
		// A pooled connection the server ended (a restart) fails at BEGIN,
		// before anything of fn was sent: once more, on a new one.
		tx, err = s.pool.Begin(ctx)
	}
	if err == nil {
		if lock {
			_, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, CallLock)
		}
		if err == nil {
			err = fn(ctx, tx)
		}
		if err == nil {
			err = tx.Commit(ctx)
		} else {
			_ = tx.Rollback(ctx)
		}
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, domain.ErrRoundsFull), errors.Is(err, domain.ErrUnknownRound), errors.Is(err, ports.ErrReplicaGone):
		return err
	}
	return s.faultOf("task store", doing, err)
}

// deadConn reports whether err says the connection was dead before
// anything was sent on it: safe to try again on another.
func deadConn(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "57P") // admin_shutdown, crash_shutdown, cannot_connect_now
	}
	return pgconn.SafeToRetry(err)
}

// Join registers the replica (a fresh id, its lease from now) and starts
// renewing its lease and listening for what reaches it.
func (s *Store) Join(ctx context.Context, events ports.CallEvents) (string, error) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	if err := s.callTx(ctx, false, "cannot join it", func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO agentmcp.replicas (id, lease_until) VALUES ($1, now() + $2::bigint * interval '1 microsecond')`,
			id, s.opts.Lease.Microseconds())
		return err
	}); err != nil {
		return "", err
	}
	run, cancel := context.WithCancel(context.Background())
	s.calls.mu.Lock()
	s.calls.id, s.calls.events, s.calls.cancel = id, events, cancel
	s.calls.mu.Unlock()
	s.calls.done.Add(2)
	listening := make(chan struct{})
	go func() { defer s.calls.done.Done(); s.listen(run, id, listening) }()
	go func() { defer s.calls.done.Done(); s.renew(run, id) }()
	// Until it listens, a task settled elsewhere would not be heard of: a
	// replica that serves a tasks/result at once would wait for an event
	// gone by. Bounded: past it the listener's Missed covers the gap.
	wait, cancelWait := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancelWait()
	select {
	case <-listening:
	case <-wait.Done():
	}
	return id, nil
}

// Leave stops renewing and listening, and gives the lease up: what the
// replica still ran fails as on a lapse.
func (s *Store) Leave(ctx context.Context) error {
	id := s.me()
	s.calls.stop()
	if id == "" {
		return nil
	}
	if err := s.callTx(ctx, false, "cannot leave it", func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM agentmcp.replicas WHERE id = $1`, id)
		return err
	}); err != nil {
		return err
	}
	return s.sweep(ctx)
}

// renew renews the lease three times a lease, sweeps, and takes the
// inbox. A renewal that finds the lease lapsed (the store was out of reach
// for longer than it) makes the replica gone: its tasks fail, and it
// starts a new lease.
func (s *Store) renew(ctx context.Context, id string) {
	t := time.NewTicker(s.opts.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var lapsed bool
		err := s.callTx(ctx, false, "cannot renew the lease", func(ctx context.Context, tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `UPDATE agentmcp.replicas SET lease_until = now() + $2::bigint * interval '1 microsecond'
				WHERE id = $1 AND lease_until >= now()`, id, s.opts.Lease.Microseconds())
			lapsed = err == nil && tag.RowsAffected() == 0
			return err
		})
		if err != nil {
			continue // the store is out of reach: try at the next tick
		}
		if lapsed {
			s.lapsed(ctx, id)
			continue
		}
		_ = s.sweep(ctx)
		s.takeInbox(ctx, id)
	}
}

// lapsed ends what ran under id's lapsed lease and starts a new one.
func (s *Store) lapsed(ctx context.Context, id string) {
	err := s.callTx(ctx, false, "cannot renew the lease", func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM agentmcp.replicas WHERE id = $1`, id)
		return err
	})
	if err == nil {
		err = s.sweep(ctx)
	}
	if err == nil {
		err = s.callTx(ctx, false, "cannot renew the lease", func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `INSERT INTO agentmcp.replicas (id, lease_until) VALUES ($1, now() + $2::bigint * interval '1 microsecond')`,
				id, s.opts.Lease.Microseconds())
			return err
		})
	}
	if err != nil {
		return // the next tick finds it lapsed again
	}
	if gone := s.events().Gone; gone != nil {
		gone(id)
	}
}

func (s *Store) events() ports.CallEvents {
	s.calls.mu.Lock()
	defer s.calls.mu.Unlock()
	return s.calls.events
}

// failedError is the JSON-RPC error of a task whose replica is gone.
var failedError, _ = json.Marshal(struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}{-32603, ports.ErrReplicaGone.Error()})

// sweep makes gone the replicas whose lease lapsed — their running tasks
// failed, their rounds and messages dropped, every replica told — and
// forgets the tasks kept past their TTL and the rounds past their
// deadline.
func (s *Store) sweep(ctx context.Context) error {
	now := s.opts.Now().UnixNano()
	return s.callTx(ctx, true, "cannot sweep it", func(ctx context.Context, tx pgx.Tx) error {
		dead, err := strings0(tx.Query(ctx, `DELETE FROM agentmcp.replicas WHERE lease_until < now() RETURNING id`))
		if err != nil {
			return err
		}
		settled, err := strings0(tx.Query(ctx, `UPDATE agentmcp.tasks t SET
				status  = CASE WHEN status IN `+terminalSQL+` THEN status ELSE 'failed' END,
				message = CASE WHEN status IN `+terminalSQL+` THEN message ELSE 'its server replica stopped' END,
				error   = CASE WHEN status IN `+terminalSQL+` THEN error ELSE $1::bytea END,
				held    = CASE WHEN status IN `+terminalSQL+` THEN held ELSE $3 END,
				ended   = CASE WHEN status IN `+terminalSQL+` THEN ended ELSE $2 END,
				updated = CASE WHEN status IN `+terminalSQL+` THEN updated ELSE $2 END,
				inputs  = NULL, returned = true
			WHERE NOT returned AND NOT EXISTS (SELECT 1 FROM agentmcp.replicas r WHERE r.id = t.replica)
			RETURNING id`, failedError, now, int64(len(failedError))))
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM agentmcp.rounds o
			WHERE NOT EXISTS (SELECT 1 FROM agentmcp.replicas r WHERE r.id = o.replica) OR deadline <= $1`, now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM agentmcp.inbox i
			WHERE NOT EXISTS (SELECT 1 FROM agentmcp.replicas r WHERE r.id = i.replica)`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM agentmcp.tasks WHERE returned AND status IN `+terminalSQL+` AND ended + ttl <= $1`, now); err != nil {
			return err
		}
		for _, id := range settled {
			if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, eventsChannel, "s "+id); err != nil {
				return err
			}
		}
		for _, id := range dead {
			if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, eventsChannel, "g "+id); err != nil {
				return err
			}
		}
		return nil
	})
}

// strings0 collects a query's one text column.
func strings0(rows pgx.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// listen listens on the replica's own channel and the events channel on a
// connection of its own, reconnecting (backing off) when it breaks, and
// takes the inbox whenever it is rung — and once connected, for what came
// while it was not; each time it connects it says events may have been
// missed (CallEvents.Missed), and the first time it closes listening.
func (s *Store) listen(ctx context.Context, id string, listening chan struct{}) {
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		if backoff > 0 {
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
		}
		backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
		conn, err := s.listenConn(ctx, id)
		if err != nil {
			continue
		}
		backoff = 0
		if listening != nil {
			close(listening)
			listening = nil
		}
		if f := s.events().Missed; f != nil {
			f()
		}
		s.takeInbox(ctx, id)
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				break
			}
			switch {
			case n.Channel == s.inboxChannel(id):
				s.takeInbox(ctx, id)
			case strings.HasPrefix(n.Payload, "s "):
				if f := s.events().Settled; f != nil {
					f(n.Payload[2:])
				}
			case strings.HasPrefix(n.Payload, "g ") && n.Payload[2:] != id: // its own lapse is renew's to tell
				if f := s.events().Gone; f != nil {
					f(n.Payload[2:])
				}
			}
		}
		closeCtx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
		conn.Close(closeCtx)
		cancel()
	}
}

func (s *Store) listenConn(ctx context.Context, id string) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, s.conn.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(cctx, `LISTEN `+pgx.Identifier{s.inboxChannel(id)}.Sanitize()+`; LISTEN `+eventsChannel); err != nil {
		conn.Close(cctx)
		return nil, err
	}
	return conn, nil
}

// takeInbox delivers the replica's messages in the order sent, deleting
// them as it takes them.
func (s *Store) takeInbox(ctx context.Context, id string) {
	s.calls.inbox.Lock()
	defer s.calls.inbox.Unlock()
	for {
		type row struct {
			ID      int64
			Message []byte
		}
		var got []row
		err := s.callTx(ctx, false, "cannot take its messages", func(ctx context.Context, tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `DELETE FROM agentmcp.inbox WHERE id IN
				(SELECT id FROM agentmcp.inbox WHERE replica = $1 ORDER BY id LIMIT 64 FOR UPDATE SKIP LOCKED)
				RETURNING id, message`, id)
			if err != nil {
				return err
			}
			got, err = pgx.CollectRows(rows, pgx.RowToStructByPos[row])
			return err
		})
		if err != nil || len(got) == 0 {
			return
		}
		sort.Slice(got, func(i, j int) bool { return got[i].ID < got[j].ID })
		if f := s.events().Message; f != nil {
			for _, r := range got {
				f(r.Message)
			}
		}
		if len(got) < 64 {
			return
		}
	}
}

// Send puts message in replica's inbox and rings it; a replica whose
// lease has lapsed gets nothing, and Send says so ([ports.ErrReplicaGone]).
func (s *Store) Send(ctx context.Context, replica string, message []byte) error {
	return s.callTx(ctx, false, "cannot send a message", func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO agentmcp.inbox (replica, message)
			SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM agentmcp.replicas WHERE id = $1 AND lease_until >= now())`, replica, message)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ports.ErrReplicaGone
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, '')`, s.inboxChannel(replica))
		return err
	})
}

// Tasks.

const taskColumns = `id, owner, replica, created, updated, ended, ttl, status, message, returned, inputs, result, tool_error, error`

func scanTask(row pgx.CollectableRow) (ports.TaskRecord, error) {
	var t ports.TaskRecord
	var created, updated, ended, ttl int64
	var inputs, result, rerr []byte
	if err := row.Scan(&t.ID, &t.Owner, &t.Replica, &created, &updated, &ended, &ttl, &t.Status, &t.Message, &t.Returned,
		&inputs, &result, &t.ToolError, &rerr); err != nil {
		return t, err
	}
	t.Created, t.Updated, t.TTL = time.Unix(0, created), time.Unix(0, updated), time.Duration(ttl)
	if ended != 0 {
		t.Ended = time.Unix(0, ended)
	}
	t.Inputs, t.Result, t.Error = raw(inputs), raw(result), raw(rerr)
	return t, nil
}

func raw(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

// nullable is b as a bytea parameter: NULL when nil (a json.RawMessage
// itself would be sent as json text).
func nullable(b json.RawMessage) any {
	if b == nil {
		return nil
	}
	return []byte(b)
}

func terminal(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}

// expired reports whether t is kept past its TTL at now.
func expired(t ports.TaskRecord, now time.Time) bool {
	return t.Returned && terminal(t.Status) && !t.Ended.IsZero() && !now.Before(t.Ended.Add(t.TTL))
}

// CreateTask stores t as this replica's within b.
func (s *Store) CreateTask(ctx context.Context, t ports.TaskRecord, b ports.TaskBounds) (ports.TaskRefusal, error) {
	scope, now := s.opts.Scope, s.opts.Now().UnixNano()
	refusal := ports.TaskAccepted
	err := s.callTx(ctx, true, "cannot create a task", func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM agentmcp.tasks WHERE scope = $1 AND returned AND status IN `+terminalSQL+` AND ended + ttl <= $2`,
			scope, now); err != nil {
			return err
		}
		var running, held int
		if err := tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE owner = $2 AND NOT (returned AND status IN `+terminalSQL+`)), count(*)
			FROM agentmcp.tasks WHERE scope = $1`, scope, t.Owner).Scan(&running, &held); err != nil {
			return err
		}
		if b.PerPrincipal > 0 && running >= b.PerPrincipal {
			refusal = ports.TaskRefusedPerPrincipal
			return nil
		}
		if b.Max > 0 && held >= b.Max {
			var victim string
			err := tx.QueryRow(ctx, `WITH w AS (SELECT owner, count(*) AS n FROM agentmcp.tasks WHERE scope = $1 GROUP BY owner)
				SELECT t.id FROM agentmcp.tasks t JOIN w ON w.owner = t.owner
				WHERE t.scope = $1 AND t.returned AND t.status IN `+terminalSQL+`
				ORDER BY w.n DESC, t.owner, t.ended, t.seq LIMIT 1`, scope).Scan(&victim)
			if errors.Is(err, pgx.ErrNoRows) {
				refusal = ports.TaskRefusedMax
				return nil
			}
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM agentmcp.tasks WHERE scope = $1 AND id = $2`, scope, victim); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO agentmcp.tasks (scope, id, owner, replica, created, updated, ttl, status, message)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			scope, t.ID, t.Owner, s.me(), t.Created.UnixNano(), t.Updated.UnixNano(), int64(t.TTL), t.Status, t.Message)
		return err
	})
	if err != nil {
		return 0, err
	}
	return refusal, nil
}

// SaveTask writes t as its replica sees it; a terminal status stored
// already stays, with what it carries.
func (s *Store) SaveTask(ctx context.Context, t ports.TaskRecord, b ports.TaskBounds) (string, error) {
	scope := s.opts.Scope
	var ended int64
	if !t.Ended.IsZero() {
		ended = t.Ended.UnixNano()
	}
	held := int64(len(t.Result) + len(t.Error))
	var stored string
	err := s.callTx(ctx, t.Returned && held > 0, "cannot write a task", func(ctx context.Context, tx pgx.Tx) error {
		var old string
		err := tx.QueryRow(ctx, `SELECT status FROM agentmcp.tasks WHERE scope = $1 AND id = $2 FOR UPDATE`, scope, t.ID).Scan(&old)
		if errors.Is(err, pgx.ErrNoRows) {
			stored = "" // forgotten meanwhile
			return nil
		}
		if err != nil {
			return err
		}
		const keep = `CASE WHEN status IN ` + terminalSQL
		if err := tx.QueryRow(ctx, `UPDATE agentmcp.tasks SET
				status     = `+keep+` THEN status ELSE $3 END,
				message    = `+keep+` THEN message ELSE $4 END,
				updated    = `+keep+` THEN updated ELSE $5::bigint END,
				ended      = `+keep+` THEN ended ELSE $6::bigint END,
				inputs     = `+keep+` THEN NULL ELSE $7::bytea END,
				result     = `+keep+` THEN result ELSE $8::bytea END,
				tool_error = `+keep+` THEN tool_error ELSE $9::boolean END,
				error      = `+keep+` THEN error ELSE $10::bytea END,
				held       = `+keep+` THEN held ELSE $11::bigint END,
				returned   = returned OR $12
			WHERE scope = $1 AND id = $2 RETURNING status`,
			scope, t.ID, t.Status, t.Message, t.Updated.UnixNano(), ended, nullable(t.Inputs), nullable(t.Result), t.ToolError,
			nullable(t.Error), held, t.Returned).Scan(&stored); err != nil {
			return err
		}
		if terminal(stored) && !terminal(old) {
			if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, eventsChannel, "s "+t.ID); err != nil {
				return err
			}
		}
		if t.Returned && held > 0 && !terminal(old) {
			return s.boundResults(ctx, tx, t, b)
		}
		return nil
	})
	return stored, err
}

// boundResults keeps the results' bytes within b once t's is kept: beyond
// its owner's bound, that owner's oldest ended tasks go; beyond the
// scope's, the oldest ended task of the owner keeping the most — never t.
func (s *Store) boundResults(ctx context.Context, tx pgx.Tx, t ports.TaskRecord, b ports.TaskBounds) error {
	scope := s.opts.Scope
	for _, bound := range []struct {
		max         int64
		total, pick string
		args        []any // of total; pick has t's id after them
	}{
		{b.PerPrincipalResultBytes, `SELECT coalesce(sum(held), 0)::bigint FROM agentmcp.tasks WHERE scope = $1 AND owner = $2`,
			`SELECT id, held FROM agentmcp.tasks WHERE scope = $1 AND owner = $2 AND id <> $3 AND returned AND status IN ` + terminalSQL + `
			ORDER BY ended, seq LIMIT 1`, []any{scope, t.Owner}},
		{b.MaxResultBytes, `SELECT coalesce(sum(held), 0)::bigint FROM agentmcp.tasks WHERE scope = $1`,
			`WITH w AS (SELECT owner, sum(held) AS n FROM agentmcp.tasks WHERE scope = $1 GROUP BY owner)
			SELECT t.id, t.held FROM agentmcp.tasks t JOIN w ON w.owner = t.owner
			WHERE t.scope = $1 AND t.id <> $2 AND t.returned AND t.status IN ` + terminalSQL + `
			ORDER BY w.n DESC, t.owner, t.ended, t.seq LIMIT 1`, []any{scope}},
	} {
		if bound.max <= 0 {
			continue
		}
		var total int64
		if err := tx.QueryRow(ctx, bound.total, bound.args...).Scan(&total); err != nil {
			return err
		}
		for total > bound.max {
			var id string
			var held int64
			err := tx.QueryRow(ctx, bound.pick, append(bound.args, t.ID)...).Scan(&id, &held)
			if errors.Is(err, pgx.ErrNoRows) {
				break
			}
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM agentmcp.tasks WHERE scope = $1 AND id = $2`, scope, id); err != nil {
				return err
			}
			total -= held
		}
	}
	return nil
}

// findTask reads owner's task id in tx (forUpdate: locked for the rest of
// tx); found is false when there is none or it is kept past its TTL.
func (s *Store) findTask(ctx context.Context, tx pgx.Tx, id, owner string, forUpdate bool) (t ports.TaskRecord, found bool, err error) {
	q := `SELECT ` + taskColumns + ` FROM agentmcp.tasks WHERE scope = $1 AND id = $2 AND owner = $3`
	if forUpdate {
		q += ` FOR UPDATE`
	}
	rows, err := tx.Query(ctx, q, s.opts.Scope, id, owner)
	if err != nil {
		return t, false, err
	}
	t, err = pgx.CollectExactlyOneRow(rows, scanTask)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, false, nil
	}
	if err != nil {
		return t, false, err
	}
	return t, !expired(t, s.opts.Now()), nil
}

// Task is owner's task id, unless it is kept past its TTL.
func (s *Store) Task(ctx context.Context, id, owner string) (ports.TaskRecord, bool, error) {
	var t ports.TaskRecord
	var found bool
	err := s.callTx(ctx, false, "cannot read a task", func(ctx context.Context, tx pgx.Tx) error {
		var err error
		t, found, err = s.findTask(ctx, tx, id, owner, false)
		return err
	})
	if err != nil || !found {
		return ports.TaskRecord{}, false, err
	}
	return t, true, nil
}

// Tasks are owner's tasks Task would find.
func (s *Store) Tasks(ctx context.Context, owner string) ([]ports.TaskRecord, error) {
	var out []ports.TaskRecord
	err := s.callTx(ctx, false, "cannot read the tasks", func(ctx context.Context, tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+taskColumns+` FROM agentmcp.tasks WHERE scope = $1 AND owner = $2`, s.opts.Scope, owner)
		if err != nil {
			return err
		}
		all, err := pgx.CollectRows(rows, scanTask)
		if err != nil {
			return err
		}
		now := s.opts.Now()
		for _, t := range all {
			if !expired(t, now) {
				out = append(out, t)
			}
		}
		return nil
	})
	return out, err
}

// CancelTask marks owner's task id cancelled at at unless it has ended.
func (s *Store) CancelTask(ctx context.Context, id, owner string, at time.Time) (ports.TaskRecord, bool, bool, error) {
	var t ports.TaskRecord
	var changed, found bool
	err := s.callTx(ctx, false, "cannot cancel a task", func(ctx context.Context, tx pgx.Tx) error {
		var err error
		if t, found, err = s.findTask(ctx, tx, id, owner, true); err != nil || !found || terminal(t.Status) {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE agentmcp.tasks SET status = 'cancelled', updated = $3, ended = $3, inputs = NULL
			WHERE scope = $1 AND id = $2`, s.opts.Scope, id, at.UnixNano()); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, eventsChannel, "s "+id); err != nil {
			return err
		}
		t.Status, t.Updated, t.Ended, t.Inputs, changed = "cancelled", at, at, nil, true
		return nil
	})
	if err != nil || !found {
		return ports.TaskRecord{}, false, false, err
	}
	return t, changed, true, nil
}

// ForgetTask drops task id.
func (s *Store) ForgetTask(ctx context.Context, id string) error {
	return s.callTx(ctx, false, "cannot forget a task", func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM agentmcp.tasks WHERE scope = $1 AND id = $2`, s.opts.Scope, id)
		return err
	})
}

// Rounds.

// ParkRound stores r as this replica's within b.
func (s *Store) ParkRound(ctx context.Context, r ports.RoundRecord, b ports.RoundBounds) ([]ports.RoundRef, error) {
	scope, now := s.opts.Scope, s.opts.Now().UnixNano()
	var evicted []ports.RoundRef
	err := s.callTx(ctx, true, "cannot park a round", func(ctx context.Context, tx pgx.Tx) error {
		evicted = nil
		if _, err := tx.Exec(ctx, `DELETE FROM agentmcp.rounds WHERE scope = $1 AND deadline <= $2`, scope, now); err != nil {
			return err
		}
		var mine, all int
		if err := tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE owner = $2), count(*) FROM agentmcp.rounds WHERE scope = $1`,
			scope, r.Binding.Principal).Scan(&mine, &all); err != nil {
			return err
		}
		if b.PerPrincipal > 0 && mine >= b.PerPrincipal {
			var ref ports.RoundRef
			if err := tx.QueryRow(ctx, `DELETE FROM agentmcp.rounds WHERE token =
				(SELECT token FROM agentmcp.rounds WHERE scope = $1 AND owner = $2 ORDER BY seq LIMIT 1) RETURNING replica, call`,
				scope, r.Binding.Principal).Scan(&ref.Replica, &ref.Call); err != nil {
				return err
			}
			evicted = append(evicted, ref)
			all--
		}
		if b.Max > 0 && all >= b.Max {
			return domain.ErrRoundsFull
		}
		_, err := tx.Exec(ctx, `INSERT INTO agentmcp.rounds (token, scope, owner, tool, digest, replica, call, deadline)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			r.Token[:], scope, r.Binding.Principal, r.Binding.Tool, r.Binding.ArgsDigest[:], s.me(), r.Call, r.Deadline.UnixNano())
		return err
	})
	if err != nil {
		return nil, err
	}
	return evicted, nil
}

// TakeRound removes the round of token when b, its deadline and its
// replica's lease hold.
func (s *Store) TakeRound(ctx context.Context, token [32]byte, b domain.RoundBinding, now time.Time) (ports.RoundRef, error) {
	var ref ports.RoundRef
	err := s.callTx(ctx, false, "cannot take a round", func(ctx context.Context, tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `DELETE FROM agentmcp.rounds o WHERE token = $1 AND scope = $2 AND owner = $3 AND tool = $4 AND digest = $5
			AND deadline > $6 AND EXISTS (SELECT 1 FROM agentmcp.replicas r WHERE r.id = o.replica AND r.lease_until >= now())
			RETURNING replica, call`, token[:], s.opts.Scope, b.Principal, b.Tool, b.ArgsDigest[:], now.UnixNano()).Scan(&ref.Replica, &ref.Call)
		if errors.Is(err, pgx.ErrNoRows) {
			return domain.ErrUnknownRound
		}
		return err
	})
	return ref, err
}

// DropRounds removes every round of this replica's call.
func (s *Store) DropRounds(ctx context.Context, call string) error {
	return s.callTx(ctx, false, "cannot drop a round", func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM agentmcp.rounds WHERE replica = $1 AND call = $2`, s.me(), call)
		return err
	})
}
