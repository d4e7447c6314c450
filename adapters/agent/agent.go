// Package agent is the reference agent behind agent_submit (docs/SPEC.md
// §9): a [ports.Session] decorator that runs each submission as a turn of a
// model loop over another session's tools.
//
// [New] wraps an inner session (the CLI's workspace) and a [ports.Model].
// RuntimeTools and InvokeTool are the inner session's; Submit runs one turn:
//
//  1. the prompt joins the caller's conversation (one per principal, below);
//  2. model step: the system prompt, the conversation and the inner
//     session's runtime tools go to the model, which answers text and/or tool
//     calls;
//  3. each tool call runs through the inner session's InvokeTool with the
//     submission's own [ports.Caller], exactly as an MCP client's own
//     tools/call would: the same tools, the same permission wrapper, so
//     write_file asks whoever drives this agent_submit (docs/SPEC.md §6);
//  4. the results go back to the model, and so on, until the model answers
//     without tool calls: that text is the turn's response.
//
// Why a decorator, in its own package: the loop is not a property of any one
// session, so it sits in front of one and depends only on the ports (the
// Session it wraps and the Model it drives), never on the workspace or on a
// model provider; the composition root (app) picks both. The same wrapper
// serves any session, and another provider is one more Model adapter.
//
// # Busy rules
//
// One turn per conversation: a principal's submission made while its own
// turn runs is refused with [ErrBusy]; other principals' turns run beside
// it, at most [Options.MaxTurns] at once (default 4; beyond it a busy
// refusal that says how many run). A client's own tool calls are never
// refused because turns run: the workspace's calls are safe side by side (a
// write is approved by itself and lands where it was approved), so nothing
// one client leaves running blocks another's tools. A submission whose ctx
// ended before its turn started is refused. A turn of the same conversation
// that was cancelled (or ran out of time) but is still ending is waited
// for, up to [WindDown], rather than refused, so a client that cancels a
// turn and submits again at once is served; so is one whose cancellation
// arrives up to [CancelGrace] after its submission (two HTTP requests sent
// at once), which is what a busy refusal waits before it is given.
//
// A prompt a turn's tool raises (a permission, a question) waits at most
// [Options.ApprovalTimeout] (default 5 minutes), not the turn's 30 minutes
// nor the carrier's round lifetime: unanswered, it settles closed and the
// turn stops after that call with a response that says so. A new
// submission does not supersede a turn waiting on a prompt: on a local
// carrier every client is the same principal, and one client's submission
// must not end another's turn.
//
// # Conversations
//
// Each principal ([ports.Caller.Principal]: the zero value on local
// carriers, issuer + subject + client on the remote host) has a
// conversation of its own on [Options.Root], so no principal ever sees
// another's history. Conversations live in a [ports.ConversationStore]
// ([Options.Store]; by default in memory, at most
// [Options.MaxConversations], the least recently updated dropped first): a
// turn starts from what the store has committed, and its messages are
// appended in one transaction when it ends, so a durable store carries a
// conversation across restarts and between processes serving one root. A
// conversation keeps the messages of finished turns, newest last, within
// [Options.HistoryBytes]: a finished turn is first bounded to it (boundTurn:
// its tool results and arguments become short notes, oldest first; if that
// is not enough only its prompt and response stay, each cut), and that
// bounded turn is what the store appends; then the store drops the oldest
// whole turns until the rest fit, counted the same way. The system prompt
// is not part of the history and is sent every step.
//
// A turn joins its conversation only when it ends with a response. A turn
// that fails (the endpoint is down, the key is refused, the turn times out,
// the store cannot load or keep it) or is cancelled leaves the conversation
// exactly as it was before its prompt, so the next request never carries a
// tool call without its result and the next turn starts clean.
//
// # Bounds
//
//   - at most [Options.MaxSteps] model steps per turn (default 32); reaching
//     it ends the turn with a response that says so;
//   - at most [Options.MaxToolCallsPerStep] tool calls run per step (default
//     16); only those are kept in the turn, the rest become one note, so
//     what a step keeps does not grow with what the model wrote;
//   - each tool result is cut to [Options.MaxToolResultBytes] (default 64 KiB)
//     before the model sees it, with a note saying so;
//   - what the turn keeps and sends again with each step is bounded by
//     [Options.TurnBytes] (default 2 MiB): beyond it the oldest results and
//     arguments of the turn become short notes (the prompt stays whole);
//   - the whole turn is bounded by [Options.TurnTimeout] (default 30
//     minutes), each prompt of its tools by [Options.ApprovalTimeout]; each
//     model request has its own timeout and answer size (8 MiB) in the model
//     adapter.
//
// So a turn holds at most one model answer, its TurnBytes and one step's
// results at a time, whatever the endpoint streams.
//
// # Bad model output
//
// A call of an unknown tool, arguments that are not a JSON object or that
// the tool refuses, and an answer without choices each become an error the
// model reads (a failed execution envelope, or a user-role note for an empty
// answer); the turn goes on. Nothing the model writes can crash the session
// or make a turn outlive its bounds.
//
// # Progress
//
// Through the submission's Caller (notifications/progress when the client
// sent a progressToken): one report per model step ("model step 2") and per
// tool call ("calling read_file"), the tools' own reports relabelled onto
// the same increasing counter, a heartbeat every [Options.Heartbeat]
// (default 5 s, at most 10 s) while the model works, and, while it streams
// text, that text: "model step 2: …" and the newest text on one line, at
// most [MaxProgressText] characters, at most one report per
// [Options.TextInterval] (default 500 ms), so a person watching sees the
// answer being written. The final answer is the response, unchanged.
//
// # Logging
//
// Counts, durations, tool names, the model's name and the endpoint, token
// usage when the endpoint reports it, refusals and unanswered prompts with
// their reasons: never a prompt, a tool's arguments or result, a response,
// or a principal. A failed turn logs its error's log form
// ([log/slog.LogValuer], which the model adapter gives without the
// endpoint's own words: a validation error may quote the prompt), else its
// kind only.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentmcp/agentmcp/adapters/memstore"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"

	"github.com/agentmcp/agentmcp/internal/logs"
)

