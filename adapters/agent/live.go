package agent

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// The live state of a turn, which the turn view reads through
// agentmcp://conversations/{name}/running (docs/SPEC.md §2 "The turn
// view"): the turn's steps with their streamed text, its tool calls with
// their outcomes, the prompt waiting for an answer with its diff, usage,
// and, once it ended, its response and report. The turn writes it as it
// goes; a read takes a snapshot under the lock. Every text in it is
// bounded, so a read is at most a few hundred KiB whatever the model or a
// tool wrote.

// Bounds of a live turn's texts, in bytes.
const (
	// MaxLiveStepText is how much of each step's streamed text is kept:
	// its end, as a person follows it being written.
	MaxLiveStepText = 4 << 10
	// MaxLiveText bounds the prompt, the response, an error and each
	// argument of the pending prompt (a diff among them): their start.
	MaxLiveText = 64 << 10
	// maxLiveArgs bounds the arguments of the pending prompt shown.
	maxLiveArgs = 16
	// maxEnded is how many ended turns the server keeps for the view,
	// the least recently ended dropped first: one per conversation, so a
	// view opened on a turn that just ended still shows its steps.
	maxEnded = 64
)

// Live states of a turn.
const (
	liveRunning   = "running"
	liveWaiting   = "waiting" // a prompt of one of its tools awaits an answer
	liveFinished  = "finished"
	liveFailed    = "failed"
	liveCancelled = "cancelled"
)

// liveSeq numbers the turns of this process, so a view tells two turns
// of one conversation apart.
var liveSeq atomic.Uint64

// liveTurn is one turn's live state; its methods are safe for concurrent
// use (the stream's text callback, the turn's loop and a read).
type liveTurn struct {
	mu sync.Mutex
	v  liveJSON
}

// liveJSON is the running resource's JSON (application/json), snake_case
// as the turn's structuredContent. A text cut to its bound says from how
// many bytes (*_cut_from).
type liveJSON struct {
	ID            string              `json:"id"`
	Conversation  string              `json:"conversation"`
	State         string              `json:"state"`
	Prompt        string              `json:"prompt"`
	PromptCutFrom int                 `json:"prompt_cut_from,omitempty"`
	StartedAt     string              `json:"started_at"`
	Steps         []liveStep          `json:"steps"`
	Pending       *livePending        `json:"pending,omitempty"`
	ChangedPaths  []string            `json:"changed_paths"`
	Usage         ports.TokenUsage    `json:"usage"`
	Response      *string             `json:"response,omitempty"`
	ResponseCut   int                 `json:"response_cut_from,omitempty"`
	Turn          int                 `json:"turn,omitempty"`
	ChangedFiles  []ports.ChangedFile `json:"changed_files,omitempty"`
	Stopped       ports.StopReason    `json:"stopped,omitempty"`
	Error         string              `json:"error,omitempty"`
}

type liveStep struct {
	Step int `json:"step"`
	// Text is the end of the step's streamed text; TextBytes all of it.
	Text      string     `json:"text"`
	TextBytes int        `json:"text_bytes"`
	ToolCalls []liveCall `json:"tool_calls"`
}

type liveCall struct {
	Name string `json:"name"`
	// State is running, ok or failed.
	State string `json:"state"`
}

// livePending is the prompt of a tool waiting for the person's answer in
// the host's own dialog (the view never answers it).
type livePending struct {
	Tool      string    `json:"tool"`
	Summary   string    `json:"summary"`
	Arguments []liveArg `json:"arguments"`
}

// liveArg is one argument of the pending prompt: a path, a block of lines
// (a diff, a command) or plain text, with its value; content (a file
// write_file would write) shows as its size only, as the dialog does.
type liveArg struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"` // path, lines, text or content
	Value   string `json:"value,omitempty"`
	CutFrom int    `json:"value_cut_from,omitempty"`
	Bytes   int    `json:"bytes,omitempty"`
}

func newLiveTurn(conversation, prompt string, now time.Time) *liveTurn {
	p, cut := headText(prompt, MaxLiveText)
	return &liveTurn{v: liveJSON{
		ID:            "t" + strconv.FormatUint(liveSeq.Add(1), 10),
		Conversation:  conversation,
		State:         liveRunning,
		Prompt:        p,
		PromptCutFrom: cut,
		StartedAt:     now.UTC().Format(time.RFC3339),
		Steps:         []liveStep{},
		ChangedPaths:  []string{},
	}}
}

func (l *liveTurn) update(f func(v *liveJSON)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f(&l.v)
}

// step starts model step n.
func (l *liveTurn) step(n int) {
	l.update(func(v *liveJSON) { v.Steps = append(v.Steps, liveStep{Step: n, ToolCalls: []liveCall{}}) })
}

// text adds a delta of the current step's streamed text, keeping its end.
func (l *liveTurn) text(delta string) {
	l.update(func(v *liveJSON) {
		if len(v.Steps) == 0 {
			return
		}
		s := &v.Steps[len(v.Steps)-1]
		s.TextBytes += len(delta)
		s.Text = tailText(s.Text+delta, MaxLiveStepText)
	})
}

// usage adds a step's token counts.
func (l *liveTurn) usage(u *ports.TokenUsage) {
	if u == nil {
		return
	}
	l.update(func(v *liveJSON) {
		v.Usage.InputTokens += u.InputTokens
		v.Usage.OutputTokens += u.OutputTokens
	})
}

