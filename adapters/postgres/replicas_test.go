package postgres

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
	"github.com/agentmcp/agentmcp/internal/pgtest"
	"github.com/agentmcp/agentmcp/internal/waitfor"
	"github.com/agentmcp/agentmcp/ports"

	"github.com/jackc/pgx/v5"
)

// Replicas sharing tasks and rounds (docs/SPEC.md §14 "Replicas"): two
// engines, each with its own session and its own Store, on one database,
// driven through Exchange (the HTTP hosts' entry point) as two replicas
// behind a balancer are.

// watched is the CallStore an engine is given: the Store, counting every
// call, and telling each task record it wrote.
type watched struct {
	*Store
	ops   atomic.Int64
	saved chan ports.TaskRecord
	// afterRead, when set, runs after each Task read, with its record.
	afterRead atomic.Pointer[func(ports.TaskRecord)]
	// afterTake, when set, runs once after a TakeRound that found its
	// round.
	afterTake atomic.Pointer[func()]
	// gone tells each replica the engine was told is gone, once the
	// engine's Gone has returned.
	gone chan string
	id   atomic.Pointer[string] // the replica's id, once joined
}

func watch(s *Store) *watched {
	return &watched{Store: s, saved: make(chan ports.TaskRecord, 1024), gone: make(chan string, 16)}
}

func (w *watched) Join(ctx context.Context, e ports.CallEvents) (string, error) {
	w.ops.Add(1)
	if g := e.Gone; g != nil {
		e.Gone = func(replica string) {
			g(replica)
			select {
			case w.gone <- replica:
			default:
			}
		}
	}
	id, err := w.Store.Join(ctx, e)
	w.id.Store(&id)
	return id, err
}
func (w *watched) CreateTask(ctx context.Context, t ports.TaskRecord, b ports.TaskBounds) (ports.TaskRefusal, error) {
	w.ops.Add(1)
	return w.Store.CreateTask(ctx, t, b)
}
func (w *watched) SaveTask(ctx context.Context, t ports.TaskRecord, b ports.TaskBounds) (string, error) {
	w.ops.Add(1)
	status, err := w.Store.SaveTask(ctx, t, b)
	if err == nil {
		select {
		case w.saved <- t:
		default:
		}
	}
	return status, err
}
func (w *watched) Task(ctx context.Context, id, owner string) (ports.TaskRecord, bool, error) {
	w.ops.Add(1)
	t, ok, err := w.Store.Task(ctx, id, owner)
	if f := w.afterRead.Load(); f != nil && ok {
		(*f)(t)
	}
	return t, ok, err
}
func (w *watched) Tasks(ctx context.Context, owner string) ([]ports.TaskRecord, error) {
	w.ops.Add(1)
	return w.Store.Tasks(ctx, owner)
}
func (w *watched) CancelTask(ctx context.Context, id, owner string, at time.Time) (ports.TaskRecord, bool, bool, error) {
	w.ops.Add(1)
	return w.Store.CancelTask(ctx, id, owner, at)
}
func (w *watched) ForgetTask(ctx context.Context, id string) error {
	w.ops.Add(1)
	return w.Store.ForgetTask(ctx, id)
}
func (w *watched) ParkRound(ctx context.Context, r ports.RoundRecord, b ports.RoundBounds) ([]ports.RoundRef, error) {
	w.ops.Add(1)
	return w.Store.ParkRound(ctx, r, b)
}
func (w *watched) TakeRound(ctx context.Context, token [32]byte, b domain.RoundBinding, now time.Time) (ports.RoundRef, error) {
	w.ops.Add(1)
	ref, err := w.Store.TakeRound(ctx, token, b, now)
	if f := w.afterTake.Swap(nil); f != nil && err == nil {
		(*f)()
	}
	return ref, err
}
func (w *watched) DropRounds(ctx context.Context, call string) error {
	w.ops.Add(1)
	return w.Store.DropRounds(ctx, call)
}
func (w *watched) Send(ctx context.Context, replica string, m []byte) error {
	w.ops.Add(1)
	return w.Store.Send(ctx, replica, m)
}

// waitSaved waits until the replica has written task id's record with
// status: from then on every replica reads it so.
func (w *watched) waitSaved(t *testing.T, id, status string) {
	t.Helper()
	for {
		r := waitfor.Value(t, w.saved, 30*time.Second, "task record "+status)
		if r.ID == id && r.Status == status {
			return
		}
	}
}

