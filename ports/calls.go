package ports

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentmcp/agentmcp/domain"
)

// CallStore keeps the tasks and input-required rounds of a server's HTTP
// clients where every replica of the server reaches them (docs/SPEC.md §14
// "Replicas"): a task created through one replica is read, answered and
// cancelled through any, and a round's retry that reaches another replica
// is carried to the one whose call is parked. The call itself never leaves
// the process that runs it: the store holds what the others read (a task's
// record, which that process writes as the call moves, and a round's
// binding) and carries what they send it (opaque messages, [CallStore.Send]).
//
// Keys are opaque to the store: an owner is a digest of the principal, a
// round's token is the SHA-256 of its requestState (the token itself is
// never stored). A store is scoped (one served workspace): records of
// another scope are never found, and the bounds count within a scope.
//
// Each replica holds a lease it renews while it runs ([CallStore.Join]);
// when it lapses (the process died, or lost the store for longer than the
// lease) the store fails the tasks whose calls ran there (status failed,
// [ErrReplicaGone]'s message), drops their rounds and messages, and tells
// every replica ([CallEvents.Gone]).
//
// Every method is safe for concurrent use and bounded in time: a store that
// does not answer fails the operation.
type CallStore interface {
	// Join makes this process a replica: it returns the replica's id,
	// which the records it writes carry. From then on events is told
	// what reaches it until [CallStore.Leave]. A store is joined once.
	Join(ctx context.Context, events CallEvents) (replica string, err error)
	// Leave ends the replica: its lease is given up (a call still running
	// fails as on a lapse) and events is told nothing more.
	Leave(ctx context.Context) error

	// CreateTask stores a new task (t.ID fresh, t.Status working) as this
	// replica's, within b: it is refused (no error) when its owner runs
	// b.PerPrincipal tasks already, or when the scope holds b.Max tasks
	// and none of them has ended and returned — else, at b.Max, the
	// oldest ended task (by end, then creation) of the owner holding the
	// most tasks among those holding one is forgotten to make room.
	CreateTask(ctx context.Context, t TaskRecord, b TaskBounds) (TaskRefusal, error)
	// SaveTask writes the running replica's view of task t (its status,
	// message, last update, end, open inputs and, once t.Returned, its
	// result) and returns the status stored after it: a terminal status
	// already stored (cancelled elsewhere, failed by a lapse) is kept, with
	// no result. When t.Returned with a kept result, the result bytes
	// bounds of b apply: beyond its owner's, that owner's oldest ended
	// tasks are forgotten; beyond the scope's, the oldest ended task of
	// the owner keeping the most bytes — never t itself.
	SaveTask(ctx context.Context, t TaskRecord, b TaskBounds) (status string, err error)
	// Task is the task id of owner; ok is false when it is unknown,
	// another owner's, or kept past its TTL (alike).
	Task(ctx context.Context, id, owner string) (t TaskRecord, ok bool, err error)
	// Tasks are owner's tasks that Task would find, in no order.
	Tasks(ctx context.Context, owner string) ([]TaskRecord, error)
	// CancelTask marks owner's task id cancelled at at, unless it has
	// ended: changed reports whether it did; t is the task as stored
	// after it. ok is false as for Task.
	CancelTask(ctx context.Context, id, owner string, at time.Time) (t TaskRecord, changed, ok bool, err error)
	// ForgetTask drops task id.
	ForgetTask(ctx context.Context, id string) error

	// ParkRound stores a parked round of this replica's call r.Call under
	// the digest r.Token, bound to r.Binding, until r.Deadline. At
	// b.PerPrincipal rounds of r.Binding.Principal its oldest is removed
	// and returned (its replica ends that call); at b.Max rounds in the
	// scope it fails with [domain.ErrRoundsFull].
	ParkRound(ctx context.Context, r RoundRecord, b RoundBounds) (evicted []RoundRef, err error)
	// TakeRound removes and returns the round whose token digest is token
	// when its binding is b, its deadline is after now and its replica's
	// lease holds; otherwise it fails with [domain.ErrUnknownRound] and a
	// round of another binding stays (a failed check does not use it up).
	TakeRound(ctx context.Context, token [32]byte, b domain.RoundBinding, now time.Time) (RoundRef, error)
	// DropRounds removes every round of this replica's call.
	DropRounds(ctx context.Context, call string) error

	// Send delivers message to replica's [CallEvents.Message], once, in
	// the order sent; a message to a replica whose lease has lapsed is
	// dropped and Send fails with [ErrReplicaGone]. A sender waiting for
	// an answer learns so at once: that replica's [CallEvents.Gone] may
	// have passed before it began to wait.
	Send(ctx context.Context, replica string, message []byte) error
}