// Defaults of [Options].
const (
	DefaultMaxSteps            = 32
	DefaultMaxToolCallsPerStep = 16
	DefaultMaxToolResultBytes  = 64 << 10
	DefaultTurnBytes           = 2 << 20
	DefaultHistoryBytes        = 256 << 10
	DefaultMaxConversations    = 64
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
	// conversation (the same principal) runs.
	ErrBusy = ports.Refused("session is busy: a turn of this conversation is running; retry when it finishes")

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
	return o
}

// Session is the agent-backed session. It is safe for concurrent use.
type Session struct {
	inner ports.Session
	model ports.Model
	opts  Options
	log   *slog.Logger

	errFull error // the refusal at MaxTurns

	mu      sync.Mutex                   // guards running
	running map[ports.Principal]*running // the turns in progress, one per conversation
}

// running is a turn in progress.
type running struct {
	ctx  context.Context // the turn's: done once it is cancelled or out of time
	done chan struct{}   // closed when the turn has ended
}

// awaitEnd waits for r to end, up to WindDown or until ctx ends, when it is
// ending (its ctx done) or starts ending within CancelGrace; it reports
// whether r ended.
func awaitEnd(ctx context.Context, r *running) bool {
	if r.ctx.Err() == nil {
		grace := time.NewTimer(CancelGrace)
		defer grace.Stop()
		select {
		case <-r.ctx.Done():
		case <-r.done:
			return true
		case <-ctx.Done():
			return false
		case <-grace.C:
			return false
		}
	}
	timer := time.NewTimer(WindDown)
	defer timer.Stop()
	select {
	case <-r.done:
		return true
	case <-ctx.Done():
	case <-timer.C:
	}
	return false
}

