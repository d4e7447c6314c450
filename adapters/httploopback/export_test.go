package httploopback

import "time"

// Limits overrides SPEC §5.2's numbers for a test; a zero field keeps its
// default.
type Limits struct {
	MaxInFlight, MaxConns, MaxHeaderBytes int
	MaxBodyBytes                          int64
	ReadHeaderTimeout, BodyReadTimeout    time.Duration
	IdleTimeout, SSEAfter, KeepAlive      time.Duration
	UnreadBodyGrace, StopTimeout          time.Duration
	OnAcceptWait                          func()
}

// NewWithLimits is New with some limits overridden.
func NewWithLimits(opts Options, o Limits) (*Host, error) {
	l := defaultLimits()
	set := func(dst *time.Duration, v time.Duration) {
		if v != 0 {
			*dst = v
		}
	}
	if o.MaxInFlight != 0 {
		l.maxInFlight = o.MaxInFlight
	}
	if o.MaxConns != 0 {
		l.maxConns = o.MaxConns
	}
	if o.MaxHeaderBytes != 0 {
		l.maxHeaderBytes = o.MaxHeaderBytes
	}
	if o.MaxBodyBytes != 0 {
		l.maxBodyBytes = o.MaxBodyBytes
	}
	set(&l.readHeaderTimeout, o.ReadHeaderTimeout)
	set(&l.bodyReadTimeout, o.BodyReadTimeout)
	set(&l.idleTimeout, o.IdleTimeout)
	set(&l.sseAfter, o.SSEAfter)
	set(&l.keepAlive, o.KeepAlive)
	set(&l.unreadBodyGrace, o.UnreadBodyGrace)
	set(&l.stopTimeout, o.StopTimeout)
	l.onAcceptWait = o.OnAcceptWait
	return newHost(opts, l)
}
