package ports

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/agentmcp/agentmcp/domain"
)

// ConversationStore is the driven port that keeps the reference agent's
// conversations (docs/SPEC.md §9): the finished turns of each conversation,
// so a conversation outlives the process that served it. The agent loop
// depends on this port only; adapters/sqlite keeps them in a file,
// adapters/memstore in memory (--ephemeral, tests), and any store passes
// ports/porttest.TestConversationStore.
//
// A conversation is named by a root, a principal and a name
// ([ConversationRef]); it exists once its first turn is appended (a fork
// with the turns it copied) and until it is deleted or dropped by the
// store's bounds.
//
// Implementations must be safe for concurrent use, and a store shared by
// several processes (adapters/sqlite) must keep every committed turn: each
// Append is one transaction, and Load returns what is committed.
//
// What a store holds is the messages and the file changes of finished
// turns, as the agent's history holds them: never a credential, a
// requestState or an elicitation answer (the agent never puts one in a
// message). Errors name the store (its file) and the cause; they never
// carry message text.
type ConversationStore interface {
	// Load returns ref's turns, oldest first, each with its Number; a
	// conversation that does not exist has none (no error).
	Load(ctx context.Context, ref ConversationRef) ([]Turn, error)

	// Append adds one finished turn to ref's conversation and returns the
	// turn's number within it, all in one transaction: after an error
	// nothing of it is kept. A conversation that does not exist is created
	// — refused with [ErrConversationLimit] when ref's principal already
	// holds o.MaxPerPrincipal conversations of ref's root, and, with
	// o.ForkFrom, as a copy of the turns of the principal's conversation
	// of that name on the same root, through o.ForkThrough when set
	// ([ErrNoConversation] when it does not exist; [ErrConversationExists]
	// when ref already does). Then it drops the conversation's oldest
	// whole turns until the rest fit o.MaxBytes
	// (counted as the turns' Bytes; the new turn always stays), and
	// applies the store's own bounds (its conversations, bytes and age):
	// at a bound it drops the least recently updated conversation of the
	// principal that holds the most (in conversations, or bytes), the
	// appending principal's own on a tie, never ref's — so a principal
	// over its share makes room from its own conversations, never from
	// another's that holds fewer.
	Append(ctx context.Context, ref ConversationRef, turn Turn, o AppendOptions) (int, error)

	// List returns the conversations f selects, the most recently updated
	// first, at most f.Limit of them (0: every one).
	List(ctx context.Context, f ConversationFilter) ([]ConversationInfo, error)

	// Delete forgets ref's conversation; one that does not exist is no
	// error. Its forks are conversations of their own and stay.
	Delete(ctx context.Context, ref ConversationRef) error
}

// AppendOptions are the bounds and the fork of one [ConversationStore.Append].
type AppendOptions struct {
	// MaxBytes bounds the conversation: its oldest whole turns are dropped
	// until the rest fit.
	MaxBytes int

	// ForkFrom, when set, names the conversation of the same root and
	// principal whose turns a new conversation starts with.
	ForkFrom string

	// ForkThrough, with ForkFrom, is the Number of the parent's last turn
	// the new conversation copies: the turns the fork's first turn was
	// shown when it started. A turn the parent gained since (its own turn
	// ran beside the fork's) is not copied. 0: every turn.
	ForkThrough int

	// MaxPerPrincipal bounds the conversations one principal holds on one
	// root: creating one more is [ErrConversationLimit]. 0: no bound.
	MaxPerPrincipal int
}

// ConversationFilter selects conversations for [ConversationStore.List];
// a zero field selects every value.
type ConversationFilter struct {
	Root      string // a workspace root's real path
	Principal string // a principal as stored (see [RefOf])
	Limit     int    // at most this many, the most recently updated
}

