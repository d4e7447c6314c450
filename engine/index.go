package engine

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/jsonrpc"
	"github.com/agentmcp/agentmcp/ports"
)

// The call index: every call a client can reach other than through a
// request in flight on its stream (that one is the connection's), by the
// name it holds — a round's requestState, a task's id, or the (owner,
// JSON-RPC id) of a request a notifications/cancelled names — with the
// bounds and expiry counted here and nowhere else. Its two halves:
//
//   - names (by token and by task id) is what a client holds across
//     requests. It is an interface: the engine's is in memory (memNames);
//     a store shared by several processes can back it (docs/ARCHITECTURE.md
//     "A call's life" says what such a store must provide).
//   - requests (by owner and request id) is in flight in this process only:
//     the 2025-era legacy tools/calls an exchange is serving, and the
//     latest id of a stream's parked call.

// owner is who a call is bound to (docs/SPEC.md §6, §14): a stream's
// connection, or on HTTP the principal that sent it (the zero principal
// on the loopback host, which is one user). A stream's owner carries its
// principal too (what the session's Caller reports); its connection alone
// binds.
type owner struct {
	conn      uint64 // a stream's connection; 0 on HTTP
	principal ports.Principal
}

// key encodes o unambiguously, for a round's binding and for ordering:
// "conn:<n>", or "http:" and a JSON array of issuer, subject and client.
func (o owner) key() string {
	if o.conn != 0 {
		return "conn:" + strconv.FormatUint(o.conn, 10)
	}
	if o.principal == (ports.Principal{}) {
		return "http:"
	}
	b, _ := json.Marshal([3]string{o.principal.Issuer, o.principal.Subject, o.principal.Client})
	return "http:" + string(b)
}

// names is the half of the index a client reaches across requests: parked
// rounds by token (docs/SPEC.md §6) and tasks by id (§14), with their
// bounds (rounds 64 per engine and 4 per principal; tasks 8 running per
// principal and 256 held; held results' bytes per principal and in all)
// and expiry. Two implementations: memNames, in this process (the
// default), and sharedNames, which names HTTP clients' tasks and rounds in
// a ports.CallStore that replicas share (shared.go). Every method is safe
// for concurrent use; ctx bounds what a shared store does for a request.
type names interface {
	// park mints a token for in, bound to b, and returns it with the
	// inputs evicted to make room (a principal's oldest); it fails when
	// the engine holds as many rounds as allowed.
	park(ctx context.Context, in *input, b domain.RoundBinding) (token string, evicted []*input, err error)
	// resume takes the round of token when o and b match (single use): the
	// input it was minted for — on a shared store, one whose call runs on
	// another replica (its call's elsewhere is set) — or
	// domain.ErrUnknownRound.
	resume(ctx context.Context, token string, o owner, b domain.RoundBinding) (*input, error)
	// unpark removes every round of c.
	unpark(c *call)
	// expireRounds removes the rounds whose lifetime has passed.
	expireRounds() []*input
	// addTask names c a task under a fresh id, or says which bound is
	// reached (the refusal's text).
	addTask(ctx context.Context, c *call) (refusal string, ok bool)
	// task is the task id bound to o; nil when it is unknown, expired,
	// another's or unnamed (alike: no oracle). On a shared store a task
	// whose call runs elsewhere (or has ended) is a view of its record.
	task(ctx context.Context, id string, o owner) (*call, error)
	// tasks are o's tasks that task would find.
	tasks(ctx context.Context, o owner) ([]*call, error)
	// changed says what a task's reader sees of c changed (its status,
	// statusMessage or open inputs).
	changed(c *call)
	// returned says c's call returned: its result is kept under the bounds
	// (older results make room) or, when nobody can reach it or the engine
	// stops, it is forgotten.
	returned(c *call, stopping bool)
	// forget drops c.
	forget(c *call)
	// cancel ends task c for tasks/cancel: stopped is false when it had
	// ended already.
	cancel(ctx context.Context, c *call) (stopped bool, err error)
	// answer hands tasks/update's responses to task c's open inputs.
	answer(ctx context.Context, c *call, responses []jsonrpc.Member) error
	// settled waits until task c has ended (tasks/result) and returns it
	// as it ended; nil when it was forgotten meanwhile; ctx's error when
	// the wait ended first.
	settled(ctx context.Context, c *call) (*call, error)
	// closeOwner removes o's rounds and returns them, with o's tasks (a
	// stream ended: nobody can reach them again).
	closeOwner(o owner) ([]*input, []*call)
	// drain removes every round and every returned task, and returns the
	// rounds with the tasks still running (Shutdown).
	drain() ([]*input, []*call)
	// close ends the names once every call has returned (Shutdown): a
	// shared store gets what is left to write, and the replica leaves it.
	close(ctx context.Context) error
	stats() Stats
}

