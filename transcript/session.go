package transcript

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/ports"
)

// session is the scripted fake session behind every transcript, with the
// bookkeeping the client directives wait on: how many calls of each name
// started (from the fake's Started channel) and how many returned.
type session struct {
	*fake.Session

	mu      sync.Mutex
	started map[string]int
	ended   map[string]int
	changed chan struct{} // closed and replaced on every change
	release sync.Once

	stop chan struct{}
	done chan struct{}

	// conversations (the conversations: on header) makes the session one
	// that keeps named conversations (ports.ConversationSession): each
	// successful turn is reported, numbered within its conversation.
	conversations bool
	turns         map[string]int // conversation → turns so far; under mu

	// features (the features: on header) are the fixed server features
	// the session serves, its own so that #update reaches only its
	// subscriptions; nil: tools only.
	features *fake.Features
}

var _ ports.ConversationSession = (*session)(nil)

func newSession() *session {
	s := &session{
		turns:   make(map[string]int),
		Session: fake.New(),
		started: make(map[string]int),
		ended:   make(map[string]int),
		changed: make(chan struct{}),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	ch := s.Session.Started() // before serving, as the fake requires
	go func() {
		defer close(s.done)
		for {
			select {
			case name := <-ch:
				s.bump(s.started, name)
			case <-s.stop:
				return
			}
		}
	}()
	return s
}

// close ends the goroutine that drains the fake's Started channel.
func (s *session) close() {
	close(s.stop)
	<-s.done
}

func (s *session) bump(m map[string]int, name string) {
	s.mu.Lock()
	m[name]++
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// count returns the current count for name and a channel closed on the next
// change.
func (s *session) count(ended bool, name string) (int, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ended {
		return s.ended[name], s.changed
	}
	return s.started[name], s.changed
}

func (s *session) InvokeTool(ctx context.Context, name string, args json.RawMessage, caller ports.Caller) (domain.Envelope, error) {
	defer s.bump(s.ended, name)
	return s.Session.InvokeTool(ctx, name, args, caller)
}

func (s *session) Submit(ctx context.Context, sub ports.Submission, caller ports.Caller) (ports.TurnResult, error) {
	defer s.bump(s.ended, "submit")
	turn, err := s.Session.Submit(ctx, sub, caller)
	if err != nil || !s.conversations {
		return turn, err
	}
	name := sub.Conversation
	if name == "" {
		name = domain.DefaultConversation
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.turns[name]; !ok && sub.ForkFrom != "" {
		s.turns[name] = s.turns[sub.ForkFrom] // a fork's turns follow those it copied
	}
	s.turns[name]++
	turn.Report = &ports.TurnReport{Conversation: name, Turn: s.turns[name]}
	return turn, nil
}

// Conversations reports whether the transcript's header made the session
// one that keeps conversations.
func (s *session) Conversations() bool { return s.conversations }

// releaseOnce releases the fake's slow calls; false when already done.
func (s *session) releaseOnce() bool {
	did := false
	s.release.Do(func() { s.Session.Release(); did = true })
	return did
}

// featured is the built-in session with the fixed server features of
// internal/fake (the features: on header).
type featured struct{ *session }

func (f featured) Features() ports.Features { return f.features.Ports() }
