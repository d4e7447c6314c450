package ports

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"
)

// ConversationStore is the driven port that keeps the reference agent's
// conversations (docs/SPEC.md §9): the finished turns of each conversation,
// so a conversation outlives the process that served it. The agent loop
// depends on this port only; adapters/sqlite keeps them in a file,
// adapters/memstore in memory (--ephemeral, tests).
//
// Implementations must be safe for concurrent use, and a store shared by
// several processes (adapters/sqlite) must keep every committed turn: each
// Append is one transaction, and Load returns what is committed.
//
// What a store holds is the messages of finished turns, as the agent's
// history holds them: never a credential, a requestState or an
// elicitation answer (the agent never puts one in a message). Errors name
// the store (its file) and the cause; they never carry message text.
type ConversationStore interface {
	// Load returns ref's turns, oldest first; a conversation that does not
	// exist has none (no error).
	Load(ctx context.Context, ref ConversationRef) ([]Turn, error)

	// Append adds one finished turn to ref's conversation (creating it) and
	// drops its oldest whole turns until the rest fit maxBytes (counted as
	// the turns' Bytes; the new turn always stays), all in one transaction:
	// after an error nothing of it is kept. The store's own bounds (its
	// conversations, bytes and age) are applied after it.
	Append(ctx context.Context, ref ConversationRef, turn Turn, maxBytes int) error

	// List returns every conversation, the most recently updated first.
	List(ctx context.Context) ([]ConversationInfo, error)

	// Delete forgets ref's conversation; one that does not exist is no error.
	Delete(ctx context.Context, ref ConversationRef) error
}

// Turn is one finished turn: its messages (the prompt first, the answer
// last), as the agent sends them to the model, and its size against the
// history budget in bytes (the agent counts it).
type Turn struct {
	Messages []Message
	Bytes    int
}

// ConversationRef names one stored conversation: the workspace root's real
// path, and the principal as stored (see [RefOf]).
type ConversationRef struct {
	Root      string
	Principal string
}

// LocalPrincipal is the stored name of the zero [Principal]: whoever can
// reach a local carrier (stdio, the loopback host, a Unix socket).
const LocalPrincipal = "local"

// RefOf returns the stored name of root's conversation with p: the zero
// principal is [LocalPrincipal]; any other is "remote:" and the hex SHA-256
// of its issuer, subject and client, so a store never holds a token's
// claims, only a name that tells principals apart.
func RefOf(root string, p Principal) ConversationRef {
	if p == (Principal{}) {
		return ConversationRef{Root: root, Principal: LocalPrincipal}
	}
	h := sha256.New()
	for _, s := range []string{p.Issuer, p.Subject, p.Client} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return ConversationRef{Root: root, Principal: "remote:" + hex.EncodeToString(h.Sum(nil))}
}

// ConversationInfo describes one stored conversation.
type ConversationInfo struct {
	Ref     ConversationRef
	Turns   int
	Bytes   int64     // the sum of its turns' Bytes
	Updated time.Time // when its last turn was appended
}

// ErrStoreFull is the error kind of an Append refused because the store's
// disk (or its size limit) is full: the turn fails, nothing of it is kept,
// and the session keeps serving.
var ErrStoreFull = errors.New("the conversation store is full")
