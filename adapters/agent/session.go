package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// Session is the agent-backed session. It is safe for concurrent use.
type Session struct {
	inner ports.Session
	model ports.Model
	opts  Options
	log   *slog.Logger

	errFull error // the refusal at MaxTurns

	mu      sync.Mutex           // guards running
	running map[convKey]*running // the turns in progress, one per conversation
	ended   ended                // the live state of turns that ended, for the view

	// watchers are the resource subscriptions to conversations
	// (features.go): told when a turn of theirs is stored.
	watchers convWatchers
}

// convKey names a conversation among the running turns: the principal and
// the conversation's name (the root is the session's own).
type convKey struct {
	who  ports.Principal
	name string
}

// running is a turn in progress.
type running struct {
	ctx  context.Context // the turn's: done once it is cancelled or out of time
	done chan struct{}   // closed when the turn has ended
	live *liveTurn       // what the view shows of it (docs/SPEC.md §2 "The turn view")

	// prompts counts the prompts of its tools waiting for an answer: a
	// turn waiting on one is superseded by a new submission of its
	// conversation, a computing one is not.
	prompts atomic.Int32
	// superseded is done once a new submission superseded the turn: its
	// prompts settle closed and it stops after the tool call at hand.
	superseded context.Context
	supersede  context.CancelFunc
}

func newRunning(ctx context.Context) *running {
	r := &running{ctx: ctx, done: make(chan struct{})}
	r.superseded, r.supersede = context.WithCancel(context.Background())
	return r
}