var _ ports.Session = (*Session)(nil)

// New returns a session whose tools are inner's and whose submissions run
// as turns of model over them. inner and model are required.
func New(inner ports.Session, model ports.Model, opts Options) (*Session, error) {
	if inner == nil || model == nil {
		return nil, errors.New("agent: an inner session and a model are required")
	}
	opts = opts.withDefaults()
	return &Session{inner: inner, model: model, opts: opts, log: opts.Logger,
		errFull: ports.Refused(fmt.Sprintf("session is busy: %d turns are running, the most it runs at once; retry when one finishes", opts.MaxTurns)),
		running: map[ports.Principal]*running{}}, nil
}

// RuntimeTools returns the inner session's runtime tools.
func (s *Session) RuntimeTools(ctx context.Context) ([]domain.Tool, error) {
	return s.inner.RuntimeTools(ctx)
}

// InvokeTool runs a client's tool call on the inner session. It is never
// refused because turns run: the inner session's calls are safe beside each
// other (a write is approved by itself and lands where it was approved,
// docs/SPEC.md §8 and §9).
func (s *Session) InvokeTool(ctx context.Context, name string, arguments json.RawMessage, caller ports.Caller) (domain.Envelope, error) {
	return s.inner.InvokeTool(ctx, name, arguments, caller)
}

// Submit runs prompt as one turn of the caller's conversation and returns
// the model's final answer. Refusals ([ErrBusy], a ctx that ended first)
// wrap [ports.ErrRefused]; a failure inside the turn (the model endpoint, a
// timeout, cancellation, the conversation store) is any other error, with a
// client-visible first line that names the cause.
func (s *Session) Submit(ctx context.Context, prompt string, caller ports.Caller) (ports.TurnResult, error) {
	if caller == nil {
		caller = ports.ClosedCaller{}
	}
	who := caller.Principal()
	tctx, cancel := context.WithTimeout(ctx, s.opts.TurnTimeout)
	defer cancel()
	me := &running{ctx: tctx, done: make(chan struct{})}
	if err := s.begin(ctx, who, me); err != nil {
		return ports.TurnResult{}, err
	}
	// The turn stops counting as running before its end is logged, so a
	// submission made once "turn finished" or "turn failed" is logged is
	// never refused as busy by it.
	release := sync.OnceFunc(func() {
		s.mu.Lock()
		delete(s.running, who)
		s.mu.Unlock()
		close(me.done)
	})
	defer release()

	ref := ports.RefOf(s.opts.Root, who)
	t := &turn{
		s:      s,
		ctx:    tctx,
		caller: caller,
		report: &reporter{caller: caller, ctx: tctx},
		msgs:   []ports.Message{{Role: ports.RoleUser, Content: prompt}},
	}
	start := time.Now()
	response, err := s.runTurn(t, ref)
	desc := s.model.Describe()
	attrs := []any{"model", desc.Model, "endpoint", desc.Endpoint, "steps", t.steps, "toolCalls", t.calls,
		"durationMs", time.Since(start).Milliseconds()}
	if t.usage != nil {
		attrs = append(attrs, "inputTokens", t.usage.InputTokens, "outputTokens", t.usage.OutputTokens)
	}
	if t.dropped > 0 {
		attrs = append(attrs, "droppedToolCalls", t.dropped)
	}
	if err != nil {
		cause := logCause(err)
		switch {
		case ctx.Err() != nil:
			err, cause = fmt.Errorf("the turn was cancelled: %w", ctx.Err()), "cancelled"
		case tctx.Err() != nil:
			err, cause = fmt.Errorf("the turn ran out of time after %v and was ended", s.opts.TurnTimeout), "out of time"
		}
		release()
		s.log.Info("turn failed", append(attrs, "err", cause)...)
		return ports.TurnResult{}, err
	}
	if t.unanswered.Load() != nil {
		attrs = append(attrs, "stopped", "a prompt went unanswered")
	}
	release()
	s.log.Info("turn finished", attrs...)
	return ports.TurnResult{Response: response}, nil
}