// call starts a tool call of the current step and returns its end.
func (l *liveTurn) call(name string) func(ok bool) {
	var step, i int
	l.update(func(v *liveJSON) {
		if len(v.Steps) == 0 {
			v.Steps = append(v.Steps, liveStep{Step: 1, ToolCalls: []liveCall{}})
		}
		step = len(v.Steps) - 1
		s := &v.Steps[step]
		i = len(s.ToolCalls)
		s.ToolCalls = append(s.ToolCalls, liveCall{Name: reportedName(name), State: liveRunning})
	})
	return func(ok bool) {
		l.update(func(v *liveJSON) {
			v.Steps[step].ToolCalls[i].State = map[bool]string{true: "ok", false: "failed"}[ok]
		})
	}
}

// changed notes a file a tool changed (its diff comes with the report).
func (l *liveTurn) changed(path string) {
	l.update(func(v *liveJSON) {
		for _, p := range v.ChangedPaths {
			if p == path {
				return
			}
		}
		v.ChangedPaths = append(v.ChangedPaths, path)
	})
}

// waiting shows p as the prompt the turn waits on, and returns its end.
func (l *liveTurn) waiting(p domain.PermissionPrompt) func() {
	pend := &livePending{Tool: p.Tool, Summary: p.Summary, Arguments: []liveArg{}}
	pend.Summary, _ = headText(p.Summary, MaxLiveText)
	for _, a := range p.Arguments[:min(len(p.Arguments), maxLiveArgs)] {
		arg := liveArg{Name: a.Name, Kind: "text"}
		switch {
		case a.Contents:
			arg.Kind, arg.Bytes = "content", len(a.Value)
		case a.Path:
			arg.Kind = "path"
		case a.Lines:
			arg.Kind = "lines"
		}
		if arg.Kind != "content" {
			arg.Value, arg.CutFrom = headText(a.Value, MaxLiveText)
		}
		pend.Arguments = append(pend.Arguments, arg)
	}
	l.update(func(v *liveJSON) { v.Pending, v.State = pend, liveWaiting })
	return func() {
		l.update(func(v *liveJSON) {
			if v.Pending == pend {
				v.Pending, v.State = nil, liveRunning
			}
		})
	}
}

// end records how the turn ended: its result, or its error (the message
// the client gets, cut to its bound).
func (l *liveTurn) end(res ports.TurnResult, err error, cancelled bool) {
	l.update(func(v *liveJSON) {
		v.Pending = nil
		switch {
		case err != nil && cancelled:
			v.State, v.Error = liveCancelled, domain.ClientMessage(err)
		case err != nil:
			v.State, v.Error = liveFailed, domain.ClientMessage(err)
		default:
			v.State = liveFinished
			r, cut := headText(res.Response, MaxLiveText)
			v.Response, v.ResponseCut = &r, cut
			if rep := res.Report; rep != nil {
				v.Turn, v.ChangedFiles, v.Stopped, v.Usage = rep.Turn, rep.ChangedFiles, rep.Stopped, rep.Usage
			}
		}
		for i := range v.Steps {
			for j := range v.Steps[i].ToolCalls {
				if c := &v.Steps[i].ToolCalls[j]; c.State == liveRunning {
					c.State = "failed"
				}
			}
		}
	})
}

// settle marks a turn that left without end (a panic unwinding Submit)
// as failed, so no read shows it running for ever.
func (l *liveTurn) settle() {
	l.update(func(v *liveJSON) {
		if v.State == liveRunning || v.State == liveWaiting {
			v.State, v.Pending, v.Error = liveFailed, nil, "the turn ended without a result"
		}
	})
}

// snapshot is the live state's JSON text.
func (l *liveTurn) snapshot() ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return domain.MarshalJSON(l.v)
}

// headText is s cut to at most limit bytes on a UTF-8 boundary, and the
// length it was cut from (0 when whole).
func headText(s string, limit int) (string, int) {
	if len(s) <= limit {
		return s, 0
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], len(s)
}

// tailText is the end of s, at most limit bytes, starting on a UTF-8
// boundary.
func tailText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := len(s) - limit
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return s[cut:]
}

// ended keeps the live state of the turns that ended, one per
// conversation, at most maxEnded.
type ended struct {
	mu    sync.Mutex
	turns map[convKey]*liveTurn
	order []convKey // the least recently ended first
}

func (e *ended) put(k convKey, l *liveTurn) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.turns == nil {
		e.turns = map[convKey]*liveTurn{}
	}
	if _, ok := e.turns[k]; ok {
		for i, o := range e.order {
			if o == k {
				e.order = append(e.order[:i], e.order[i+1:]...)
				break
			}
		}
	}
	e.turns[k] = l
	e.order = append(e.order, k)
	if len(e.order) > maxEnded {
		delete(e.turns, e.order[0])
		e.order = e.order[1:]
	}
}

func (e *ended) get(k convKey) *liveTurn {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.turns[k]
}

// liveOf is the live state the running resource of k shows: its running
// turn's, else the last one that ended since the server started; nil when
// none.
func (s *Session) liveOf(k convKey) *liveTurn {
	s.mu.Lock()
	r := s.running[k]
	s.mu.Unlock()
	if r != nil {
		return r.live
	}
	return s.ended.get(k)
}

// errNoLive is the running resource of a conversation with no turn since
// the server started.
func errNoLive(name string) error {
	return fmt.Errorf("%w: no turn of your conversation %q has run since the server started", ports.ErrResourceNotFound, name)
}