// CallEvents is what a [CallStore] tells its replica. Each is called on
// the store's goroutine: it must not block.
type CallEvents struct {
	// Message is a message another replica (or this one) sent this one.
	Message func(message []byte)
	// Settled says task id reached a terminal status (on any replica).
	Settled func(id string)
	// Gone says replica's lease lapsed: its tasks are failed and its
	// rounds dropped. This replica's own id means it lost its lease (the
	// store was out of its reach for longer than it): it ends what it
	// runs for others.
	Gone func(replica string)
	// Missed says Settled and Gone events may have been lost (the store's
	// event stream began, or began again after a break): whoever waits for
	// one reads the store again.
	Missed func()
}

// TaskRecord is a task as a [CallStore] keeps it: what any replica renders
// for tasks/get, tasks/list and tasks/result (docs/SPEC.md §14).
type TaskRecord struct {
	ID      string
	Owner   string // an opaque digest of the principal
	Replica string // who runs its call (set by the store)
	Created time.Time
	Updated time.Time // its lastUpdatedAt
	Ended   time.Time // zero while it runs
	TTL     time.Duration
	Status  string // working, input_required, completed, failed, cancelled
	Message string // its statusMessage
	// Returned: the call has returned (or its replica is gone); until
	// then a task counts as running under its owner's bound, cancelled or
	// not.
	Returned bool
	// Inputs are its open input requests: a JSON array of {key, message,
	// requestedSchema}; nil for none.
	Inputs json.RawMessage
	// Result is a completed task's CallToolResult members (no braces), as
	// the wire carries them; ToolError: its isError is true.
	Result    json.RawMessage
	ToolError bool
	// Error is a failed task's JSON-RPC error object.
	Error json.RawMessage
}

// TaskBounds are the bounds a [CallStore] keeps tasks within, per scope
// (docs/SPEC.md §14 "Lifetime and bounds").
type TaskBounds struct {
	PerPrincipal            int   // running tasks of one owner
	Max                     int   // tasks held, running or kept
	PerPrincipalResultBytes int64 // bytes of the results one owner's ended tasks keep
	MaxResultBytes          int64 // bytes of the results every ended task keeps
}

// TaskRefusal says which bound refused a task; 0: none did.
type TaskRefusal int

const (
	TaskAccepted TaskRefusal = iota
	TaskRefusedPerPrincipal
	TaskRefusedMax
)

// RoundRecord is a parked input-required round as a [CallStore] keeps it.
type RoundRecord struct {
	Token    [32]byte // SHA-256 of its requestState
	Binding  domain.RoundBinding
	Call     string // the call's reference on its replica
	Deadline time.Time
}

// RoundRef names a parked round's call: its replica and its reference
// there.
type RoundRef struct {
	Replica string
	Call    string
}

// RoundBounds are the bounds of parked rounds, per scope (docs/SPEC.md §6).
type RoundBounds struct {
	PerPrincipal int
	Max          int
}

// ErrReplicaGone is the failure of a task whose replica's lease lapsed
// (docs/SPEC.md §14 "Replicas"): its work is lost. [CallStore.Send] to
// such a replica fails with it too.
var ErrReplicaGone = errors.New("the server replica running this task stopped (its lease lapsed) before the task ended; its work is lost: start it again")