// begin registers me as who's running turn. A turn of the same
// conversation that is already ending (cancelled, out of time) is waited
// for, up to WindDown; a live one refuses with [ErrBusy]; MaxTurns running
// refuses with the count. A ctx that ends first refuses as not started.
func (s *Session) begin(ctx context.Context, who ports.Principal, me *running) error {
	for {
		if ctx.Err() != nil {
			return errNotStarted
		}
		s.mu.Lock()
		r, n := s.running[who], len(s.running)
		if r == nil && n < s.opts.MaxTurns {
			s.running[who] = me
		}
		s.mu.Unlock()
		switch {
		case r == nil && n < s.opts.MaxTurns:
			return nil
		case r == nil:
			s.log.Info("submission refused", "reason", "turn bound", "running", n)
			return s.errFull
		}
		if !awaitEnd(ctx, r) {
			if ctx.Err() != nil {
				return errNotStarted
			}
			s.log.Info("submission refused", "reason", "conversation busy")
			return ErrBusy
		}
	}
}

// logCause is what the log holds of a failed turn: the error's own log
// form when it gives one ([slog.LogValuer]: the model adapter's errors
// name the endpoint and the status, never the endpoint's words, which may
// quote the prompt), else only its kind. Never the client-visible text.
func logCause(err error) any {
	var lv slog.LogValuer
	switch {
	case errors.As(err, &lv):
		return lv
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "out of time"
	}
	return "failed (see the client's error)"
}

// runTurn runs t on ref's committed history and, when it ends with a
// response, appends what the conversation keeps of it in one transaction:
// the turn bounded once by boundTurn to HistoryBytes, its size counted by
// messageSize, so the store's budget and the history's are one. A store
// that cannot load or keep the turn fails it (a full disk:
// [ports.ErrStoreFull]); the session keeps serving.
func (s *Session) runTurn(t *turn, ref ports.ConversationRef) (string, error) {
	turns, err := s.opts.Store.Load(t.ctx, ref)
	if err != nil {
		return "", s.storeFailed("loaded", err)
	}
	var history []ports.Message
	for _, turn := range turns {
		history = append(history, turn.Messages...)
	}
	response, err := t.run(history)
	if err != nil {
		return "", err
	}
	kept := boundTurn(t.msgs, s.opts.HistoryBytes)
	if err := s.opts.Store.Append(t.ctx, ref, ports.Turn{Messages: kept, Bytes: turnSize(kept)}, s.opts.HistoryBytes); err != nil {
		return "", s.storeFailed("kept", err)
	}
	return response, nil
}

// storeFailed logs a store's error (it names the store's file and the
// cause, never message text) and returns the turn's client-visible error,
// which names neither: a client need not learn the server's paths.
func (s *Session) storeFailed(verb string, err error) error {
	s.log.Error("conversation store failed", "err", err)
	if errors.Is(err, ports.ErrStoreFull) {
		return fmt.Errorf("the conversation cannot be %s: %w (the server's disk is full); the session keeps serving", verb, ports.ErrStoreFull)
	}
	return fmt.Errorf("the conversation cannot be %s: the conversation store failed (the server's log says why)", verb)
}

// messageSize is what a message counts against the history budget.
func messageSize(m ports.Message) int {
	n := len(m.Role) + len(m.Content) + len(m.ToolCallID)
	for _, tc := range m.ToolCalls {
		n += len(tc.ID) + len(tc.Name) + len(tc.Arguments)
	}
	return n
}

// noteBytes is the size below which shrinkTurn leaves a text or the
// arguments of a call as they are: a note replacing them is about as long.
const noteBytes = 256