// awaitEnd waits for r to end, up to WindDown or until ctx ends, when it is
// ending (its ctx done, or superseded) or starts ending within
// CancelGrace; it reports whether r ended.
func awaitEnd(ctx context.Context, r *running) bool {
	if r.ctx.Err() == nil && r.superseded.Err() == nil {
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

var (
	_ ports.Session             = (*Session)(nil)
	_ ports.ConversationSession = (*Session)(nil)
	_ ports.ServerFeatures      = (*Session)(nil)
)

// New returns a session whose tools are inner's and whose submissions run
// as turns of model over them. inner and model are required.
func New(inner ports.Session, model ports.Model, opts Options) (*Session, error) {
	if inner == nil || model == nil {
		return nil, errors.New("agent: an inner session and a model are required")
	}
	opts = opts.withDefaults()
	busy := fmt.Sprintf("%d turns are running", opts.MaxTurns)
	if opts.MaxTurns == 1 {
		busy = "1 turn is running"
	}
	return &Session{inner: inner, model: model, opts: opts, log: opts.Logger,
		errFull: ports.Refused("session is busy: " + busy + ", the most it runs at once; retry when one finishes"),
		running: map[convKey]*running{}}, nil
}

// Conversations reports true: Submit keeps named conversations and forks
// and reports each turn ([ports.ConversationSession]), whatever the inner
// session does.
func (s *Session) Conversations() bool { return true }

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

// Submit runs sub.Prompt as one turn of the caller's conversation
// sub.Conversation (the default one when ""), forked from sub.ForkFrom when
// set, and returns the model's final answer with the turn's report.
// Refusals ([ErrBusy], a ctx that ended first, a conversation name that
// breaks [domain.CheckConversationName], a fork that cannot be, one
// conversation past [Options.MaxConversationsPerPrincipal]) wrap
// [ports.ErrRefused] and leave the store as it was; a failure inside the
// turn (the model endpoint, a timeout, cancellation, the conversation
// store) is any other error, with a client-visible first line that names
// the cause.
func (s *Session) Submit(ctx context.Context, sub ports.Submission, caller ports.Caller) (ports.TurnResult, error) {
	if caller == nil {
		caller = ports.ClosedCaller{}
	}
	if err := checkSubmission(sub); err != nil {
		s.log.Info("submission refused", "reason", "conversation")
		return ports.TurnResult{}, err
	}
	who := caller.Principal()
	key := convKey{who, sub.Conversation}
	if key.name == "" {
		key.name = domain.DefaultConversation
	}
	tctx, cancel := context.WithTimeout(ctx, s.opts.TurnTimeout)
	defer cancel()
	me := newRunning(tctx)
	me.live = newLiveTurn(key.name, sub.Prompt, time.Now())
	defer me.supersede()
	if err := s.begin(ctx, key, me); err != nil {
		return ports.TurnResult{}, err
	}
	// The turn stops counting as running before its end is logged, so a
	// submission made once "turn finished" or "turn failed" is logged is
	// never refused as busy by it.
	ref := ports.RefOf(s.opts.Root, who).Named(key.name)
	unhold := func() {}
	release := sync.OnceFunc(func() {
		unhold() // first: a turn this one superseded starts once done closes
		me.live.settle()
		s.ended.put(key, me.live) // before it leaves running: a read always finds it
		s.mu.Lock()
		delete(s.running, key)
		s.mu.Unlock()
		close(me.done)
	})
	defer release()
	if l, ok := s.opts.Store.(ports.ConversationLocker); ok {
		held, ok, err := l.HoldTurn(tctx, ref)
		switch {
		case err != nil:
			me.live.end(ports.TurnResult{}, err, false)
			release()
			s.log.Info("turn failed", "err", logCause(err))
			return ports.TurnResult{}, s.storeFailed("claimed", err)
		case !ok:
			me.live.end(ports.TurnResult{}, ErrBusyElsewhere, false)
			release()
			s.log.Info("submission refused", "reason", "conversation busy on another replica")
			return ports.TurnResult{}, ErrBusyElsewhere
		}
		unhold = held
	}

	history, appendOpts, err := s.history(tctx, ref, sub.ForkFrom)
	if err != nil {
		me.live.end(ports.TurnResult{}, err, false)
		release()
		if errors.Is(err, ports.ErrRefused) {
			s.log.Info("submission refused", "reason", "conversation")
		} else {
			s.log.Info("turn failed", "err", logCause(err))
		}
		return ports.TurnResult{}, err
	}

	desc := s.model.Describe()
	octx, endTurn := s.opts.Observer.StartTurn(tctx, ports.ObservedTurn{Agent: AgentName, Model: desc.Model, Provider: Provider})
	t := &turn{
		s:      s,
		ctx:    octx,
		caller: caller,
		r:      me,
		report: &reporter{caller: caller, ctx: tctx},
		msgs:   []ports.Message{{Role: ports.RoleUser, Content: sub.Prompt}},
	}
	start := time.Now()
	result, err := s.runTurn(t, ref, history, appendOpts)
	endTurn(ports.TurnEnd{Steps: t.steps, ToolCalls: t.calls, ErrorType: turnErrorType(ctx, tctx, err)})
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
		me.live.end(ports.TurnResult{}, err, ctx.Err() != nil)
		release()
		s.log.Info("turn failed", append(attrs, "err", cause)...)
		return ports.TurnResult{}, err
	}
	if stop := t.stop.Load(); stop != nil {
		attrs = append(attrs, "stopped", string(stop.reason))
	}
	me.live.end(result, nil, false)
	release()
	s.log.Info("turn finished", attrs...)
	return result, nil
}

// begin registers me as key's running turn. A turn of the same
// conversation that is waiting on a prompt is superseded and waited for;
// one that is already ending (cancelled, out of time) is waited for, up to
// WindDown; a computing one refuses with [ErrBusy]; MaxTurns running
// refuses with the count. A ctx that ends first refuses as not started.
func (s *Session) begin(ctx context.Context, key convKey, me *running) error {
	for {
		if ctx.Err() != nil {
			return errNotStarted
		}
		s.mu.Lock()
		r, n := s.running[key], len(s.running)
		if r == nil && n < s.opts.MaxTurns {
			s.running[key] = me
		}
		s.mu.Unlock()
		switch {
		case r == nil && n < s.opts.MaxTurns:
			return nil
		case r == nil:
			s.log.Info("submission refused", "reason", "turn bound", "running", n)
			return s.errFull
		case r.prompts.Load() > 0 && r.ctx.Err() == nil && r.superseded.Err() == nil:
			s.log.Info("turn superseded", "reason", "a new submission while a prompt waited")
			r.supersede()
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

// runTurn runs t on history and, when it ends with a response, appends
// what the conversation keeps of it to ref in one transaction, with o
// (history's: the budget, the bound, the fork): its changes' diffs,
// bounded to MaxTurnDiffBytes and half of HistoryBytes, and its messages
// bounded once by boundTurn to the rest of HistoryBytes, their size
// counted by messageSize and diffSize, so the store's budget and the
// history's are one. A store that cannot keep the turn fails it (a full
// disk: [ports.ErrStoreFull]); the session keeps serving.
func (s *Session) runTurn(t *turn, ref ports.ConversationRef, history []ports.Message, o ports.AppendOptions) (ports.TurnResult, error) {
	response, err := t.run(history)
	if err != nil {
		return ports.TurnResult{}, err
	}
	diffs, changed := t.changes.diffs(min(MaxTurnDiffBytes, s.opts.HistoryBytes/2))
	dbytes := diffSize(diffs)
	kept := boundTurn(t.msgs, s.opts.HistoryBytes-dbytes)
	number, err := s.opts.Store.Append(t.ctx, ref, ports.Turn{Messages: kept, Changes: diffs, Bytes: turnSize(kept) + dbytes}, o)
	if err != nil {
		if msg := conversationRace(err, ref.Name, o.ForkFrom, o.MaxPerPrincipal); msg != "" {
			return ports.TurnResult{}, errors.New(msg)
		}
		return ports.TurnResult{}, s.storeFailed("kept", err)
	}
	s.watchers.updated(ref) // its resource changed: one more turn
	report := &ports.TurnReport{Conversation: ref.Name, Turn: number, ChangedFiles: changed, ToolCalls: t.toolCalls}
	if report.ToolCalls == nil {
		report.ToolCalls = []ports.ToolCallReport{}
	}
	if t.usage != nil {
		report.Usage = *t.usage
	}
	if stop := t.stop.Load(); stop != nil {
		report.Stopped = stop.reason
	}
	return ports.TurnResult{Response: response, Report: report}, nil
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