// index is the engine's call index: names, and the requests in flight.
type index struct {
	names
	requests requests
}

// unpark drops what names an ended round's call: its rounds, its
// expiry, its request's id.
func (x *index) unpark(c *call) {
	if c.deadline != nil {
		c.deadline.Stop()
	}
	x.names.unpark(c)
	x.requests.remove(c)
}

// Stats is what the engine holds now (docs/SPEC.md §13), for gauges and
// for tests: a zero Stats is an engine whose call index is empty. With a
// shared store (Options.Calls) it counts this process's own — the rounds
// parked for its calls, the tasks it runs — never the store's, so the
// replicas' gauges add up to each once.
type Stats struct {
	// ParkedRounds are input-required rounds awaiting their retry.
	ParkedRounds int
	// Tasks are tasks held, running or kept for their TTL.
	Tasks int
	// HeldResultBytes are the bytes of the results the ended tasks keep.
	HeldResultBytes int64
	// Requests are the requests a notifications/cancelled can name beyond
	// a stream's in-flight ids: 2025-era legacy tools/calls in flight over
	// HTTP, and the latest request of each parked call on a stream.
	Requests int
}

// Stats reports what the engine holds now.
func (e *Engine) Stats() Stats {
	s := e.index.stats()
	s.Requests = e.index.requests.len()
	return s
}

// memNames is the engine's names, in memory: a task lives as long as the
// engine, and an ended one for its TTL after its end.
type memNames struct {
	rounds *domain.Rounds[*input] // nil while AskClient is off
	opts   TaskOptions            // with the defaults

	mu   sync.Mutex // guards byID and seq
	byID map[string]*call
	seq  uint64 // tasks stored so far: a task's seq orders ties of time
}

func newMemNames(askClient bool, lifetime time.Duration, o TaskOptions) *memNames {
	n := &memNames{opts: o.withDefaults(), byID: make(map[string]*call)}
	if askClient {
		n.rounds = domain.NewRounds[*input](lifetime, rand.Reader)
	}
	return n
}

func (n *memNames) park(_ context.Context, in *input, b domain.RoundBinding) (string, []*input, error) {
	return n.rounds.Park(b, time.Now(), in)
}

func (n *memNames) resume(_ context.Context, token string, _ owner, b domain.RoundBinding) (*input, error) {
	if n.rounds == nil {
		return nil, domain.ErrUnknownRound
	}
	return n.rounds.Take(token, b, time.Now())
}

func (n *memNames) unpark(c *call) {
	if n.rounds != nil {
		n.rounds.RemoveIf(func(in *input) bool { return in.c == c })
	}
}

func (n *memNames) expireRounds() []*input {
	if n.rounds == nil {
		return nil
	}
	return n.rounds.Expire(time.Now())
}

// taskState is what the bounds read of a task (under its lock).
type taskState struct {
	status   string
	returned bool
	unnamed  bool
	endedAt  time.Time
	held     int64 // its kept result's bytes
}

func stateOf(c *call) taskState {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := taskState{status: c.s.status, returned: c.s.returned, unnamed: c.s.unnamed, endedAt: c.s.endedAt}
	if s.returned && (s.status == taskCompleted || s.status == taskFailed) {
		s.held = int64(c.s.outcome.size())
	}
	return s
}

// done: its call has returned after it ended, so it may be forgotten. A
// cancelled task whose call still runs counts as running under its
// principal's bound, is never forgotten to make room and does not expire
// (docs/SPEC.md §14: a task's call counts until it returns).
func (s taskState) done() bool { return terminal(s.status) && s.returned }

func (s taskState) expired(c *call, now time.Time) bool {
	return s.done() && now.Sub(s.endedAt) >= c.ttl
}

// Messages of a task creation beyond the bounds (a tool error: the client
// may retry once a task ends).
const (
	msgTasksPerPrincipal = "too many tasks running for this client; wait for one to end or cancel one"
	msgTasksMax          = "the server holds too many tasks; try again later"
)