// boundTurn returns a finished turn's messages bounded to budget bytes (as
// messageSize counts them): what a conversation keeps of a turn, and what
// anything that stores finished turns must keep too (docs/SPEC.md §9).
//
//  1. shrinkTurn: the tool results, call arguments and texts between the
//     prompt and the response, oldest first, are replaced by short notes
//     until it fits;
//  2. still too large (a huge prompt or response): only the prompt and the
//     response stay, each cut to half the budget.
//
// Either way the result is a valid conversation: every tool call is
// followed by its result. msgs is a finished turn: the prompt first, the
// response (an assistant message without calls) last; it is shrunk in
// place.
func boundTurn(msgs []ports.Message, budget int) []ports.Message {
	if len(msgs) < 2 {
		return msgs
	}
	last := messageSize(msgs[len(msgs)-1])
	shrinkTurn(msgs[:len(msgs)-1], budget-last)
	if turnSize(msgs) <= budget {
		return msgs
	}
	prompt, answer := msgs[0], msgs[len(msgs)-1]
	half := (budget - len(prompt.Role) - len(answer.Role)) / 2
	prompt.Content = capText(prompt.Content, half)
	answer.Content = capText(answer.Content, half)
	prompt.ToolCalls, prompt.ToolCallID, answer.ToolCalls, answer.ToolCallID = nil, "", nil, ""
	return []ports.Message{prompt, answer}
}

// shrinkTurn replaces, oldest message first, each tool result, call
// arguments and text longer than noteBytes by a short note, until the
// messages fit budget or nothing is left to shrink; the prompt (msgs[0]) is
// never touched. It shrinks msgs in place (they are the turn's own; a
// message's calls are copied before they change) and returns it.
func shrinkTurn(msgs []ports.Message, budget int) []ports.Message {
	total := turnSize(msgs)
	for i := 1; total > budget && i < len(msgs); i++ {
		m := &msgs[i]
		before := messageSize(*m)
		switch {
		case m.Role == ports.RoleTool && len(m.Content) > noteBytes:
			m.Content = fmt.Sprintf("[agentmcp: this result (%d bytes) was dropped to keep the turn within %d bytes; call the tool again if you need it]", len(m.Content), budget)
		case len(m.Content) > noteBytes:
			m.Content = capText(m.Content, noteBytes)
		}
		if len(m.ToolCalls) > 0 {
			calls := make([]ports.ToolCall, len(m.ToolCalls))
			copy(calls, m.ToolCalls)
			for k := range calls {
				if n := len(calls[k].Arguments); n > noteBytes {
					calls[k].Arguments = fmt.Sprintf(`{"agentmcp_note":"arguments (%d bytes) dropped to keep the turn within its bound"}`, n)
				}
			}
			m.ToolCalls = calls
		}
		total += messageSize(*m) - before
	}
	return msgs
}

func turnSize(msgs []ports.Message) int {
	n := 0
	for _, m := range msgs {
		n += messageSize(m)
	}
	return n
}

// turn is one submission's loop.
type turn struct {
	s      *Session
	ctx    context.Context
	caller ports.Caller
	report *reporter
	msgs   []ports.Message // this turn's messages: the prompt first
	steps  int
	calls  int
	// dropped counts the calls beyond MaxToolCallsPerStep.
	dropped int
	// usage sums the steps' token counts, when the endpoint reports them.
	usage *ports.TokenUsage
	// unanswered names the tool whose prompt went unanswered for
	// ApprovalTimeout; the turn stops after that call.
	unanswered atomic.Pointer[string]
}