type replica struct {
	t       *testing.T
	store   *watched
	eng     *engine.Engine
	session *fake.Session
	id      atomic.Int64
}

var alice = ports.Principal{Issuer: "https://issuer.example", Subject: "alice", Client: "c1"}
var bob = ports.Principal{Issuer: "https://issuer.example", Subject: "bob", Client: "c1"}

// newReplica is an engine on database db, asking its clients, under lease.
func newReplica(t *testing.T, c *pgtest.Cluster, db string, lease time.Duration) *replica {
	t.Helper()
	s := watch(openT(t, c, db, Options{Scope: "/srv/work", Lease: lease}))
	sess := fake.New()
	sess.Started()
	sess.Ended()
	eng, err := engine.New(sess, engine.Options{AskClient: true, Calls: s, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := eng.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if st := eng.Stats(); st != (engine.Stats{}) {
			t.Errorf("after Shutdown the index holds %+v", st)
		}
	})
	return &replica{t: t, store: s, eng: eng, session: sess}
}

const (
	caps2026   = `{"extensions":{"io.modelcontextprotocol/tasks":{}},"elicitation":{"form":{}}}`
	rounds2026 = `{"elicitation":{"form":{}}}`
)

// modern sends one 2026-07-28 request from who with the headers a
// conforming client sends (Mcp-Name: name).
func (r *replica) modern(who ports.Principal, method, caps, params, name string) map[string]any {
	r.t.Helper()
	return decode(r.t, r.modernWithin(context.Background(), who, method, caps, params, name))
}

