package engine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/jsonrpc"
	"github.com/agentmcp/agentmcp/ports"
)

// Replicas (docs/SPEC.md §14 "Replicas"; docs/ARCHITECTURE.md "A shared
// store"). With Options.Calls the index's names are sharedNames: the
// tasks and input-required rounds of HTTP clients are named in a
// ports.CallStore every replica of the server shares, so any replica
// finds them, while a call — its goroutine, its Caller, its live state —
// stays in the process that started it:
//
//   - a task's record is written as its call moves (writer: off the call's
//     path, coalesced), and another replica renders tasks/get, tasks/list
//     and tasks/result from it (a view: a call whose elsewhere is set);
//   - what another replica does to a task (tasks/update's answers,
//     tasks/cancel, a dropped creation) and a round's retry are messages
//     the store carries to the replica that runs the call (message);
//   - a retry forwarded so waits here for the running replica's answer —
//     the call's next prompt, parked under a token this replica minted
//     (only its digest travels), its result, or the task it became.
//
// A stream's tasks and rounds are bound to its connection, so they stay
// in local. A plain tools/call is named nowhere and never reaches the
// store.
type sharedNames struct {
	e        *Engine
	local    *memNames
	store    ports.CallStore
	me       string // this replica's id in the store
	bounds   ports.TaskBounds
	rounds   ports.RoundBounds
	lifetime time.Duration

	mu       sync.Mutex
	live     map[string]*call       // task id → its call, run here until its last record is written
	parked   map[string]parkedRound // call ref → the round of it parked here
	awaited  map[string]awaitedCall // call ref → a retry another replica forwarded, waiting for it here
	forwards map[string]*forward    // wait id → a retry of this replica's, forwarded to another
	watchers map[string]map[chan struct{}]struct{}

	w         writer
	closeOnce sync.Once
	closeErr  error
}

type parkedRound struct {
	in       *input
	deadline time.Time
}

type awaitedCall struct {
	from   string // the replica whose request waits
	cancel context.CancelCauseFunc
}

// forward is a retry this replica sent to the one running its call,
// waiting for the answer.
type forward struct {
	id, to string
	reply  chan message // capacity 1
}

// Causes of calls ended from another replica, or by the store.
var (
	errLeaseLost   = errors.New("this replica lost its lease in the call store")
	errReplicaLeft = errors.New("the replica serving the retry went away")
	errEndedThere  = errors.New("the task ended in the call store (cancelled or failed elsewhere)")
)

// errReplicaGone answers a retry whose call's replica stopped before it
// answered (docs/SPEC.md §14 "Replicas").
var errReplicaGone = jsonrpc.NewError(CodeInternalError, "Internal error: the server replica running this call stopped before it answered; start the call again")

func newSharedNames(e *Engine, store ports.CallStore, local *memNames) (*sharedNames, error) {
	o := local.opts
	n := &sharedNames{e: e, local: local, store: store, lifetime: e.roundLifetime,
		bounds: ports.TaskBounds{PerPrincipal: o.PerPrincipal, Max: o.Max, PerPrincipalResultBytes: o.PerPrincipalResultBytes, MaxResultBytes: o.MaxResultBytes},
		rounds: ports.RoundBounds{PerPrincipal: domain.MaxRoundsPerPrincipal, Max: domain.MaxRoundsPerHost},
		live:   map[string]*call{}, parked: map[string]parkedRound{}, awaited: map[string]awaitedCall{},
		forwards: map[string]*forward{}, watchers: map[string]map[chan struct{}]struct{}{}}
	me, err := store.Join(context.Background(), ports.CallEvents{Message: n.onMessage, Settled: n.onSettled, Gone: n.onGone, Missed: n.onMissed})
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.me = me // events may come before Join returns: they read it under n.mu
	n.mu.Unlock()
	n.w.start(n)
	return n, nil
}

