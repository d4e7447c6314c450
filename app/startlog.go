package app

import (
	"context"
	"log/slog"
	"sync"
)

// A serve command's start-up log is held until its carrier serves
// (docs/SPEC.md §15): what it logs while it opens the session, the store,
// the sandbox and the token file and binds its listeners — no model,
// approvals off, the token file's path, serving metrics — is written, in
// order and with its own times, just before the line that says what is
// served. A start that fails writes only its error: an error record is
// never held, and the held ones are dropped with the process. So "port
// 8931 is in use" is the one line a person reads, not the last of four.

// maxHeld bounds the records held (a --log-level debug start-up logs
// more); past it they are all written, and the rest pass as they come.
const maxHeld = 256

// startLog is the held part of one command's log.
type startLog struct {
	mu       sync.Mutex
	held     []heldRecord
	released bool
}

type heldRecord struct {
	h slog.Handler // the handler it was logged with (its attributes and group)
	r slog.Record
}

// release writes the held records and lets every later one pass.
func (l *startLog) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flush()
}

// flush writes the held records; l.mu is held.
func (l *startLog) flush() {
	for _, h := range l.held {
		_ = h.h.Handle(context.Background(), h.r)
	}
	l.held, l.released = nil, true
}

// heldHandler is a slog.Handler that holds records below error level in
// its startLog until release.
type heldHandler struct {
	h   slog.Handler
	log *startLog
}

func (h heldHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.h.Enabled(ctx, level)
}

func (h heldHandler) Handle(ctx context.Context, r slog.Record) error {
	h.log.mu.Lock()
	defer h.log.mu.Unlock()
	switch {
	case h.log.released || r.Level >= slog.LevelError:
		return h.h.Handle(ctx, r)
	case len(h.log.held) >= maxHeld:
		h.log.flush()
		return h.h.Handle(ctx, r)
	}
	h.log.held = append(h.log.held, heldRecord{h.h, r.Clone()})
	return nil
}

func (h heldHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return heldHandler{h.h.WithAttrs(attrs), h.log}
}

func (h heldHandler) WithGroup(name string) slog.Handler {
	return heldHandler{h.h.WithGroup(name), h.log}
}
