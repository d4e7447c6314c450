package httploopback

import (
	"time"

	"github.com/agentmcp/agentmcp/adapters/streamable"
	"github.com/agentmcp/agentmcp/engine"
)

// Limits overrides docs/SPEC.md §5.2's numbers for a test; a zero field keeps its
// default.
type Limits struct {
	MaxInFlight, MaxConns, MaxHeaderBytes int
	MaxBodyBytes                          int64
	ReadHeaderTimeout, BodyReadTimeout    time.Duration
	IdleTimeout, SSEAfter, KeepAlive      time.Duration
	UnreadBodyGrace, StopTimeout          time.Duration
	WriteStallTimeout, IdleGrace          time.Duration
	OnAcceptWait, OnConnEvicted           func()
}

// NewWithLimits is New with some limits overridden.
func NewWithLimits(eng *engine.Engine, opts Options, o Limits) (*Host, error) {
	l := defaultLimits()
	l.framing = streamable.Options{
		MaxBodyBytes: o.MaxBodyBytes, MaxInFlight: o.MaxInFlight,
		SSEAfter: o.SSEAfter, KeepAlive: o.KeepAlive,
		BodyReadTimeout: o.BodyReadTimeout, UnreadBodyGrace: o.UnreadBodyGrace,
		WriteStallTimeout: o.WriteStallTimeout,
	}
	s := &l.server
	if o.MaxConns != 0 {
		s.Conns.Total = o.MaxConns
	}
	if o.MaxHeaderBytes != 0 {
		s.MaxHeaderBytes = o.MaxHeaderBytes
	}
	s.ReadHeaderTimeout, s.IdleTimeout, s.StopTimeout = o.ReadHeaderTimeout, o.IdleTimeout, o.StopTimeout
	s.Conns.OnWait, s.Conns.OnEvict, s.Conns.IdleGrace = o.OnAcceptWait, o.OnConnEvicted, o.IdleGrace
	return newHost(eng, opts, l)
}