// digestOf is the store's key for a binding key (owner.key()): its
// SHA-256 in hex, so the store never holds a principal's claims.
func digestOf(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// storeBinding is b as the store keeps it.
func storeBinding(b domain.RoundBinding) domain.RoundBinding {
	b.Principal = digestOf(b.Principal)
	return b
}

// newRoundToken mints a requestState (32 bytes from crypto/rand, unpadded
// base64url, as domain.Rounds does) and its digest, what the store keeps.
func newRoundToken() (string, [32]byte) {
	var raw [32]byte
	_, _ = rand.Read(raw[:]) // crypto/rand.Read never fails (Go 1.24+)
	token := base64.RawURLEncoding.EncodeToString(raw[:])
	return token, sha256.Sum256([]byte(token))
}

func newRef() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Rounds.

func (n *sharedNames) park(ctx context.Context, in *input, b domain.RoundBinding) (string, []*input, error) {
	if in.c.owner.conn != 0 {
		return n.local.park(ctx, in, b)
	}
	token, digest := newRoundToken()
	evicted, err := n.parkAs(ctx, in, b, digest)
	if err != nil {
		return "", evicted, err
	}
	return token, evicted, nil
}

// parkAs parks in's round under the token digest (minted here, or by the
// replica a retry was forwarded from): the inputs of this replica's rounds
// evicted to make room are returned; another replica's evicted round is
// told to end.
func (n *sharedNames) parkAs(ctx context.Context, in *input, b domain.RoundBinding, digest [32]byte) ([]*input, error) {
	c := in.c
	deadline := time.Now().Add(n.lifetime)
	n.mu.Lock()
	if c.ref == "" {
		c.ref = newRef()
	}
	ref := c.ref
	n.parked[ref] = parkedRound{in: in, deadline: deadline}
	n.mu.Unlock()
	refs, err := n.store.ParkRound(ctx, ports.RoundRecord{Token: digest, Binding: storeBinding(b), Call: ref, Deadline: deadline}, n.rounds)
	if err != nil {
		n.mu.Lock()
		if n.parked[ref].in == in {
			delete(n.parked, ref)
		}
		n.mu.Unlock()
		return nil, err
	}
	var evicted []*input
	for _, r := range refs {
		if r.Replica != n.me {
			n.sendLater(r.Replica, message{Kind: msgLeave, Call: r.Call, Cause: causeEvicted})
			continue
		}
		n.mu.Lock()
		p, ok := n.parked[r.Call]
		delete(n.parked, r.Call)
		n.mu.Unlock()
		if ok {
			evicted = append(evicted, p.in)
		}
	}
	return evicted, nil
}

func (n *sharedNames) resume(ctx context.Context, token string, o owner, b domain.RoundBinding) (*input, error) {
	if o.conn != 0 {
		return n.local.resume(ctx, token, o, b)
	}
	ref, err := n.store.TakeRound(ctx, sha256.Sum256([]byte(token)), storeBinding(b), time.Now())
	if err != nil {
		return nil, err
	}
	if ref.Replica != n.me {
		return &input{c: &call{e: n.e, owner: o, ref: ref.Call, elsewhere: ref.Replica}, key: promptKey, round: true}, nil
	}
	n.mu.Lock()
	p, ok := n.parked[ref.Call]
	delete(n.parked, ref.Call)
	n.mu.Unlock()
	if !ok {
		return nil, domain.ErrUnknownRound // its call ended meanwhile
	}
	return p.in, nil
}

func (n *sharedNames) unpark(c *call) {
	if c.owner.conn != 0 {
		n.local.unpark(c)
		return
	}
	n.mu.Lock()
	ref := c.ref
	if p, ok := n.parked[ref]; ok && p.in.c == c {
		delete(n.parked, ref)
	}
	n.mu.Unlock()
	if ref != "" {
		n.w.add(writeJob{do: func(ctx context.Context) error { return n.store.DropRounds(ctx, ref) }})
	}
}

func (n *sharedNames) expireRounds() []*input {
	out := n.local.expireRounds()
	now := time.Now()
	n.mu.Lock()
	var refs []string
	for ref, p := range n.parked {
		if !now.Before(p.deadline) {
			delete(n.parked, ref)
			out = append(out, p.in)
			refs = append(refs, ref)
		}
	}
	n.mu.Unlock()
	for _, ref := range refs {
		n.w.add(writeJob{do: func(ctx context.Context) error { return n.store.DropRounds(ctx, ref) }})
	}
	return out
}

// Tasks.

// msgTaskStore refuses a task the store could not take (a tool error: the
// client may try again).
const msgTaskStore = "the task store cannot be reached; try again later"

func (n *sharedNames) addTask(ctx context.Context, c *call) (string, bool) {
	if c.owner.conn != 0 {
		return n.local.addTask(ctx, c)
	}
	c.id = newTaskID()
	c.created = time.Now()
	if c.ttl <= 0 {
		c.ttl = n.local.opts.TTL
	}
	rec := ports.TaskRecord{ID: c.id, Owner: digestOf(c.owner.key()), Created: c.created, Updated: c.created, TTL: c.ttl, Status: taskWorking}
	n.mu.Lock()
	n.live[c.id] = c // before the store: a message about it may come at once
	n.mu.Unlock()
	refusal, err := n.store.CreateTask(ctx, rec, n.bounds)
	if err != nil || refusal != ports.TaskAccepted {
		n.mu.Lock()
		delete(n.live, c.id)
		n.mu.Unlock()
	}
	switch {
	case err != nil:
		n.e.logger.Error("engine: the call store failed creating a task", "err", err)
		return msgTaskStore, false
	case refusal == ports.TaskRefusedPerPrincipal:
		return msgTasksPerPrincipal, false
	case refusal == ports.TaskRefusedMax:
		return msgTasksMax, false
	}
	return "", true
}

// found is the call tasks/* act on for a stored task: live, the call
// running here as it was before rec was read, while rec says it runs (its
// state is the freshest), else a view of the record (it runs elsewhere, or
// the store's terminal status wins). live is taken before the read: a call
// whose last record lands meanwhile leaves live, and rec read before that
// write would show it running still.
func (n *sharedNames) found(rec ports.TaskRecord, o owner, c *call) *call {
	if c != nil && !terminal(rec.Status) {
		if c.snapshot().unnamed {
			return nil
		}
		return c
	}
	return n.view(rec, o)
}

// view is a task's record as a call the views render (tasks.go): its
// elsewhere names the replica that runs (or ran) it.
func (n *sharedNames) view(rec ports.TaskRecord, o owner) *call {
	c := &call{e: n.e, owner: o, mode: modeTask, id: rec.ID, ttl: rec.TTL, created: rec.Created, elsewhere: rec.Replica}
	if c.elsewhere == "" {
		c.elsewhere = n.me
	}
	c.s = callState{task: true, status: rec.Status, message: rec.Message, updated: rec.Updated, endedAt: rec.Ended,
		returned: rec.Returned, inputs: decodeInputs(c, rec.Inputs)}
	switch {
	case rec.Error != nil:
		var er Error
		if json.Unmarshal(rec.Error, &er) != nil {
			er = *jsonrpc.NewError(CodeInternalError, "Internal error")
		}
		c.s.outcome = toolOutcome{rerr: &er}
	case rec.Result != nil:
		c.s.outcome = toolOutcome{rendered: rec.Result, renderedError: rec.ToolError}
	}
	return c
}

func (n *sharedNames) task(ctx context.Context, id string, o owner) (*call, error) {
	if o.conn != 0 {
		return n.local.task(ctx, id, o)
	}
	live := n.liveTask(id)
	rec, ok, err := n.store.Task(ctx, id, digestOf(o.key()))
	if err != nil || !ok {
		return nil, err
	}
	return n.found(rec, o, live), nil
}

func (n *sharedNames) liveTask(id string) *call {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.live[id]
}

func (n *sharedNames) tasks(ctx context.Context, o owner) ([]*call, error) {
	if o.conn != 0 {
		return n.local.tasks(ctx, o)
	}
	n.mu.Lock()
	live := maps.Clone(n.live)
	n.mu.Unlock()
	recs, err := n.store.Tasks(ctx, digestOf(o.key()))
	if err != nil {
		return nil, err
	}
	out := make([]*call, 0, len(recs))
	for _, rec := range recs {
		if c := n.found(rec, o, live[rec.ID]); c != nil {
			out = append(out, c)
		}
	}
	return out, nil
}

// isLive reports whether c is a task this replica runs for the store.
func (n *sharedNames) isLive(c *call) bool {
	if c.owner.conn != 0 || c.elsewhere != "" {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.live[c.id] == c
}

func (n *sharedNames) changed(c *call) {
	if n.isLive(c) {
		n.w.add(writeJob{save: c})
	}
}

func (n *sharedNames) returned(c *call, stopping bool) {
	if c.owner.conn != 0 {
		n.local.returned(c, stopping)
		return
	}
	if !n.isLive(c) {
		return
	}
	if c.snapshot().unnamed {
		n.forget(c)
		return
	}
	// Its last record, with the result; the store keeps it for its TTL,
	// for any replica to read — also when this one stops.
	n.w.add(writeJob{save: c})
}

func (n *sharedNames) forget(c *call) {
	if c.owner.conn != 0 {
		n.local.forget(c)
		return
	}
	n.mu.Lock()
	if n.live[c.id] == c {
		delete(n.live, c.id)
	}
	n.mu.Unlock()
	id := c.id
	n.w.add(writeJob{do: func(ctx context.Context) error { return n.store.ForgetTask(ctx, id) }})
}

func (n *sharedNames) cancel(ctx context.Context, c *call) (bool, error) {
	if c.owner.conn != 0 {
		return n.local.cancel(ctx, c)
	}
	// The store first: every replica reads the task cancelled from now on.
	rec, changed, ok, err := n.store.CancelTask(ctx, c.id, digestOf(c.owner.key()), time.Now())
	if err != nil {
		return false, err
	}
	if c.elsewhere == "" {
		return c.stop(errTaskCancelled, "") && changed, nil
	}
	if ok {
		c.s = n.view(rec, c.owner).s // the view renders what the store holds now
		if changed {
			n.send(ctx, c.elsewhere, message{Kind: msgCancel, Task: c.id}) // gone: the store failed the task there
		}
	}
	return changed, nil
}

func (n *sharedNames) answer(ctx context.Context, c *call, responses []jsonrpc.Member) error {
	if c.elsewhere == "" {
		c.answerTask(responses)
		return nil
	}
	// A replica gone meanwhile: the store fails the task there, and
	// tasks/get says so; the answer had nobody to reach.
	return ignoreGone(n.send(ctx, c.elsewhere, message{Kind: msgAnswer, Task: c.id, Answer: appendMembers(nil, responses)}))
}

func (n *sharedNames) settled(ctx context.Context, c *call) (*call, error) {
	if c.elsewhere == "" {
		return n.local.settled(ctx, c)
	}
	wake := make(chan struct{}, 1)
	n.watch(c.id, wake)
	defer n.unwatch(c.id, wake)
	// c was read before the watch began: a Settled event between the two
	// has come and gone, so the store is read once now that it watches.
	wake <- struct{}{}
	for {
		if terminal(c.snapshot().status) {
			return c, nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		live := n.liveTask(c.id)
		rec, ok, err := n.store.Task(ctx, c.id, digestOf(c.owner.key()))
		switch {
		case err != nil:
			return nil, err
		case !ok:
			return nil, nil
		}
		if next := n.found(rec, c.owner, live); next == nil {
			return nil, nil
		} else if next.elsewhere == "" {
			return n.local.settled(ctx, next) // it turns out to run here
		} else {
			c = next
		}
	}
}

func (n *sharedNames) watch(id string, ch chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.watchers[id] == nil {
		n.watchers[id] = map[chan struct{}]struct{}{}
	}
	n.watchers[id][ch] = struct{}{}
}

func (n *sharedNames) unwatch(id string, ch chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.watchers[id], ch)
	if len(n.watchers[id]) == 0 {
		delete(n.watchers, id)
	}
}

func (n *sharedNames) closeOwner(o owner) ([]*input, []*call) { return n.local.closeOwner(o) }

func (n *sharedNames) drain() ([]*input, []*call) {
	rounds, running := n.local.drain()
	n.mu.Lock()
	var refs []string
	for ref, p := range n.parked {
		rounds = append(rounds, p.in)
		refs = append(refs, ref)
	}
	clear(n.parked)
	for _, c := range n.live {
		if !c.snapshot().returned {
			running = append(running, c)
		}
	}
	n.mu.Unlock()
	for _, ref := range refs {
		n.w.add(writeJob{do: func(ctx context.Context) error { return n.store.DropRounds(ctx, ref) }})
	}
	return rounds, running
}

func (n *sharedNames) close(ctx context.Context) error {
	n.closeOnce.Do(func() {
		err := n.w.close(ctx)
		if lerr := n.store.Leave(ctx); lerr != nil {
			err = errors.Join(err, lerr)
		}
		n.mu.Lock()
		clear(n.live) // what could not be written is lost with this process
		n.mu.Unlock()
		n.closeErr = err
	})
	return n.closeErr
}

func (n *sharedNames) stats() Stats {
	s := n.local.stats()
	n.mu.Lock()
	defer n.mu.Unlock()
	s.ParkedRounds += len(n.parked)
	s.Tasks += len(n.live)
	return s
}

// save writes c's record as its state is now. A terminal status the store
// holds already (cancelled elsewhere, failed by a lapsed lease) wins: the
// call here stops. Once its last record is written (it returned) the store
// is where it lives.
func (n *sharedNames) save(ctx context.Context, c *call) error {
	s := c.snapshot()
	rec := ports.TaskRecord{ID: c.id, Owner: digestOf(c.owner.key()), Created: c.created, Updated: s.updated, TTL: c.ttl,
		Status: s.status, Message: s.message, Returned: s.returned, Inputs: encodeInputs(s.inputs)}
	if terminal(s.status) {
		rec.Ended = s.endedAt
	}
	if s.returned {
		switch s.status {
		case taskCompleted:
			rec.Result, rec.ToolError = s.outcome.appendTo(nil, true), s.outcome.failed()
		case taskFailed:
			rec.Error, _ = json.Marshal(s.outcome.rerr)
		}
	}
	status, err := n.store.SaveTask(ctx, rec, n.bounds)
	if err != nil {
		return err
	}
	if terminal(status) && !terminal(s.status) {
		c.stop(errEndedThere, "")
	}
	if s.returned {
		n.mu.Lock()
		if n.live[c.id] == c {
			delete(n.live, c.id)
		}
		n.mu.Unlock()
	}
	return nil
}

// storedInput is an open input request as a task's record keeps it.
type storedInput struct {
	Key             string          `json:"key"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

// encodeInputs is the record of a task's open input requests (a round's
// prompt and a stream's elicitation are not the task's to show).
func encodeInputs(inputs []*input) json.RawMessage {
	var out []storedInput
	for _, in := range inputs {
		if !in.round && !in.elicited {
			out = append(out, storedInput{in.key, in.form.Message, in.form.RequestedSchema})
		}
	}
	if out == nil {
		return nil
	}
	b, _ := domain.MarshalJSON(out)
	return b
}

func decodeInputs(c *call, b json.RawMessage) []*input {
	var stored []storedInput
	if b == nil || json.Unmarshal(b, &stored) != nil {
		return nil
	}
	out := make([]*input, len(stored))
	for i, s := range stored {
		out[i] = &input{c: c, key: s.Key, form: domain.Form{Message: s.Message, RequestedSchema: s.RequestedSchema}}
	}
	return out
}

// appendMembers appends ms as a JSON object.
func appendMembers(b []byte, ms []jsonrpc.Member) []byte {
	b = append(b, '{')
	for i, m := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(jsonrpc.AppendString(b, m.Name), ':'), m.Value...)
	}
	return append(b, '}')
}

// writer writes what the store is behind on, in order and off the calls'
// paths: a task's record as its call moves (coalesced: a write takes the
// task's state as it is then, so a burst of progress is one write), a
// forgotten task, an ended call's rounds, a message whose sender does not
// wait. A write that fails is tried again, backing off, until the engine
// closes (the store may be restarting).
type writer struct {
	n      *sharedNames
	mu     sync.Mutex
	queue  []writeJob
	saving map[*call]bool // saves queued
	busy   bool
	idle   chan struct{} // closed while nothing is queued or running
	wake   chan struct{} // capacity 1
	cancel context.CancelFunc
	done   chan struct{}
}

type writeJob struct {
	save *call                           // write this task's record as it is then
	do   func(ctx context.Context) error // or this
}

func (w *writer) start(n *sharedNames) {
	w.n = n
	w.saving = map[*call]bool{}
	w.idle = make(chan struct{})
	close(w.idle)
	w.wake = make(chan struct{}, 1)
	w.done = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go w.run(ctx)
}

func (w *writer) add(j writeJob) {
	w.mu.Lock()
	if j.save != nil {
		if w.saving[j.save] {
			w.mu.Unlock()
			return
		}
		w.saving[j.save] = true
	}
	if len(w.queue) == 0 && !w.busy {
		w.idle = make(chan struct{})
	}
	w.queue = append(w.queue, j)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *writer) run(ctx context.Context) {
	defer close(w.done)
	backoff := time.Duration(0)
	for {
		w.mu.Lock()
		if len(w.queue) == 0 {
			w.mu.Unlock()
			select {
			case <-w.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		j := w.queue[0]
		w.queue = w.queue[1:]
		if j.save != nil {
			delete(w.saving, j.save)
		}
		w.busy = true
		w.mu.Unlock()
		var err error
		if j.save != nil {
			err = w.n.save(ctx, j.save)
		} else {
			err = j.do(ctx)
		}
		w.mu.Lock()
		w.busy = false
		if err != nil && ctx.Err() == nil {
			// Again, first: what follows it may depend on it.
			if j.save == nil || !w.saving[j.save] {
				if j.save != nil {
					w.saving[j.save] = true
				}
				w.queue = append([]writeJob{j}, w.queue...)
			}
		}
		if len(w.queue) == 0 {
			close(w.idle)
		}
		w.mu.Unlock()
		if err == nil {
			backoff = 0
			continue
		}
		if ctx.Err() != nil {
			return
		}
		backoff = min(max(2*backoff, 200*time.Millisecond), 5*time.Second)
		w.n.e.logger.Warn("engine: the call store failed a write; trying again", "in", backoff.String(), "err", err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return
		}
	}
}

// close waits until everything queued is written (or ctx ends), then
// stops the writer.
func (w *writer) close(ctx context.Context) error {
	w.mu.Lock()
	idle := w.idle
	w.mu.Unlock()
	var err error
	select {
	case <-idle:
	case <-ctx.Done():
		err = ctx.Err()
	}
	w.cancel()
	<-w.done
	return err
}
