package app

import (
	"testing"

	"github.com/agentmcp/agentmcp/adapters/workspace"

	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/ports"
)

// conversationSession is a session that says whether it keeps named
// conversations, as the agent does.
type conversationSession struct {
	ports.Session
	on bool
}

func (c conversationSession) Conversations() bool { return c.on }

// TestServedSessionConversations: what a serve command hands the engine
// says what the session it wraps says about named conversations
// (ports.HasConversations), so the engine can advertise conversation and
// fork_from for serve --model and never for the bare workspace.
func TestServedSessionConversations(t *testing.T) {
	for _, c := range []struct {
		name  string
		inner ports.Session
		want  bool
	}{
		{"the agent", conversationSession{fake.New(), true}, true},
		{"a decorator that says no", conversationSession{fake.New(), false}, false},
		{"a session without the interface", fake.New(), false},
	} {
		if got := ports.HasConversations(&servedSession{Session: c.inner}); got != c.want {
			t.Errorf("%s: HasConversations of the served session = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestResourceURIs: serve remote names files agentmcp://workspace/, so its
// clients never learn the server's paths; every local command file://.
func TestResourceURIs(t *testing.T) {
	for carrier := range approvalCarriers {
		want := workspace.FileURIs
		if carrier == "remote" {
			want = workspace.WorkspaceURIs
		}
		if got := resourceURIs(carrier); got != want {
			t.Errorf("%s: %v, want %v", carrier, got, want)
		}
	}
}