// modernWithin is modern's request under ctx, its reply as it is.
func (r *replica) modernWithin(ctx context.Context, who ports.Principal, method, caps, params, name string) engine.Reply {
	id := r.id.Add(1)
	body := `{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) + `,"method":"` + method + `","params":{` + params +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
	h := engine.Headers{ProtocolVersion: "2026-07-28", Method: method, Name: name, HasProtocolVersion: true, HasMethod: true, HasName: true}
	return r.eng.Exchange(ctx, []byte(body), engine.ExchangeOptions{Headers: h, Principal: who})
}

// legacy sends one 2025-11-25 request from who.
func (r *replica) legacy(who ports.Principal, method, params string) map[string]any {
	r.t.Helper()
	id := r.id.Add(1)
	body := `{"jsonrpc":"2.0","id":` + strconv.FormatInt(id, 10) + `,"method":"` + method + `","params":{` + params + `}}`
	h := engine.Headers{ProtocolVersion: "2025-11-25", HasProtocolVersion: true}
	return decode(r.t, r.eng.Exchange(context.Background(), []byte(body), engine.ExchangeOptions{Headers: h, Principal: who}))
}

func decode(t *testing.T, r engine.Reply) map[string]any {
	t.Helper()
	if r.Kind != engine.Answered {
		t.Fatalf("kind %v, body %s: want Answered", r.Kind, r.Body)
	}
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("%s: %v", r.Body, err)
	}
	return m
}

func res(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	r, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("no result in %v", m)
	}
	return r
}

func errCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

func (r *replica) submit(who ports.Principal, prompt string) string {
	r.t.Helper()
	c := res(r.t, r.modern(who, "tools/call", caps2026, `"name":"agent_submit","arguments":{"prompt":"`+prompt+`"}`, "agent_submit"))
	id, _ := c["taskId"].(string)
	if c["resultType"] != "task" || len(id) != 43 {
		r.t.Fatalf("CreateTaskResult = %v", c)
	}
	return id
}

func (r *replica) task(who ports.Principal, method, id, extra string) map[string]any {
	r.t.Helper()
	return r.modern(who, method, caps2026, `"taskId":"`+id+`"`+extra, id)
}

func text(t *testing.T, result any) string {
	t.Helper()
	m, _ := result.(map[string]any)
	content, _ := m["content"].([]any)
	if len(content) != 1 {
		t.Fatalf("result %v has no one text block", result)
	}
	s, _ := content[0].(map[string]any)["text"].(string)
	return s
}

// TestReplicasShareTasks: a task created on replica A is read, answered,
// listed and awaited on B (both eras), cancelled on B (A's call ends), and
// never found by another principal.
func TestReplicasShareTasks(t *testing.T) {
	c := pgtest.Start(t)
	db := c.CreateDatabase(t)
	a, b := newReplica(t, c, db, 0), newReplica(t, c, db, 0)

	// Answered on B: the background prompt becomes input-1, B's answer
	// reaches A's call, A's result is B's to read.
	id := a.submit(alice, "background")
	a.store.waitSaved(t, id, "input_required")
	g := res(t, b.task(alice, "tasks/get", id, ""))
	reqs, _ := g["inputRequests"].(map[string]any)
	if g["status"] != "input_required" || reqs["input-1"] == nil {
		t.Fatalf("tasks/get on B = %v, want input_required with input-1", g)
	}
	if m := b.task(bob, "tasks/get", id, ""); errCode(m) != -32602 {
		t.Errorf("bob's tasks/get of alice's task on B = %v, want -32602", m)
	}
	ack := res(t, b.task(alice, "tasks/update", id, `,"inputResponses":{"input-1":{"action":"accept","content":{"decision":"allow_once"}}}`))
	if ack["resultType"] != "complete" {
		t.Fatalf("tasks/update on B = %v", ack)
	}
	a.store.waitSaved(t, id, "completed")
	g = res(t, b.task(alice, "tasks/get", id, ""))
	if g["status"] != "completed" || text(t, g["result"]) != "the background agent was allowed" {
		t.Fatalf("tasks/get on B after its answer = %v", g)
	}
	if g2 := res(t, a.task(alice, "tasks/get", id, "")); g2["status"] != "completed" || g2["lastUpdatedAt"] != g["lastUpdatedAt"] {
		t.Errorf("A reads %v, B %v: one task", g2, g)
	}

	// Cancelled on B: cancelled at once for every replica, and A's call
	// ends.
	waitfor.Value(t, a.session.Started(), 30*time.Second, "the background turn's start on A")
	waitfor.Value(t, a.session.Ended(), 30*time.Second, "the background turn's end on A")
	slow := a.submit(alice, "slow")
	waitfor.Value(t, a.session.Started(), 30*time.Second, "the slow turn on A")
	if ack := res(t, b.task(alice, "tasks/cancel", slow, "")); ack["resultType"] != "complete" {
		t.Fatalf("tasks/cancel on B = %v", ack)
	}
	for _, r := range []*replica{b, a} {
		if g := res(t, r.task(alice, "tasks/get", slow, "")); g["status"] != "cancelled" {
			t.Errorf("tasks/get after B's cancel = %v", g)
		}
	}
	waitfor.Value(t, a.session.Ended(), 30*time.Second, "the cancelled turn's end on A")

	// 2025-11-25 on the remote host: a task created on A is awaited
	// (tasks/result) and listed on B.
	r := res(t, a.legacy(alice, "tools/call", `"name":"agent_submit","arguments":{"prompt":"hi"},"task":{}`))
	legacyID, _ := r["task"].(map[string]any)["taskId"].(string)
	got := res(t, b.legacy(alice, "tasks/result", `"taskId":"`+legacyID+`"`))
	if text(t, got) != "echo: hi" {
		t.Errorf("tasks/result on B = %v", got)
	}
	list := res(t, b.legacy(alice, "tasks/list", ``))["tasks"].([]any)
	seen := map[string]string{}
	for _, x := range list {
		m := x.(map[string]any)
		seen[m["taskId"].(string)], _ = m["status"].(string)
	}
	if len(seen) != 3 || seen[id] != "completed" || seen[slow] != "cancelled" || seen[legacyID] != "completed" {
		t.Errorf("tasks/list on B = %v, want alice's three tasks", seen)
	}
	if l := res(t, b.legacy(bob, "tasks/list", ``))["tasks"].([]any); len(l) != 0 {
		t.Errorf("bob's tasks/list = %v", l)
	}
}

// TestReplicasShareRounds: a 2026-07-28 round parked on A is retried on B:
// B's retry reaches A's call, and B answers with the call's next round,
// under a token B minted, which a retry on A resumes; a used token is
// refused on either.
func TestReplicasShareRounds(t *testing.T) {
	c := pgtest.Start(t)
	db := c.CreateDatabase(t)
	a, b := newReplica(t, c, db, 0), newReplica(t, c, db, 0)
	call := func(r *replica, extra string) map[string]any {
		return r.modern(alice, "tools/call", rounds2026, `"name":"compose","arguments":{}`+extra, "compose")
	}
	first := res(t, call(a, ""))
	if first["resultType"] != "input_required" {
		t.Fatalf("first answer = %v", first)
	}
	t1 := first["requestState"].(string)
	answer := func(text string) string {
		return `,"inputResponses":{"prompt":{"action":"accept","content":{"answer":"` + text + `"}}}`
	}
	if m := b.modern(bob, "tools/call", rounds2026, `"name":"compose","arguments":{}`+`,"requestState":"`+t1+`"`+answer("Mallory"), "compose"); errCode(m) != -32602 {
		t.Fatalf("bob's retry with alice's token on B = %v, want -32602", m)
	}
	second := res(t, call(b, `,"requestState":"`+t1+`"`+answer("Ada")))
	if second["resultType"] != "input_required" {
		t.Fatalf("the retry on B = %v, want the call's next round", second)
	}
	msg := second["inputRequests"].(map[string]any)["prompt"].(map[string]any)["params"].(map[string]any)["message"].(string)
	if !strings.Contains(msg, "favorite color") {
		t.Errorf("the next round asks %q", msg)
	}
	t2 := second["requestState"].(string)
	for _, r := range []*replica{a, b} {
		if m := call(r, `,"requestState":"`+t1+`"`+answer("again")); errCode(m) != -32602 {
			t.Errorf("a used token: %v, want -32602", m)
		}
	}
	// A retry on B whose call then returns answers the call's result.
	w := res(t, a.modern(alice, "tools/call", rounds2026, `"name":"write","arguments":{}`, "write"))
	denied := res(t, b.modern(alice, "tools/call", rounds2026, `"name":"write","arguments":{},"requestState":"`+w["requestState"].(string)+
		`","inputResponses":{"prompt":{"action":"accept","content":{"decision":"deny"}}}`, "write"))
	if denied["resultType"] != "complete" || denied["isError"] != true || !strings.Contains(text(t, denied), "Permission denied") {
		t.Errorf("a denied retry on B = %v, want A's call's result", denied)
	}
	done := res(t, call(a, `,"requestState":"`+t2+`"`+answer("blue")))
	if done["resultType"] != "complete" {
		t.Fatalf("the last retry on A = %v", done)
	}
	var env struct {
		Result struct {
			Name, Color *string
			Task        bool
		}
	}
	if err := json.Unmarshal([]byte(text(t, done)), &env); err != nil || env.Result.Name == nil || *env.Result.Name != "Ada" ||
		env.Result.Color == nil || *env.Result.Color != "blue" || env.Result.Task {
		t.Errorf("compose's result %s (%v): want Ada, blue, no task", text(t, done), err)
	}
}