// run loops model steps and tool calls until the model answers without
// tool calls, and returns that answer.
func (t *turn) run(history []ports.Message) (string, error) {
	for {
		if err := t.ctx.Err(); err != nil {
			return "", err
		}
		if t.steps == t.s.opts.MaxSteps {
			answer := fmt.Sprintf("[agentmcp] This turn stopped after %d model steps without a final answer (the step limit). Submit another prompt to continue.", t.steps)
			t.msgs = append(t.msgs, ports.Message{Role: ports.RoleAssistant, Content: answer})
			return answer, nil
		}
		t.steps++
		tools, err := t.s.inner.RuntimeTools(t.ctx)
		if err != nil {
			return "", fmt.Errorf("the session's tools are unavailable: %w", err)
		}
		system := t.s.opts.SystemPrompt
		if system == "" {
			system = DefaultSystemPrompt(t.s.opts.Workspace, tools)
		}
		msgs := make([]ports.Message, 0, 1+len(history)+len(t.msgs))
		msgs = append(msgs, ports.Message{Role: ports.RoleSystem, Content: system})
		msgs = append(append(msgs, history...), t.msgs...)

		reply, err := t.step(msgs, tools)
		if errors.Is(err, ports.ErrNoChoices) && t.ctx.Err() == nil {
			t.msgs = append(t.msgs, ports.Message{Role: ports.RoleUser,
				Content: "[agentmcp] The model endpoint returned no answer (no choices). Continue with the task."})
			continue
		}
		if err != nil {
			return "", err
		}
		t.count(reply.Usage)
		// Only the calls that run are kept: the rest (a hostile endpoint
		// can send tens of thousands in one answer) become one note, so
		// what a step keeps does not grow with what the model wrote.
		calls := reply.ToolCalls
		extra := max(len(calls)-t.s.opts.MaxToolCallsPerStep, 0)
		calls = uniqueCallIDs(calls[:len(calls)-extra], t.steps)
		reply.ToolCalls = nil // the dropped calls are garbage from here on
		t.msgs = append(t.msgs, ports.Message{Role: ports.RoleAssistant, Content: reply.Content, ToolCalls: calls})
		if len(calls) == 0 {
			if reply.Content == "" {
				// Chat Completions needs text or tool calls on an assistant
				// message; the response itself stays "".
				t.msgs[len(t.msgs)-1].Content = "(no answer)"
			}
			return reply.Content, nil
		}
		for _, call := range calls {
			result := t.runTool(call, tools)
			if err := t.ctx.Err(); err != nil {
				return "", err
			}
			t.msgs = append(t.msgs, ports.Message{Role: ports.RoleTool, ToolCallID: call.ID, Content: capText(result, t.s.opts.MaxToolResultBytes)})
		}
		if extra > 0 {
			t.dropped += extra
			t.msgs = append(t.msgs, ports.Message{Role: ports.RoleUser, Content: fmt.Sprintf(
				"[agentmcp] %d more tool calls of that step were not run: at most %d run per model step. Call again, in the next step, those you still need.",
				extra, t.s.opts.MaxToolCallsPerStep)})
		}
		if tool := t.unanswered.Load(); tool != nil {
			answer := fmt.Sprintf("[agentmcp] This turn stopped: a prompt of %s went unanswered for %v, so it was denied. Submit another prompt to continue.", *tool, t.s.opts.ApprovalTimeout)
			t.msgs = append(t.msgs, ports.Message{Role: ports.RoleAssistant, Content: answer})
			return answer, nil
		}
		t.msgs = shrinkTurn(t.msgs, t.s.opts.TurnBytes)
	}
}

// count adds a step's token usage to the turn's.
func (t *turn) count(u *ports.TokenUsage) {
	if u == nil {
		return
	}
	if t.usage == nil {
		t.usage = &ports.TokenUsage{}
	}
	t.usage.InputTokens += u.InputTokens
	t.usage.OutputTokens += u.OutputTokens
}

