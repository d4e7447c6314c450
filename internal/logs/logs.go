// Package logs holds the one logging default every package of agentmcp
// shares: a nil *slog.Logger option means "discard". Standard library only.
package logs

import "log/slog"

// discard is shared: a Logger is safe for concurrent use and holds no state
// of its own beyond its handler.
var discard = slog.New(slog.DiscardHandler)

// OrDiscard returns l, or a Logger that discards every record when l is
// nil: what an Options.Logger left unset means throughout the module.
func OrDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return discard
	}
	return l
}