// TestPlainCallNeverTouchesTheStore: with a shared store a plain tools/call
// — and a round-capable one that asks nothing — makes no store call.
func TestPlainCallNeverTouchesTheStore(t *testing.T) {
	c := pgtest.Start(t)
	a := newReplica(t, c, c.CreateDatabase(t), 0)
	before := a.store.ops.Load()
	for i := range 20 {
		caps := `{}`
		if i%2 == 1 {
			caps = rounds2026 // a call that could park a round, and does not
		}
		r := res(t, a.modern(alice, "tools/call", caps, `"name":"echo","arguments":{"text":"x"}`, "echo"))
		if r["resultType"] != "complete" {
			t.Fatalf("echo = %v", r)
		}
		if r := res(t, a.legacy(alice, "tools/call", `"name":"echo","arguments":{"text":"x"}`)); r["isError"] != false {
			t.Fatalf("legacy echo = %v", r)
		}
	}
	if n := a.store.ops.Load() - before; n != 0 {
		t.Errorf("40 plain tools/calls made %d store calls, want 0", n)
	}
}

// TestLapsedLease: a replica that stops renewing (its process died) has
// its running tasks failed on the other once its lease lapses, with a
// clear message, and its parked round ends closed.
func TestLapsedLease(t *testing.T) {
	c := pgtest.Start(t)
	db := c.CreateDatabase(t)
	const lease = 600 * time.Millisecond
	b := newReplica(t, c, db, lease)
	dying := openT(t, c, db, Options{Scope: "/srv/work", Lease: lease})
	sess := fake.New()
	sess.Started()
	eng, err := engine.New(sess, engine.Options{AskClient: true, Calls: dying})
	if err != nil {
		t.Fatal(err)
	}
	a := &replica{t: t, eng: eng, session: sess}
	defer func() {
		sess.Release()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		eng.Shutdown(ctx) // its store is gone: what it has left to write is lost, as with its process
	}()
	id := a.submit(alice, "slow")
	waitfor.Value(t, sess.Started(), 30*time.Second, "the slow turn on A")
	round := res(t, a.modern(alice, "tools/call", rounds2026, `"name":"write","arguments":{}`, "write"))
	token := round["requestState"].(string)

	settled := make(chan struct{}, 16)
	var once sync.Once
	watcher := watch(openT(t, c, db, Options{Scope: "/srv/work", Lease: lease}))
	if _, err := watcher.Join(t.Context(), ports.CallEvents{Settled: func(got string) {
		if got == id {
			once.Do(func() { close(settled) })
		}
	}}); err != nil {
		t.Fatal(err)
	}
	dying.calls.stop() // A renews no more, as after kill -9
	waitfor.Value(t, settled, 30*time.Second, "the lapsed task's settlement")

	g := res(t, b.task(alice, "tasks/get", id, ""))
	er, _ := g["error"].(map[string]any)
	if g["status"] != "failed" || er["code"] != -32603.0 || !strings.Contains(er["message"].(string), "lease lapsed") {
		t.Errorf("the lapsed replica's task on B = %v", g)
	}
	m := b.modern(alice, "tools/call", rounds2026, `"name":"write","arguments":{},"requestState":"`+token+`","inputResponses":{"prompt":{"action":"accept","content":{"decision":"allow_once"}}}`, "write")
	if errCode(m) != -32602 {
		t.Errorf("a retry of the lapsed replica's round = %v, want -32602", m)
	}
}