// step runs one model request with progress: a report when it starts and
// a heartbeat while it runs.
func (t *turn) step(msgs []ports.Message, tools []domain.Tool) (ports.AssistantMessage, error) {
	t.report.send(fmt.Sprintf("model step %d", t.steps))
	var chars atomic.Int64
	var live liveText
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(t.s.opts.Heartbeat)
		defer tick.Stop()
		text := time.NewTicker(t.s.opts.TextInterval)
		defer text.Stop()
		started := time.Now()
		for {
			select {
			case <-tick.C:
				t.report.send(fmt.Sprintf("model step %d: working for %ds, %d characters so far", t.steps,
					int(time.Since(started).Seconds()), chars.Load()))
			case <-text.C:
				if tail, ok := live.take(); ok && strings.TrimSpace(tail) != "" {
					t.report.send(progressText(fmt.Sprintf("model step %d: ", t.steps), tail))
				}
			case <-stop:
				return
			case <-t.ctx.Done():
				return
			}
		}
	}()
	start := time.Now()
	reply, err := t.s.model.Step(t.ctx, ports.ModelRequest{
		Messages: msgs,
		Tools:    tools,
		OnText: func(delta string) {
			chars.Add(int64(utf8.RuneCountInString(delta)))
			live.add(delta)
		},
	})
	close(stop)
	<-done
	t.s.log.Debug("model step", "step", t.steps, "messages", len(msgs), "toolCalls", len(reply.ToolCalls),
		"finishReason", reply.FinishReason, "durationMs", time.Since(start).Milliseconds(), "ok", err == nil)
	return reply, err
}

// liveText is the newest streamed text of a model step, for progress: the
// stream's goroutine adds to it, the step's reporter takes it when it is
// new.
type liveText struct {
	mu    sync.Mutex
	tail  string // the end of the text, at most liveTextBytes
	fresh bool   // text came since the last take
}

// liveTextBytes is how much of the text's end is kept: enough for
// MaxProgressText characters after whitespace is folded.
const liveTextBytes = 4 * 4 * MaxProgressText

func (l *liveText) add(delta string) {
	if delta == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tail += delta
	if len(l.tail) > liveTextBytes {
		cut := len(l.tail) - liveTextBytes
		for cut < len(l.tail) && !utf8.RuneStart(l.tail[cut]) {
			cut++
		}
		l.tail = l.tail[cut:]
	}
	l.fresh = true
}

// take returns the text's end when text came since the last take.
func (l *liveText) take() (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fresh := l.fresh
	l.fresh = false
	return l.tail, fresh
}

// progressText is prefix and the end of text as one line of at most
// MaxProgressText characters: whitespace runs (newlines included) become
// one space, and a cut start is marked with "…".
func progressText(prefix, text string) string {
	line := []rune(strings.Join(strings.Fields(text), " "))
	room := MaxProgressText - utf8.RuneCountInString(prefix)
	if len(line) > room {
		line = append([]rune("…"), line[len(line)-room+1:]...)
	}
	return prefix + string(line)
}

// runTool runs one call through the inner session with the turn's Caller
// (its progress relabelled onto the turn's counter) and returns the text
// the model reads: the execution envelope, or a failed one saying what was
// wrong with the call.
func (t *turn) runTool(call ports.ToolCall, tools []domain.Tool) string {
	t.calls++
	known := false
	for _, tool := range tools {
		known = known || tool.Name == call.Name
	}
	if !known {
		return failure(call.Name, domain.UnknownToolMessage(call.Name)+" (the tools are: "+toolNames(tools)+")")
	}
	args := strings.TrimSpace(call.Arguments)
	if args == "" {
		args = "{}"
	}
	if !json.Valid([]byte(args)) || args[0] != '{' {
		return failure(call.Name, "invalid arguments: not a JSON object; write the arguments as one JSON object that follows the tool's input schema")
	}
	t.report.send("calling " + call.Name)
	env, err := t.s.inner.InvokeTool(t.ctx, call.Name, json.RawMessage(args), toolCaller{t.caller, t, call.Name})
	if err != nil {
		return failure(call.Name, domain.ClientMessage(err))
	}
	text, err := domain.MarshalJSON(env)
	if err != nil {
		return failure(call.Name, "the tool's result cannot be encoded")
	}
	return string(text)
}

