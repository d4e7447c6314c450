// Package mysession is a host developer's own session, served by agentmcp
// and tested the way agentmcp tests its own: the session contract suite
// (ports/porttest), transcripts replayed over agentmcp's carriers
// (transcript), and a carrier of its own (pipecarrier) run through the
// carrier kit. It imports only agentmcp's exported packages.
package mysession

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// Session keeps a few notes. Its tools: note_get (read-only), note_count
// (reports progress once per step, so a client can cancel it), and
// note_forget (asks permission; forgets the note only when allowed once).
// A submitted prompt's turn answers "noted: PROMPT".
type Session struct {
	mu    sync.Mutex
	notes map[string]string
}

var _ ports.Session = (*Session)(nil)

// New returns a session holding notes (copied).
func New(notes map[string]string) *Session {
	s := &Session{notes: make(map[string]string, len(notes))}
	for k, v := range notes {
		s.notes[k] = v
	}
	return s
}

// Has reports whether the note key is still kept.
func (s *Session) Has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.notes[key]
	return ok
}

func schema(props string) json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":` + props + `,"additionalProperties":false}`)
}

// RuntimeTools implements [ports.Session]: always the same three tools.
func (s *Session) RuntimeTools(context.Context) ([]domain.Tool, error) {
	return []domain.Tool{
		{Name: "note_get", Description: "Read one note", InputSchema: schema(`{"key":{"type":"string"}}`)},
		{Name: "note_count", Description: "Count to n, reporting progress", InputSchema: schema(`{"n":{"type":"integer","minimum":1}}`)},
		{Name: "note_forget", Description: "Forget one note (asks first)", InputSchema: schema(`{"key":{"type":"string"}}`)},
	}, nil
}

// InvokeTool implements [ports.Session].
func (s *Session) InvokeTool(ctx context.Context, name string, arguments json.RawMessage, caller ports.Caller) (domain.Envelope, error) {
	var args struct {
		Key string `json:"key"`
		N   int    `json:"n"`
	}
	if len(arguments) > 0 {
		if err := json.Unmarshal(arguments, &args); err != nil {
			return fail(name, "arguments: "+err.Error()), nil
		}
	}
	switch name {
	case "note_get":
		s.mu.Lock()
		v, ok := s.notes[args.Key]
		s.mu.Unlock()
		if !ok {
			return fail(name, fmt.Sprintf("no note %q", args.Key)), nil
		}
		return ok2(name, map[string]string{"key": args.Key, "text": v}), nil
	case "note_count":
		n := max(args.N, 2)
		for i := 1; i <= n; i++ {
			caller.Progress(ctx, float64(i), float64(n), fmt.Sprintf("step %d", i))
			if err := ctx.Err(); err != nil {
				return domain.Envelope{}, err
			}
		}
		return ok2(name, map[string]int{"counted": n}), nil
	case "note_forget":
		if caller.RequestPermission(ctx, domain.PermissionPrompt{Tool: name, Summary: "forget " + args.Key}) != domain.AllowOnce {
			return fail(name, "permission denied"), nil
		}
		s.mu.Lock()
		delete(s.notes, args.Key)
		s.mu.Unlock()
		return ok2(name, map[string]string{"forgot": args.Key}), nil
	}
	return domain.Envelope{}, errors.New("unknown tool " + name)
}

// Submit implements [ports.Session]: the turn answers at once.
func (s *Session) Submit(ctx context.Context, sub ports.Submission, caller ports.Caller) (ports.TurnResult, error) {
	return ports.TurnResult{Response: "noted: " + sub.Prompt}, nil
}

func ok2(name string, result any) domain.Envelope {
	b, _ := json.Marshal(result)
	return domain.Envelope{Success: true, ToolName: name, Result: b}
}

func fail(name, msg string) domain.Envelope {
	return domain.Envelope{Success: false, ToolName: name, Error: msg}
}