// TestRetryToALapsedReplica: B takes the round of a call parked on A, and
// A's lease lapses before B sends it the retry — B has been told A is gone
// already, so no Gone will end its wait: the send itself says A is gone
// and B answers -32603 at once (it waited until its request ended).
func TestRetryToALapsedReplica(t *testing.T) {
	c := pgtest.Start(t)
	db := c.CreateDatabase(t)
	const lease = 600 * time.Millisecond
	b := newReplica(t, c, db, lease)
	dying := watch(openT(t, c, db, Options{Scope: "/srv/work", Lease: lease}))
	sess := fake.New()
	eng, err := engine.New(sess, engine.Options{AskClient: true, Calls: dying})
	if err != nil {
		t.Fatal(err)
	}
	a := &replica{t: t, eng: eng, session: sess}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		eng.Shutdown(ctx) // its store is gone: what it has left to write is lost, as with its process
	}()
	round := res(t, a.modern(alice, "tools/call", rounds2026, `"name":"write","arguments":{}`, "write"))
	token := round["requestState"].(string)
	aID := *dying.id.Load()

	lapse := func() {
		dying.calls.stop() // A renews no more, as after kill -9
		for {
			if waitfor.Value(t, b.store.gone, 30*time.Second, "B told that A is gone") == aID {
				return
			}
		}
	}
	b.store.afterTake.Store(&lapse)
	// A bound on a hang, not a speed requirement.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	r := b.modernWithin(ctx, alice, "tools/call", rounds2026, `"name":"write","arguments":{},"requestState":"`+token+
		`","inputResponses":{"prompt":{"action":"accept","content":{"decision":"allow_once"}}}`, "write")
	if r.Kind != engine.Answered {
		t.Fatalf("the retry on B ended %v, %s: want -32603 at once (it waited for an answer from a replica gone)", r.Kind, r.Body)
	}
	m := decode(t, r)
	if er, _ := m["error"].(map[string]any); errCode(m) != -32603 || !strings.Contains(er["message"].(string), "stopped before it answered") {
		t.Errorf("the retry on B = %v, want -32603 (the replica running the call stopped)", m)
	}
}

