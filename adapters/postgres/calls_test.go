package postgres

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/pgtest"
	"github.com/agentmcp/agentmcp/internal/waitfor"
	"github.com/agentmcp/agentmcp/ports"
)

// joined is a Store of database db that has joined as a replica.
func joined(t *testing.T, c *pgtest.Cluster, db, scope string) *Store {
	t.Helper()
	s := openT(t, c, db, Options{Scope: scope})
	if _, err := s.Join(t.Context(), ports.CallEvents{}); err != nil {
		t.Fatal(err)
	}
	return s
}

var taskSeq int

func newTask(owner string) ports.TaskRecord {
	taskSeq++
	now := time.Unix(1_800_000_000, int64(taskSeq))
	return ports.TaskRecord{ID: "task-" + strings.Repeat("x", taskSeq), Owner: owner, Created: now, Updated: now, TTL: time.Hour, Status: "working"}
}

// end writes t's last record: completed, returned, with a result of n
// bytes; the store keeps it completed unless want says otherwise.
func end(t *testing.T, s *Store, r ports.TaskRecord, n int, b ports.TaskBounds, want ...string) {
	t.Helper()
	r.Status, r.Returned, r.Ended = "completed", true, time.Unix(1_800_000_100, int64(taskSeq))
	taskSeq++
	r.Result = []byte(`"content":[{"type":"text","text":"` + strings.Repeat("r", max(n-37, 0)) + `"}]`)
	if len(want) == 0 {
		want = []string{"completed"}
	}
	if status, err := s.SaveTask(t.Context(), r, b); err != nil || status != want[0] {
		t.Fatalf("SaveTask: %q, %v; want %q stored", status, err, want[0])
	}
}

