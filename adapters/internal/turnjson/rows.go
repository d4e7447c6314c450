package turnjson

import (
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