// TestRoundRetriedElsewhereBecomesATask: a call parked on A whose retry on
// B declared the tasks extension becomes a task there (ports.StartTask):
// B answers the CreateTaskResult, and the task — run on A — is answered and
// read on B.
func TestRoundRetriedElsewhereBecomesATask(t *testing.T) {
	c := pgtest.Start(t)
	db := c.CreateDatabase(t)
	a, b := newReplica(t, c, db, 0), newReplica(t, c, db, 0)
	first := res(t, a.modern(alice, "tools/call", rounds2026, `"name":"compose","arguments":{}`, "compose"))
	token := first["requestState"].(string)
	created := res(t, b.modern(alice, "tools/call", caps2026, `"name":"compose","arguments":{},"requestState":"`+token+
		`","inputResponses":{"prompt":{"action":"accept","content":{"answer":"Ada"}}}`, "compose"))
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || created["status"] != "working" || len(id) != 43 {
		t.Fatalf("the retry on B = %v, want the CreateTaskResult of the task it became", created)
	}
	a.store.waitSaved(t, id, "input_required")
	g := res(t, b.task(alice, "tasks/get", id, ""))
	if _, ok := g["inputRequests"].(map[string]any)["input-1"]; g["status"] != "input_required" || !ok {
		t.Fatalf("tasks/get on B = %v, want input-1 (the color)", g)
	}
	b.task(alice, "tasks/update", id, `,"inputResponses":{"input-1":{"action":"accept","content":{"answer":"blue"}}}`)
	a.store.waitSaved(t, id, "completed")
	g = res(t, b.task(alice, "tasks/get", id, ""))
	if got := text(t, g["result"]); !strings.Contains(got, `"name":"Ada"`) || !strings.Contains(got, `"color":"blue"`) || !strings.Contains(got, `"task":true`) {
		t.Errorf("the task's result on B: %s", got)
	}
}

// TestTasksAcrossARestart: PostgreSQL restarted while a task waits on its
// input: the store stays consistent, the replicas serve again once it is
// back — B reads the task, answers it, A's call gets the answer (its
// listener reconnected) and completes, and new tasks are created.
func TestTasksAcrossARestart(t *testing.T) {
	c := pgtest.Start(t)
	db := c.CreateDatabase(t)
	a, b := newReplica(t, c, db, 0), newReplica(t, c, db, 0)
	id := a.submit(alice, "background")
	a.store.waitSaved(t, id, "input_required")
	c.Restart(t)
	// A request may meet a connection the restart broke: -32603, then
	// the next one is served.
	var g map[string]any
	for range 3 {
		if g = b.task(alice, "tasks/get", id, ""); errCode(g) == 0 {
			break
		}
		if errCode(g) != -32603 {
			t.Fatalf("tasks/get after the restart = %v, want the task or -32603", g)
		}
	}
	if res(t, g)["status"] != "input_required" {
		t.Fatalf("tasks/get on B after the restart = %v", g)
	}
	b.task(alice, "tasks/update", id, `,"inputResponses":{"input-1":{"action":"accept","content":{"decision":"allow_once"}}}`)
	a.store.waitSaved(t, id, "completed")
	if g := res(t, b.task(alice, "tasks/get", id, "")); g["status"] != "completed" || text(t, g["result"]) != "the background agent was allowed" {
		t.Errorf("after the restart the task on B = %v", g)
	}
	next := b.submit(alice, "hello")
	b.store.waitSaved(t, next, "completed")
	if g := res(t, a.task(alice, "tasks/get", next, "")); g["status"] != "completed" {
		t.Errorf("a task created after the restart, read on A = %v", g)
	}
}