// failure is a failed envelope's text, as the model reads it.
func failure(tool, msg string) string {
	b, _ := domain.MarshalJSON(domain.Envelope{Success: false, ToolName: tool, Error: msg})
	return string(b)
}

func toolNames(tools []domain.Tool) string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// uniqueCallIDs returns calls with every ID present and distinct: a model
// server that omits or repeats ids would otherwise make the tool messages
// ambiguous and the next request invalid.
func uniqueCallIDs(calls []ports.ToolCall, step int) []ports.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]ports.ToolCall, len(calls))
	seen := map[string]bool{}
	for i, c := range calls {
		if c.ID == "" || seen[c.ID] {
			c.ID = fmt.Sprintf("agentmcp_call_%d_%d", step, i+1)
		}
		seen[c.ID] = true
		out[i] = c
	}
	return out
}

// capText cuts s to at most limit bytes on a UTF-8 boundary, with a note.
func capText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	note := fmt.Sprintf("\n[agentmcp: result cut to %d of %d bytes]", limit, len(s))
	cut := max(limit-len(note), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + note
}

// reporter sends a turn's progress on one strictly increasing counter
// (MCP: progress must increase; the engine drops anything else). The lock
// orders reports from the loop, the heartbeat and the tools; it is the
// turn's own and guards nothing else.
type reporter struct {
	caller ports.Caller
	ctx    context.Context
	mu     sync.Mutex
	n      float64
}

func (r *reporter) send(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	r.caller.Progress(r.ctx, r.n, 0, msg)
}

// toolCaller is the turn's Caller as a tool sees it: the principal passes
// through; prompts pass through bounded by ApprovalTimeout each; progress
// joins the turn's counter, labelled with the tool's name.
type toolCaller struct {
	ports.Caller
	turn *turn
	tool string
}

func (c toolCaller) Progress(_ context.Context, _, _ float64, message string) {
	if message == "" {
		message = "working"
	}
	c.turn.report.send(c.tool + ": " + message)
}

// RequestPermission asks on a ctx bounded by ApprovalTimeout: a prompt no
// one answers (the client walked away) settles closed then, not at the end
// of the turn or of the carrier's round.
func (c toolCaller) RequestPermission(ctx context.Context, p domain.PermissionPrompt) domain.Decision {
	return bounded(ctx, c, "permission", func(ctx context.Context) domain.Decision { return c.Caller.RequestPermission(ctx, p) })
}

// Ask asks on a ctx bounded by ApprovalTimeout, as RequestPermission.
func (c toolCaller) Ask(ctx context.Context, p domain.AskPrompt) domain.Answer {
	return bounded(ctx, c, "question", func(ctx context.Context) domain.Answer { return c.Caller.Ask(ctx, p) })
}

// bounded runs ask on ctx bounded by ApprovalTimeout and notes a prompt
// that ran out of it while the turn itself went on.
func bounded[T any](ctx context.Context, c toolCaller, kind string, ask func(context.Context) T) T {
	actx, cancel := context.WithTimeout(ctx, c.turn.s.opts.ApprovalTimeout)
	defer cancel()
	answer := ask(actx)
	c.settled(ctx, actx, kind)
	return answer
}

// settled notes a prompt that ran out of ApprovalTimeout while the turn
// itself went on: the turn stops after this call.
func (c toolCaller) settled(ctx, actx context.Context, kind string) {
	if ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		tool := c.tool
		c.turn.unanswered.Store(&tool)
		c.turn.s.log.Info("prompt unanswered", "tool", c.tool, "kind", kind, "waitedMs", c.turn.s.opts.ApprovalTimeout.Milliseconds())
	}
}
