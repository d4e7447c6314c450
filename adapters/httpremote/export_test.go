package httpremote

import (
	"time"

	"github.com/agentmcp/agentmcp/engine"
)

// Limits overrides docs/SPEC.md §5.3's numbers for a test; a zero field keeps its
// default.
type Limits struct {
	MaxInFlight, MaxConns, MaxConnsPerClient, MaxVerifying, MaxCached int
	ThrottleClients                                                   int
	CacheTTL, StopTimeout, IdleTimeout                                time.Duration
	WriteStallTimeout, BodyReadTimeout, IdleGrace                     time.Duration
	// Now replaces the throttle's and the cache's clock.
	Now           func() time.Time
	OnAcceptWait  func()
	OnConnRefused func()
	OnConnEvicted func()
}

// NewWithLimits is New with some limits overridden.
func NewWithLimits(eng *engine.Engine, opts Options, o Limits) (*Host, error) {
	l := defaultLimits()
	setInt := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	l.framing.MaxInFlight = o.MaxInFlight
	setInt(&l.server.Conns.Total, o.MaxConns)
	setInt(&l.server.Conns.PerClient, o.MaxConnsPerClient)
	setInt(&l.maxVerifying, o.MaxVerifying)
	setInt(&l.maxCached, o.MaxCached)
	setInt(&l.throttleClients, o.ThrottleClients)
	if o.CacheTTL != 0 {
		l.cacheTTL = o.CacheTTL
	}
	l.server.StopTimeout, l.server.IdleTimeout = o.StopTimeout, o.IdleTimeout
	if o.Now != nil {
		l.now = o.Now
	}
	l.server.Conns.OnWait, l.server.Conns.OnRefuse, l.server.Conns.OnEvict = o.OnAcceptWait, o.OnConnRefused, o.OnConnEvicted
	l.server.Conns.IdleGrace = o.IdleGrace
	l.framing.WriteStallTimeout, l.framing.BodyReadTimeout = o.WriteStallTimeout, o.BodyReadTimeout
	return newHost(eng, opts, l)
}

// ThrottledClients returns how many clients the throttle table tracks.
func (h *Host) ThrottledClients() int { return h.door.throttle.len() }

// NewAdmissionWithClock is NewAdmission with the throttle's and the
// cache's clock replaced.
func NewAdmissionWithClock(a Authorization, now func() time.Time) (*Admission, error) {
	l := defaultLimits()
	l.now = now
	return newAdmission(a, nil, l)
}