// Turn is one finished turn: its messages (the prompt first, the answer
// last), as the agent sends them to the model, the files it changed, and
// its size against the history budget in bytes (the agent counts it).
type Turn struct {
	// Number is the turn's number within its conversation, from 1 (set by
	// the store on Load; Append ignores it and returns the number given).
	// Turns dropped by the budget still count, and a fork's turns keep the
	// numbers of the turns they copy.
	Number int

	Messages []Message

	// Changes are the unified diffs of the files the turn changed, in the
	// order first changed.
	Changes []FileDiff

	Bytes int
}

// FileDiff is one file's change in a finished turn: a unified diff (3
// lines of context) and its line counts. Diff may be cut, with a note
// saying so; Added and Removed count the whole diff.
type FileDiff struct {
	Path    string // slash-separated, relative to the workspace root
	Added   int
	Removed int
	Diff    string
}

// ConversationRef names one stored conversation: the workspace root's real
// path, the principal as stored (see [RefOf]) and the conversation's name
// ([domain.CheckConversationName]'s rule).
type ConversationRef struct {
	Root      string
	Principal string
	Name      string
}

// Named returns the conversation of ref's root and principal named name;
// "" is the default conversation.
func (ref ConversationRef) Named(name string) ConversationRef {
	if name == "" {
		name = domain.DefaultConversation
	}
	ref.Name = name
	return ref
}

// LocalPrincipal is the stored name of the zero [Principal]: whoever can
// reach a local carrier (stdio, the loopback host, a Unix socket).
const LocalPrincipal = "local"

// RefOf returns the stored name of root's default conversation with p
// ([ConversationRef.Named] names another): the zero principal is
// [LocalPrincipal]; any other is "remote:" and the hex SHA-256 of its
// issuer, subject and client, so a store never holds a token's claims,
// only a name that tells principals apart.
func RefOf(root string, p Principal) ConversationRef {
	ref := ConversationRef{Root: root, Principal: LocalPrincipal, Name: domain.DefaultConversation}
	if p == (Principal{}) {
		return ref
	}
	h := sha256.New()
	for _, s := range []string{p.Issuer, p.Subject, p.Client} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	ref.Principal = "remote:" + hex.EncodeToString(h.Sum(nil))
	return ref
}

// ConversationInfo describes one stored conversation.
type ConversationInfo struct {
	Ref        ConversationRef
	ForkedFrom string // the name of the conversation it was forked from; "" when none
	Turns      int
	Bytes      int64     // the sum of its turns' Bytes
	Updated    time.Time // when its last turn was appended
}

// ErrStoreFull is the error kind of an Append refused because the store's
// disk (or its size limit) is full: the turn fails, nothing of it is kept,
// and the session keeps serving.
var ErrStoreFull = errors.New("the conversation store is full")

// Error kinds of an Append that would create a conversation it may not
// (docs/SPEC.md §9): nothing is kept. The agent checks the same before a
// turn runs, so a client meets them only when two turns raced.
var (
	ErrConversationLimit  = errors.New("the principal holds the most conversations it may")
	ErrConversationExists = errors.New("the conversation already exists")
	ErrNoConversation     = errors.New("the conversation does not exist")
)

// ConversationLocker is what a [ConversationStore] shared by several
// processes (adapters/postgres: replicas behind a balancer) offers so that
// a turn of one conversation runs in one process at a time (docs/SPEC.md
// §9 "The store"). The agent claims the conversation for each turn, after
// its own in-process busy rule and before it loads the history; a store
// of one process (adapters/memstore, adapters/sqlite) has no need of it,
// the in-process rule being the whole rule there.
type ConversationLocker interface {
	// HoldTurn claims ref's conversation for one turn. ok is false, with no
	// error, when another process holds it (its turn runs there); err is
	// the store failing. release ends the claim and is safe to call more
	// than once; a process that dies releases its claims with its
	// connections.
	HoldTurn(ctx context.Context, ref ConversationRef) (release func(), ok bool, err error)
}