// held reads every task's state at now (under n.mu), forgetting the
// expired ones: what the bounds are counted from.
func (n *memNames) held(now time.Time) map[*call]taskState {
	states := make(map[*call]taskState, len(n.byID))
	for id, o := range n.byID {
		s := stateOf(o)
		if s.expired(o, now) {
			delete(n.byID, id)
			continue
		}
		states[o] = s
	}
	return states
}

func (n *memNames) addTask(_ context.Context, c *call) (string, bool) {
	now := time.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	states := n.held(now)
	live := 0
	for o, s := range states {
		if o.owner == c.owner && !s.done() {
			live++
		}
	}
	switch {
	case live >= n.opts.PerPrincipal:
		return msgTasksPerPrincipal, false
	case len(n.byID) >= n.opts.Max:
		victim := n.oldestEnded(states, nil, false)
		if victim == nil {
			return msgTasksMax, false
		}
		delete(n.byID, victim.id)
	}
	c.id = newTaskID()
	n.seq++
	c.seq = n.seq
	if c.ttl <= 0 {
		c.ttl = n.opts.TTL
	}
	c.created = now
	n.byID[c.id] = c
	return "", true
}

// oldestEnded is the task to forget to make room (under n.mu): among the
// owners holding an ended task whose call returned (never except), the
// one holding the most tasks — or, byBytes, the most result bytes — (ties
// by owner), and its task that ended first (ties by creation). Without it
// one principal could keep every other out of tasks, or of kept results,
// by ending its own and creating more; this way its own go first
// (docs/SPEC.md §14). nil when every task runs.
func (n *memNames) oldestEnded(states map[*call]taskState, except *call, byBytes bool) *call {
	weight := make(map[owner]int64)
	oldest := make(map[owner]*call)
	for o, s := range states {
		if byBytes {
			weight[o.owner] += s.held
		} else {
			weight[o.owner]++
		}
		if !s.done() || o == except {
			continue
		}
		if cur := oldest[o.owner]; cur == nil || endedBefore(s, o, states[cur], cur) {
			oldest[o.owner] = o
		}
	}
	var victim *call
	for o, t := range oldest {
		if victim == nil || weight[o] > weight[victim.owner] || weight[o] == weight[victim.owner] && o.key() < victim.owner.key() {
			victim = t
		}
	}
	return victim
}

func endedBefore(a taskState, ac *call, b taskState, bc *call) bool {
	return a.endedAt.Before(b.endedAt) || a.endedAt.Equal(b.endedAt) && ac.seq < bc.seq
}

func (n *memNames) task(_ context.Context, id string, o owner) (*call, error) {
	now := time.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	c := n.byID[id]
	if c == nil {
		return nil, nil
	}
	s := stateOf(c)
	if s.expired(c, now) {
		delete(n.byID, id)
		return nil, nil
	}
	if c.owner != o || s.unnamed {
		return nil, nil
	}
	return c, nil
}

func (n *memNames) tasks(_ context.Context, o owner) ([]*call, error) {
	now := time.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*call
	for id, c := range n.byID {
		if c.owner != o {
			continue
		}
		s := stateOf(c)
		switch {
		case s.expired(c, now):
			delete(n.byID, id)
		case !s.unnamed:
			out = append(out, c)
		}
	}
	return out, nil
}

func (n *memNames) changed(*call) {}

func (n *memNames) cancel(_ context.Context, c *call) (bool, error) {
	return c.stop(errTaskCancelled, ""), nil
}

func (n *memNames) answer(_ context.Context, c *call, responses []jsonrpc.Member) error {
	c.answerTask(responses)
	return nil
}

