package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// checkSubmission refuses a submission whose conversation arguments cannot
// be (docs/SPEC.md §9): a name that breaks [domain.CheckConversationName],
// a fork_from without a conversation to start, or one naming that
// conversation itself. What needs the store (the fork's parent, the
// per-principal bound) is history's.
func checkSubmission(sub ports.Submission) error {
	if sub.Conversation != "" {
		if err := domain.CheckConversationName("conversation", sub.Conversation); err != nil {
			return ports.Refused(err.Error())
		}
	}
	if sub.ForkFrom == "" {
		return nil
	}
	if err := domain.CheckConversationName("fork_from", sub.ForkFrom); err != nil {
		return ports.Refused(err.Error())
	}
	switch {
	case sub.Conversation == "":
		return ports.Refused("fork_from needs conversation: name the new conversation the fork starts")
	case sub.Conversation == sub.ForkFrom:
		return ports.Refused(fmt.Sprintf("fork_from %q names the conversation itself: a fork starts a new conversation from another one", sub.ForkFrom))
	}
	return nil
}

// history loads what ref's turn starts from, or refuses: ref's committed
// turns; for a fork, its parent's (ref must not exist, the parent must);
// for a conversation that does not exist yet, nothing, within the
// principal's bound on this root. It returns the options the turn's Append
// uses: the budget, the bound and, for a fork, the parent and the last of
// its turns the fork was shown, so a turn the parent gains meanwhile stays
// the parent's. A store that cannot load fails the turn.
func (s *Session) history(ctx context.Context, ref ports.ConversationRef, forkFrom string) ([]ports.Message, ports.AppendOptions, error) {
	o := ports.AppendOptions{MaxBytes: s.opts.HistoryBytes, ForkFrom: forkFrom, MaxPerPrincipal: s.opts.MaxConversationsPerPrincipal}
	turns, err := s.opts.Store.Load(ctx, ref)
	if err != nil {
		return nil, o, s.storeFailed("loaded", err)
	}
	if forkFrom != "" {
		if len(turns) > 0 {
			return nil, o, ports.Refused(existsMessage(ref.Name))
		}
		if turns, err = s.opts.Store.Load(ctx, ref.Named(forkFrom)); err != nil {
			return nil, o, s.storeFailed("loaded", err)
		}
		if len(turns) == 0 {
			return nil, o, ports.Refused(noParentMessage(forkFrom))
		}
		o.ForkThrough = turns[len(turns)-1].Number
	}
	if len(turns) == 0 || forkFrom != "" {
		max := s.opts.MaxConversationsPerPrincipal
		held, err := s.opts.Store.List(ctx, ports.ConversationFilter{Root: ref.Root, Principal: ref.Principal, Limit: max})
		if err != nil {
			return nil, o, s.storeFailed("loaded", err)
		}
		if len(held) >= max {
			return nil, o, ports.Refused(limitMessage(ref.Name, max))
		}
	}
	var history []ports.Message
	for _, turn := range turns {
		history = append(history, turn.Messages...)
	}
	return history, o, nil
}

// conversationRace is the client's message for an Append the store
// refused because another turn created a conversation after history's
// checks; "" for any other error.
func conversationRace(err error, name, forkFrom string, max int) string {
	switch {
	case errors.Is(err, ports.ErrConversationLimit):
		return limitMessage(name, max)
	case errors.Is(err, ports.ErrConversationExists):
		return existsMessage(name)
	case errors.Is(err, ports.ErrNoConversation):
		return noParentMessage(forkFrom)
	}
	return ""
}

func existsMessage(name string) string {
	return fmt.Sprintf("conversation %q already exists: fork_from starts a new conversation; name one that does not exist, or leave fork_from out to continue %q", name, name)
}

func noParentMessage(forkFrom string) string {
	return fmt.Sprintf("fork_from %q names no conversation of yours on this workspace: a fork copies an existing conversation", forkFrom)
}

func limitMessage(name string, max int) string {
	return fmt.Sprintf("conversation %q would be one more than the %d conversations a principal may hold on this workspace: continue one of them, or have the operator forget some (agentmcp conversations clear)", name, max)
}
