package agent

import (
	"context"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentmcp/agentmcp/ports"
)

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