func (n *memNames) settled(ctx context.Context, c *call) (*call, error) {
	select {
	case <-c.settled:
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (n *memNames) close(context.Context) error { return nil }

// returned keeps c's result within the bytes bounds: beyond its owner's,
// that owner's oldest ended tasks are forgotten; beyond the engine's, the
// oldest ended task of the owner holding the most bytes, until the bounds
// hold again or only c is left to forget (c itself is kept: its client
// has not read it yet, so a result larger than a bound is kept alone).
func (n *memNames) returned(c *call, stopping bool) {
	now := time.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.byID[c.id] != c {
		return
	}
	s := stateOf(c)
	if s.unnamed || stopping {
		delete(n.byID, c.id)
		return
	}
	if s.held == 0 {
		return
	}
	states := n.held(now)
	var total, mine int64
	for o, os := range states {
		total += os.held
		if o.owner == c.owner {
			mine += os.held
		}
	}
	for mine > n.opts.PerPrincipalResultBytes {
		mineOnly := make(map[*call]taskState)
		for o, os := range states {
			if o.owner == c.owner {
				mineOnly[o] = os
			}
		}
		victim := n.oldestEnded(mineOnly, c, true)
		if victim == nil {
			break
		}
		mine -= states[victim].held
		total -= states[victim].held
		delete(states, victim)
		delete(n.byID, victim.id)
	}
	for total > n.opts.MaxResultBytes {
		victim := n.oldestEnded(states, c, true)
		if victim == nil {
			break
		}
		total -= states[victim].held
		delete(states, victim)
		delete(n.byID, victim.id)
	}
}

func (n *memNames) forget(c *call) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.byID[c.id] == c {
		delete(n.byID, c.id)
	}
}

func (n *memNames) closeOwner(o owner) ([]*input, []*call) {
	var rounds []*input
	if n.rounds != nil {
		rounds = n.rounds.RemoveIf(func(in *input) bool { return in.c.owner == o })
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	var tasks []*call
	for _, c := range n.byID {
		if c.owner == o {
			tasks = append(tasks, c)
		}
	}
	return rounds, tasks
}

func (n *memNames) drain() ([]*input, []*call) {
	var rounds []*input
	if n.rounds != nil {
		rounds = n.rounds.Drain()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	var running []*call
	for id, c := range n.byID {
		if stateOf(c).returned {
			delete(n.byID, id)
		} else {
			running = append(running, c)
		}
	}
	return rounds, running
}

func (n *memNames) stats() Stats {
	var s Stats
	if n.rounds != nil {
		s.ParkedRounds = n.rounds.Len()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	s.Tasks = len(n.byID)
	for _, c := range n.byID {
		s.HeldResultBytes += stateOf(c).held
	}
	return s
}

// newTaskID returns 32 bytes from crypto/rand, unpadded base64url (43
// characters): unguessable, since an id is a bearer handle within its
// principal. Ids are never logged.
func newTaskID() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// requests is the half of the index in flight in this process: calls by
// (owner, JSON-RPC id), which a notifications/cancelled from that owner
// names (docs/SPEC.md §3 "Cancellation", §6). Ids repeat across clients of
// one principal (every loopback client is the same principal, and SDKs
// count ids from 0), so a key may name several calls. It is bounded by
// maxRequests; a call beyond it is served without an entry (closing its
// request still cancels it).
type requests struct {
	mu sync.Mutex
	n  int
	m  map[reqKey]*call // the first of each key's calls; the rest follow on call.sameKey
}

// reqKey is who sent a request and its id (jsonrpc.ID.Key).
type reqKey struct {
	o  owner
	id string
}

// maxRequests bounds the requests: well above what the HTTP hosts admit
// in flight at once.
const maxRequests = 4096

// add names c by (c.owner, i), replacing the name it had; false at the
// bound.
func (r *requests) add(i jsonrpc.ID, c *call) bool {
	k := reqKey{c.owner, i.Key()}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.removeLocked(c)
	if r.n >= maxRequests {
		return false
	}
	if r.m == nil {
		r.m = make(map[reqKey]*call)
	}
	c.reqID, c.named = k.id, true
	c.sameKey = r.m[k]
	r.m[k] = c
	r.n++
	return true
}

// remove drops c's request name, if it has one.
func (r *requests) remove(c *call) {
	r.mu.Lock()
	r.removeLocked(c)
	r.mu.Unlock()
}

func (r *requests) removeLocked(c *call) {
	if !c.named {
		return
	}
	k := reqKey{c.owner, c.reqID}
	for p := r.m[k]; p != nil; p = p.sameKey {
		if p == c {
			r.m[k] = c.sameKey
			break
		}
		if p.sameKey == c {
			p.sameKey = c.sameKey
			break
		}
	}
	if r.m[k] == nil {
		delete(r.m, k)
	}
	c.named, c.sameKey = false, nil
	r.n--
}

// lookup returns the one call named (o, i) and how many are (0, 1, or more:
// then none is returned).
func (r *requests) lookup(o owner, i jsonrpc.ID) (*call, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	first := r.m[reqKey{o, i.Key()}]
	n := 0
	for c := first; c != nil; c = c.sameKey {
		n++
	}
	if n != 1 {
		return nil, n
	}
	return first, 1
}

func (r *requests) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}
