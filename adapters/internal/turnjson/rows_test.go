package turnjson

import (
	"errors"
	"testing"
)

// seqRows is (seq, bytes) rows, newest first, failing at failAt (1-based;
// 0: never).
type seqRows struct {
	bytes  []int64
	i      int
	failAt int
	read   int
}

func (r *seqRows) Next() bool { r.i++; return r.i <= len(r.bytes) }
func (r *seqRows) Scan(dest ...any) error {
	r.read++
	if r.i == r.failAt {
		return errors.New("scan failed")
	}
	*dest[0].(*int64) = int64(len(r.bytes) - r.i + 1)
	*dest[1].(*int64) = r.bytes[r.i-1]
	return nil
}
func (r *seqRows) Err() error { return nil }

func TestKept(t *testing.T) {
	for _, c := range []struct {
		name            string
		bytes           []int64 // newest first: seq len(bytes) down to 1
		max             int
		turns           int
		total, dropFrom int64
		read            int
	}{
		{"all fit", []int64{10, 20, 30}, 100, 3, 60, 0, 3},
		{"oldest two dropped", []int64{50, 40, 30}, 100, 2, 90, 1, 3},
		{"the newest kept over the bound", []int64{500, 1}, 100, 1, 500, 1, 2},
		{"stops at the first that does not fit", []int64{60, 60, 1, 1}, 100, 1, 60, 3, 2},
		{"none", nil, 100, 0, 0, 0, 0},
	} {
		r := &seqRows{bytes: c.bytes}
		turns, total, dropFrom, err := Kept(r, c.max)
		if err != nil || turns != c.turns || total != c.total || dropFrom != c.dropFrom || r.read != c.read {
			t.Errorf("%s: Kept = %d turns, %d bytes, drop from %d, %v (read %d rows); want %d, %d, %d, nil (read %d)",
				c.name, turns, total, dropFrom, err, r.read, c.turns, c.total, c.dropFrom, c.read)
		}
	}
	if _, _, _, err := Kept(&seqRows{bytes: []int64{1, 2}, failAt: 2}, 100); err == nil {
		t.Error("Kept with a failing scan: no error")
	}
}