// TestTaskBoundsAcrossReplicas: the bounds of docs/SPEC.md §14 hold over
// every replica's tasks together: running tasks per owner, tasks held (the
// heaviest owner's oldest ended task making room), kept results' bytes per
// owner and in all (never the result just kept); another scope counts
// apart.
func TestTaskBoundsAcrossReplicas(t *testing.T) {
	c := pgtest.Start(t)
	db := c.CreateDatabase(t)
	a, b := joined(t, c, db, "w"), joined(t, c, db, "w")
	other := joined(t, c, db, "elsewhere")
	ctx := t.Context()
	create := func(s *Store, r ports.TaskRecord, bd ports.TaskBounds) ports.TaskRefusal {
		t.Helper()
		refusal, err := s.CreateTask(ctx, r, bd)
		if err != nil {
			t.Fatal(err)
		}
		return refusal
	}
	found := func(s *Store, r ports.TaskRecord) bool {
		t.Helper()
		_, ok, err := s.Task(ctx, r.ID, r.Owner)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	perOwner := ports.TaskBounds{PerPrincipal: 2, Max: 100}
	x1, x2 := newTask("x"), newTask("x")
	if create(a, x1, perOwner) != 0 || create(b, x2, perOwner) != 0 {
		t.Fatal("x's first two tasks refused")
	}
	if got := create(a, newTask("x"), perOwner); got != ports.TaskRefusedPerPrincipal {
		t.Errorf("x's third running task, on A: %v, want refused per principal", got)
	}
	if got := create(other, newTask("x"), perOwner); got != ports.TaskAccepted {
		t.Errorf("x's task in another scope: %v, want accepted", got)
	}
	if got := create(b, newTask("y"), perOwner); got != ports.TaskAccepted {
		t.Errorf("y's first task: %v", got)
	}
	end(t, b, x2, 10, perOwner)
	if got := create(a, newTask("x"), perOwner); got != ports.TaskAccepted {
		t.Errorf("x's task once one ended (on B): %v, want accepted", got)
	}
	if _, ok, _ := a.Task(ctx, x1.ID, "y"); ok {
		t.Error("y found x's task")
	}

	// Held: x holds 4 (x1 running, x2 ended, x3 running, one more
	// running), y 1; at Max 5 the next task makes room from x, the
	// heaviest, whose oldest ended task is x2.
	held := ports.TaskBounds{PerPrincipal: 10, Max: 5}
	x4 := newTask("x")
	if create(b, x4, held) != 0 {
		t.Fatal("x4 refused")
	}
	if got := create(a, newTask("z"), held); got != ports.TaskAccepted {
		t.Fatalf("z's task at the bound: %v, want room made", got)
	}
	if found(a, x2) || !found(a, x1) || !found(a, x4) {
		t.Errorf("at the bound: x2 (x's ended) found %v, x1 %v, x4 %v; want only x2 gone", found(a, x2), found(a, x1), found(a, x4))
	}
	if got := create(a, newTask("z"), ports.TaskBounds{PerPrincipal: 10, Max: 5}); got != ports.TaskRefusedMax {
		t.Errorf("at the bound with every task running: %v, want refused", got)
	}

	// Result bytes, per owner then in all.
	db2 := c.CreateDatabase(t)
	a, b = joined(t, c, db2, "w"), joined(t, c, db2, "w")
	bytes := ports.TaskBounds{PerPrincipal: 10, Max: 100, PerPrincipalResultBytes: 250, MaxResultBytes: 400}
	var xs []ports.TaskRecord
	for i := range 3 {
		r := newTask("x")
		s := []*Store{a, b}[i%2]
		create(s, r, bytes)
		end(t, s, r, 100, bytes)
		xs = append(xs, r)
	}
	if found(a, xs[0]) || !found(a, xs[1]) || !found(b, xs[2]) {
		t.Errorf("x past 250 bytes: x0 %v, x1 %v, x2 %v; want x0 (oldest) forgotten", found(a, xs[0]), found(a, xs[1]), found(b, xs[2]))
	}
	y := newTask("y")
	create(b, y, bytes)
	end(t, b, y, 240, bytes) // all: 200 + 240 > 400: x (keeping the most) gives its oldest
	if found(a, xs[1]) || !found(a, xs[2]) || !found(a, y) {
		t.Errorf("past 400 bytes in all: x1 %v, x2 %v, y %v; want x1 forgotten", found(a, xs[1]), found(a, xs[2]), found(a, y))
	}
	big := newTask("y")
	create(a, big, bytes)
	end(t, a, big, 1000, bytes) // larger than every bound: kept alone
	if !found(b, big) || found(b, y) {
		t.Errorf("a result larger than the bounds: kept %v (want true), y kept %v (want false)", found(b, big), found(b, y))
	}
}

// TestSaveKeepsAStoredEnd: a running replica's write never overwrites a
// terminal status stored by another (a cancel, a lapse), and a cancel of
// an ended task changes nothing.
func TestSaveKeepsAStoredEnd(t *testing.T) {
	c := pgtest.Start(t)
	db := c.CreateDatabase(t)
	a, b := joined(t, c, db, "w"), joined(t, c, db, "w")
	ctx := t.Context()
	r := newTask("x")
	if _, err := a.CreateTask(ctx, r, ports.TaskBounds{}); err != nil {
		t.Fatal(err)
	}
	got, changed, ok, err := b.CancelTask(ctx, r.ID, "x", time.Unix(1_800_000_050, 0))
	if err != nil || !ok || !changed || got.Status != "cancelled" || got.Replica != a.me() {
		t.Fatalf("CancelTask on B: %+v, changed %v, ok %v, %v", got, changed, ok, err)
	}
	r.Status, r.Message = "input_required", "later progress"
	if status, err := a.SaveTask(ctx, r, ports.TaskBounds{}); err != nil || status != "cancelled" {
		t.Errorf("A's later write: stored %q, %v; want cancelled kept", status, err)
	}
	end(t, a, r, 50, ports.TaskBounds{}, "cancelled")
	got, ok, err = b.Task(ctx, r.ID, "x")
	if err != nil || !ok || got.Status != "cancelled" || got.Result != nil || !got.Returned || got.Message == "later progress" {
		t.Errorf("after A's last write: %+v, %v, %v; want cancelled, returned, no result", got, ok, err)
	}
	if _, changed, _, _ := b.CancelTask(ctx, r.ID, "x", time.Now()); changed {
		t.Error("a second cancel changed the task")
	}
}

// TestRoundBoundsAcrossReplicas: a principal's parked rounds are bounded
// over every replica (its oldest, wherever it is, makes room), the scope's
// in all; a round is taken once, by its binding only, and not past its
// deadline.
func TestRoundBoundsAcrossReplicas(t *testing.T) {
	c := pgtest.Start(t)
	db := c.CreateDatabase(t)
	a, b := joined(t, c, db, "w"), joined(t, c, db, "w")
	ctx := t.Context()
	bounds := ports.RoundBounds{PerPrincipal: 2, Max: 3}
	bind := func(owner string) domain.RoundBinding {
		return domain.RoundBinding{Principal: owner, Tool: "write", ArgsDigest: [32]byte{1}}
	}
	var n byte
	park := func(s *Store, owner string) ([32]byte, []ports.RoundRef, error) {
		n++
		token := [32]byte{n}
		ev, err := s.ParkRound(ctx, ports.RoundRecord{Token: token, Binding: bind(owner), Call: "call-" + string('a'+rune(n)), Deadline: time.Now().Add(time.Hour)}, bounds)
		return token, ev, err
	}
	first, _, _ := park(a, "x")
	second, _, _ := park(b, "x")
	_, ev, err := park(b, "x")
	if err != nil || len(ev) != 1 || ev[0].Replica != a.me() || ev[0].Call != "call-b" {
		t.Fatalf("x's third round: evicted %v, %v; want A's first", ev, err)
	}
	if _, err := b.TakeRound(ctx, first, bind("x"), time.Now()); !errors.Is(err, domain.ErrUnknownRound) {
		t.Errorf("the evicted round taken: %v", err)
	}
	if _, _, err := park(a, "y"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := park(a, "z"); !errors.Is(err, domain.ErrRoundsFull) {
		t.Errorf("a round past the scope's bound: %v, want ErrRoundsFull", err)
	}
	if _, err := a.TakeRound(ctx, second, bind("y"), time.Now()); !errors.Is(err, domain.ErrUnknownRound) {
		t.Errorf("another binding took x's round: %v", err)
	}
	if _, err := a.TakeRound(ctx, second, bind("x"), time.Now().Add(2*time.Hour)); !errors.Is(err, domain.ErrUnknownRound) {
		t.Errorf("a round past its deadline taken: %v", err)
	}
	ref, err := a.TakeRound(ctx, second, bind("x"), time.Now())
	if err != nil || ref.Replica != b.me() {
		t.Errorf("x's round on B, taken on A after a failed check: %v, %v", ref, err)
	}
	if _, err := b.TakeRound(ctx, second, bind("x"), time.Now()); !errors.Is(err, domain.ErrUnknownRound) {
		t.Errorf("a round taken twice: %v", err)
	}
}

// TestEventsAfterJoin: a replica hears of a task settled elsewhere from
// the moment Join returns (it listens already: a tasks/result it serves at
// once waited for an event gone by, TestLoopbackReplicasMetrics hung so),
// and when its listener's connection breaks it is told, once it listens
// again, that events may have been missed.
func TestEventsAfterJoin(t *testing.T) {
	c := pgtest.Start(t)
	db := c.CreateDatabase(t)
	a := joined(t, c, db, "/srv/work")
	settled, missed := make(chan string, 16), make(chan struct{}, 16)
	b := openT(t, c, db, Options{Scope: "/srv/work"})
	if _, err := b.Join(t.Context(), ports.CallEvents{
		Settled: func(id string) { settled <- id },
		Missed:  func() { missed <- struct{}{} },
	}); err != nil {
		t.Fatal(err)
	}
	bounds := ports.TaskBounds{PerPrincipal: 10, Max: 100}
	settle := func() {
		t.Helper()
		r := newTask("o")
		if refusal, err := a.CreateTask(t.Context(), r, bounds); err != nil || refusal != 0 {
			t.Fatalf("CreateTask: %v, %v", refusal, err)
		}
		end(t, a, r, 10, bounds)
		for waitfor.Value(t, settled, 30*time.Second, "B told the task settled") != r.ID {
		}
	}
	settle()
	waitfor.Value(t, missed, 30*time.Second, "Missed as B began to listen")
	if out := c.SQL(t, db, "SELECT count(pg_terminate_backend(pid, 60000)) FROM pg_stat_activity WHERE query LIKE 'LISTEN%'"); out != "2" {
		t.Fatalf("listeners terminated: %q, want A's and B's", out)
	}
	waitfor.Value(t, missed, 30*time.Second, "Missed once B listens again")
	settle()
}
