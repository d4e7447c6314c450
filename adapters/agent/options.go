package agent

import (
	"log/slog"
	"time"

	"github.com/agentmcp/agentmcp/adapters/memstore"
	"github.com/agentmcp/agentmcp/internal/logs"
	"github.com/agentmcp/agentmcp/ports"
)

// Defaults of [Options].
const (
	DefaultMaxSteps            = 32
	DefaultMaxToolCallsPerStep = 16
	DefaultMaxToolResultBytes  = 64 << 10
	DefaultTurnBytes           = 2 << 20
	DefaultHistoryBytes        = 256 << 10
	DefaultMaxConversations    = 64
	DefaultMaxPerPrincipal     = 100
	DefaultMaxTurns            = 4
	DefaultTurnTimeout         = 30 * time.Minute
	DefaultApprovalTimeout     = 5 * time.Minute
	DefaultHeartbeat           = 5 * time.Second
	DefaultTextInterval        = 500 * time.Millisecond

	// MaxProgressText bounds a progress message that carries streamed
	// text, in characters: clients show about that much (Claude Code cuts
	// a progress message to 200).
	MaxProgressText = 200

	// MaxHeartbeat is the longest heartbeat interval: clients commonly reset
	// their request timeout on progress, so a turn reports well within it.
	MaxHeartbeat = 10 * time.Second

	// WindDown is how long a call waits for a cancelled turn to end before
	// it is refused as busy; a cancelled turn ends within milliseconds
	// (tools check for cancellation within a fraction of a second).
	WindDown = 5 * time.Second

	// CancelGrace is how long a submission waits for its conversation's
	// running turn to be cancelled before it is refused as busy. Over
	// Streamable HTTP a client's notifications/cancelled and its next
	// submission travel on separate requests, sent at once (the TypeScript
	// SDK does not wait for the first): the submission may arrive first.
	CancelGrace = 2 * time.Second
)

// Refusals; their messages are client-visible and single-line.
var (
	// ErrBusy refuses a submission made while a turn of the same
	// conversation (the same principal and name) computes.
	ErrBusy = ports.Refused("session is busy: a turn of this conversation is running; retry when it finishes")

	// ErrBusyElsewhere refuses a submission made while a turn of the same
	// conversation runs in another process sharing the store (another
	// replica: [ports.ConversationLocker]). It is never a supersede: the
	// turn waiting there is that process's to end.
	ErrBusyElsewhere = ports.Refused("session is busy: a turn of this conversation is running on another replica; retry when it finishes")

	// errNotStarted refuses a submission whose ctx ended before its turn.
	errNotStarted = ports.Refused("submission cancelled before its turn started")
)

// Options configures a [Session]. Zero values take the defaults.
type Options struct {
	// SystemPrompt replaces the default system prompt ([DefaultSystemPrompt]).
	SystemPrompt string

	// Workspace names what the inner session works on, for the default
	// system prompt (the CLI passes the root directory's name).
	Workspace string

	// MaxSteps bounds the model steps of one turn (default 32).
	MaxSteps int

	// MaxToolCallsPerStep bounds the tool calls run for one model step
	// (default 16); further calls of that step are dropped from the turn,
	// and one note tells the model how many and why.
	MaxToolCallsPerStep int

	// MaxToolResultBytes bounds the text of one tool result the model reads
	// (default 64 KiB); a longer result is cut on a UTF-8 boundary and says
	// so.
	MaxToolResultBytes int

	// TurnBytes bounds what a running turn keeps and sends again with each
	// model step, counted as [Options.HistoryBytes] counts (default 2 MiB):
	// beyond it the oldest tool results and call arguments of the turn are
	// replaced by short notes (see boundTurn).
	TurnBytes int

	// HistoryBytes bounds a conversation's turns, counted as the bytes of
	// their texts, tool names, arguments and ids (default 256 KiB). A
	// finished turn is first bounded to it (see boundTurn), then the oldest
	// whole turns are dropped until the rest fit.
	HistoryBytes int

	// MaxConversations bounds the conversations of the default in-memory
	// store (default 64); the least recently updated is dropped first. A
	// Store given here has bounds of its own.
	MaxConversations int

	// MaxConversationsPerPrincipal bounds the conversations one principal
	// holds on Root (default 100): a submission that would create one more
	// is refused, saying so.
	MaxConversationsPerPrincipal int

	// Store keeps the conversations (default: in memory, within
	// MaxConversations). The agent loads a turn's history from it when the
	// turn starts and appends the finished turn, bounded by boundTurn, when
	// it ends.
	Store ports.ConversationStore

	// Root is the workspace root's real path: with the principal, it names
	// a conversation in Store.
	Root string

	// MaxTurns bounds the turns running at once, one per conversation
	// (default 4); a submission beyond it is refused as busy, saying how
	// many run.
	MaxTurns int

	// TurnTimeout bounds one turn, permission prompts included (default 30
	// minutes). A turn that runs out of time fails.
	TurnTimeout time.Duration

	// ApprovalTimeout bounds one permission prompt or question a turn's tool
	// raises (default 5 minutes). One left unanswered that long settles
	// closed (denied), and the turn stops after that tool call with a
	// response that says so: whoever drives it has walked away.
	ApprovalTimeout time.Duration

	// Heartbeat is the interval of progress reports while the model works
	// (default 5 s; capped at [MaxHeartbeat]).
	Heartbeat time.Duration

	// Observer, when set, is told about each turn, model step and tool
	// call (docs/SPEC.md §13): names, counts and outcomes only, never a
	// prompt, an argument or a result. Its contexts nest: a turn's under
	// the submission's request, steps and tool calls under the turn.
	Observer ports.Observer

	// TextInterval is the shortest interval between two progress reports
	// of streamed text (default 500 ms).
	TextInterval time.Duration

	// Logger receives one record per turn and per model step (counts,
	// durations, the model's name and endpoint; never prompts, arguments,
	// results or principals). Nil discards.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxSteps, DefaultMaxSteps)
	def(&o.MaxToolCallsPerStep, DefaultMaxToolCallsPerStep)
	def(&o.MaxToolResultBytes, DefaultMaxToolResultBytes)
	def(&o.TurnBytes, DefaultTurnBytes)
	def(&o.HistoryBytes, DefaultHistoryBytes)
	def(&o.MaxConversations, DefaultMaxConversations)
	def(&o.MaxConversationsPerPrincipal, DefaultMaxPerPrincipal)
	def(&o.MaxTurns, DefaultMaxTurns)
	if o.TurnTimeout <= 0 {
		o.TurnTimeout = DefaultTurnTimeout
	}
	if o.ApprovalTimeout <= 0 {
		o.ApprovalTimeout = DefaultApprovalTimeout
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	o.Heartbeat = min(o.Heartbeat, MaxHeartbeat)
	if o.TextInterval <= 0 {
		o.TextInterval = DefaultTextInterval
	}
	if o.Store == nil {
		o.Store = memstore.New(memstore.Options{MaxConversations: o.MaxConversations})
	}
	o.Logger = logs.OrDiscard(o.Logger)
	if o.Observer == nil {
		o.Observer = ports.NopObserver{}
	}
	return o
}
