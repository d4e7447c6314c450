package workspace

import (
	"context"

	"github.com/agentmcp/agentmcp/ports"
)

// SetTurn gives s a scripted turn, standing in for the model backend that
// does not exist yet, so the one-turn-at-a-time rules can be exercised.
func SetTurn(s *Session, turn func(ctx context.Context, prompt string, caller ports.Caller) (string, error)) {
	s.turn = turn
}

// SetBeforeOpen makes search_text call f before it opens each directory or
// file (its slash-separated path relative to the root).
func SetBeforeOpen(s *Session, f func(rel string)) { s.hooks.beforeOpen = f }

// SetBeforeMatch makes search_text call f before it matches each line of a
// file (the file's slash-separated path, the line's number from 1).
func SetBeforeMatch(s *Session, f func(rel string, line int)) { s.hooks.beforeMatch = f }
