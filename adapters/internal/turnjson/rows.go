package turnjson

import (
	"context"
	"fmt"

	"github.com/agentmcp/agentmcp/ports"
)

// Rows is what both stores' query results have in common
// (database/sql's *sql.Rows and pgx's Rows), so the rules below are
// written once. Closing stays the caller's: the two Close methods differ.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ScanTurns reads the rows of a query selecting (seq, bytes, messages,
// changes) as turns, in the rows' order. A row whose
// JSON does not decode is an error naming it as a stored turn that is not
// valid.
func ScanTurns(rows Rows) ([]ports.Turn, error) {
	var turns []ports.Turn
	for rows.Next() {
		var t ports.Turn
		var b, ch []byte
		if err := rows.Scan(&t.Number, &t.Bytes, &b, &ch); err != nil {
			return nil, err
		}
		var err error
		if t.Messages, err = DecodeMessages(b); err == nil {
			t.Changes, err = DecodeChanges(ch)
		}
		if err != nil {
			return nil, fmt.Errorf("a stored turn is not valid: %w", err)
		}
		turns = append(turns, t)
	}
	return turns, rows.Err()
}

// Kept reads a conversation's (seq, bytes) rows, newest first, and says
// what a byte bound of maxBytes keeps: the newest turns whose bytes fit,
// always at least the newest one. dropFrom is the newest seq to drop (0:
// none); turns and total are what stays. It reads no further than it
// needs.
func Kept(rows Rows, maxBytes int) (turns int, total, dropFrom int64, err error) {
	for rows.Next() {
		var seq, bytes int64
		if err := rows.Scan(&seq, &bytes); err != nil {
			return 0, 0, 0, err
		}
		if turns > 0 && total+bytes > int64(maxBytes) {
			return turns, total, seq, nil
		}
		total += bytes
		turns++
	}
	return turns, total, 0, rows.Err()
}

// Evictor is one store's side of [Bound], in its own SQL dialect.
type Evictor struct {
	// Table is the conversations table: "conversations", or with a
	// schema, "agentmcp.conversations".
	Table string
	// Arg is the nth placeholder (from 1): "?" or "$n".
	Arg func(n int) string
	// Int runs a query that selects one integer in the store's
	// transaction; ok is false when it selects no row.
	Int func(ctx context.Context, query string, args ...any) (n int64, ok bool, err error)
	// Delete deletes conversation id with its turns.
	Delete func(ctx context.Context, id int64) error
}

// Bound applies a store's bounds (docs/SPEC.md §9; 0 or less: none) of
// maxConversations and maxBytes, never dropping conversation keep: at a
// bound, the least recently updated conversation of the principal that
// holds the most (conversations, or bytes) goes first, principal's own
// (the appender's) on a tie. Written once so that SQLite and PostgreSQL
// evict alike.
func Bound(ctx context.Context, e Evictor, keep int64, principal string, maxConversations int, maxBytes int64) error {
	// held is each principal's holding: its conversations, or its bytes.
	for _, b := range []struct {
		total, held string
		max         int64
	}{
		{`SELECT count(*) FROM ` + e.Table, `count(*)`, int64(maxConversations)},
		{`SELECT CAST(coalesce(sum(bytes), 0) AS BIGINT) FROM ` + e.Table, `sum(bytes)`, maxBytes},
	} {
		if b.max <= 0 {
			continue
		}
		victim := `WITH h AS (SELECT principal, ` + b.held + ` AS held FROM ` + e.Table + ` GROUP BY principal)
			SELECT c.id FROM ` + e.Table + ` c JOIN h ON h.principal = c.principal
			WHERE c.id != ` + e.Arg(1) + ` ORDER BY h.held DESC, (c.principal = ` + e.Arg(2) + `) DESC, c.updated, c.id LIMIT 1`
		for {
			total, _, err := e.Int(ctx, b.total)
			if err != nil {
				return err
			}
			if total <= b.max {
				break
			}
			id, ok, err := e.Int(ctx, victim, keep, principal)
			if err != nil || !ok {
				return err
			}
			if err := e.Delete(ctx, id); err != nil {
				return err
			}
		}
	}
	return nil
}