// TestSlowCallStore: a database that does not answer (another session
// holds the lock the bounds are counted under, and the tasks table) fails
// each request that needs it within the store's timeout — a task creation
// as the tool error, tasks/get as -32603 — leaves no goroutine behind, and
// the replica serves again once it answers; a plain call is served
// meanwhile.
func TestSlowCallStore(t *testing.T) {
	c := pgtest.Start(t)
	db := c.CreateDatabase(t)
	s := watch(openT(t, c, db, Options{Scope: "/srv/work", Timeout: 300 * time.Millisecond}))
	sess := fake.New()
	eng, err := engine.New(sess, engine.Options{AskClient: true, Calls: s})
	if err != nil {
		t.Fatal(err)
	}
	a := &replica{t: t, store: s, eng: eng, session: sess}
	defer eng.Shutdown(context.Background())
	id := a.submit(alice, "hello")
	s.waitSaved(t, id, "completed")

	ctx := t.Context()
	hold, err := pgx.Connect(ctx, c.URL(db)+"&password="+c.Password)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close(context.Background())
	tx, err := hold.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, CallLock); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE agentmcp.tasks IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	base := leakcheck.Snapshot()
	for range 5 {
		r := res(t, a.modern(alice, "tools/call", caps2026, `"name":"agent_submit","arguments":{"prompt":"x"}`, "agent_submit"))
		if r["isError"] != true || !strings.Contains(text(t, r), "the task store cannot be reached") {
			t.Fatalf("a task creation on a database that does not answer = %v", r)
		}
		if m := a.task(alice, "tasks/get", id, ""); errCode(m) != -32603 {
			t.Fatalf("tasks/get on a database that does not answer = %v", m)
		}
		if r := res(t, a.modern(alice, "tools/call", `{}`, `"name":"echo","arguments":{"text":"x"}`, "echo")); r["isError"] != false {
			t.Fatalf("a plain call meanwhile = %v", r)
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	base.Verify(t)
	if g := res(t, a.task(alice, "tasks/get", id, "")); g["status"] != "completed" {
		t.Errorf("tasks/get once the database answers = %v", g)
	}
	if next := a.submit(alice, "again"); next == "" {
		t.Error("no task once the database answers")
	}
}

// TestReadAcrossTheLastWrite: a tasks/get on the replica running the task
// that reads the record just before the call's last record lands (and the
// call leaves the replica's live calls) answers the call's end, never the
// stale record's "working" (bench/store's tasks/get row found it: a read
// in every few thousand went back to working).
func TestReadAcrossTheLastWrite(t *testing.T) {
	c := pgtest.Start(t)
	a := newReplica(t, c, c.CreateDatabase(t), 0)
	id := a.submit(alice, "slow")
	waitfor.Value(t, a.session.Started(), 30*time.Second, "the slow turn")
	read, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hook := func(r ports.TaskRecord) {
		once.Do(func() {
			close(read) // the record read says working
			<-resume
		})
	}
	a.store.afterRead.Store(&hook)
	got := make(chan map[string]any, 1)
	go func() { got <- a.task(alice, "tasks/get", id, "") }()
	waitfor.Value(t, read, 30*time.Second, "the read")
	a.session.Release()
	a.store.waitSaved(t, id, "completed")
	for deadline := time.Now().Add(30 * time.Second); a.eng.Stats().Tasks != 0; {
		if time.Now().After(deadline) {
			t.Fatal("the completed task stays among the replica's live calls")
		}
		runtime.Gosched() // the call leaves live calls right after its last write returns
	}
	close(resume)
	if g := res(t, waitfor.Value(t, got, 30*time.Second, "tasks/get")); g["status"] != "completed" {
		t.Errorf("tasks/get across the last write = %v, want completed", g)
	}
}

// TestRoundEvictedElsewhere: a principal's parked rounds are bounded over
// the replicas: its fifth round, parked on B, evicts its oldest, parked on
// A — A's call ends (its prompt settles closed: the write is denied) and
// the evicted token resumes nothing on either replica.
func TestRoundEvictedElsewhere(t *testing.T) {
	c := pgtest.Start(t)
	db := c.CreateDatabase(t)
	a, b := newReplica(t, c, db, 0), newReplica(t, c, db, 0)
	park := func(r *replica, n int) string {
		m := res(t, r.modern(alice, "tools/call", rounds2026, `"name":"write","arguments":{"n":`+strconv.Itoa(n)+`}`, "write"))
		s, _ := m["requestState"].(string)
		if s == "" {
			t.Fatalf("round %d: %v", n, m)
		}
		return s
	}
	first := park(a, 1)
	for n := 2; n <= 4; n++ {
		park(a, n)
	}
	if got := a.eng.Stats().ParkedRounds; got != 4 {
		t.Fatalf("A holds %d parked rounds, want 4", got)
	}
	park(b, 5)
	waitfor.Value(t, a.session.Ended(), 30*time.Second, "the evicted round's call on A ending")
	for _, r := range []*replica{a, b} {
		m := r.modern(alice, "tools/call", rounds2026, `"name":"write","arguments":{"n":1},"requestState":"`+first+
			`","inputResponses":{"prompt":{"action":"accept","content":{"decision":"allow_once"}}}`, "write")
		if errCode(m) != -32602 {
			t.Errorf("the evicted round's retry = %v, want -32602", m)
		}
	}
}
