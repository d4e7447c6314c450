package httpremote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/adapters/engine"
	"github.com/agentmcp/agentmcp/adapters/streamable"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// DefaultHost is the address bound when Options.Host is empty: a
// TLS-terminating proxy on the same machine forwards to it.
const DefaultHost = "127.0.0.1"

// Options configures a Host.
type Options struct {
	// Name and Version are the serverInfo reported to clients.
	Name, Version string
	// Session is the session served; required.
	Session ports.Session
	// Authorization makes the host an OAuth protected resource; required
	// (there is no open mode).
	Authorization Authorization
	// Host is the literal IP address to bind (IPv4 or IPv6, no name);
	// empty means 127.0.0.1. Any literal is allowed, 0.0.0.0 and :: included;
	// the host never speaks TLS, so a non-loopback address needs TLS
	// terminated in front of it all the same. Not a literal: ErrHost.
	Host string
	// Port is the TCP port to bind; 0 picks a free one. Outside 0..65535:
	// ErrPort.
	Port int
	// SubmitTool names the submission tool; zero means agent_submit.
	SubmitTool domain.SubmitTool
	// AskClient lets prompts raised by a client's own call reach that client
	// (SPEC §6): input-required rounds for modern clients, bound to the
	// client's principal; a legacy client over HTTP is never asked. Off by
	// default. Turn it on only when you trust every principal the verifier
	// admits to approve the session's tool calls.
	AskClient bool
	// RoundLifetime bounds a parked input-required round; zero means 30 min.
	RoundLifetime time.Duration
	// Logger receives operational logs: never a token, a claim value, a
	// client address, arguments or answers (net/http's own debug-level
	// record of a handler panic names the peer); nil discards.
	Logger *slog.Logger
}

// Authorization is what makes the host an OAuth 2.0 protected resource.
// PublicURL, Issuer and Scopes must be the values the Verifier was built
// with: the host compares them with Verifier.Describe() (app's factory
// builds both from one set of values).
type Authorization struct {
	// PublicURL is the https URL clients use: the resource identifier (RFC
	// 9728 §1.2, RFC 8707) and the audience tokens must name. It must be
	// absolute and canonical — lower-case host, no default port, no
	// trailing slash unless the path is "/", no credentials, query or
	// fragment, a clean path (see New) — else ErrPublicURL.
	PublicURL string
	// Issuer is the authorization server's issuer identifier, advertised
	// in the metadata; an absolute https URL, else ErrIssuer.
	Issuer string
	// Scopes are the scopes a token must carry, advertised in the metadata
	// and quoted in the insufficient_scope challenge; at least one, each an
	// RFC 6749 §3.3 scope token (printable ASCII without space, '"' or '\'),
	// else ErrScopes.
	Scopes []string
	// Verifier decides every bearer token; required, and its Describe()
	// must name Issuer, PublicURL and Scopes (as a set), else ErrVerifier.
	Verifier ports.AccessTokenVerifier
	// TrustedProxies are the literal IP addresses whose X-Forwarded-For is
	// believed (see the package documentation); else ErrTrustedProxy.
	TrustedProxies []string
	// Audit receives one record per refused request; nil discards them.
	Audit ports.AuditSink
}

// Errors of New, Start and Stop. New's errors wrap one of the first seven.
var (
	ErrHost           = errors.New("httpremote: Host must be a literal IP address")
	ErrPort           = errors.New("httpremote: Port must be within 0..65535")
	ErrPublicURL      = errors.New("httpremote: PublicURL must be an absolute https URL in canonical form")
	ErrIssuer         = errors.New("httpremote: Issuer must be an absolute https URL")
	ErrScopes         = errors.New("httpremote: Scopes must hold at least one RFC 6749 scope token, and only such tokens")
	ErrTrustedProxy   = errors.New("httpremote: a trusted proxy must be a literal IP address")
	ErrVerifier       = errors.New("httpremote: Verifier must be set and describe the same issuer, resource and scopes")
	ErrAlreadyStarted = errors.New("httpremote: already started")
	ErrStopped        = errors.New("httpremote: stopped")
	ErrStopTimeout    = errors.New("httpremote: calls still running when the stop timeout ended")
)

// limits are SPEC §5.3's numbers; tests change them (export_test.go).
type limits struct {
	maxInFlight       int
	maxConns          int
	maxConnsPerClient int
	maxHeaderBytes    int
	maxBodyBytes      int64
	maxVerifying      int
	maxCached         int
	cacheTTL          time.Duration
	throttleBurst     int
	throttlePerMinute int
	throttleClients   int
	readHeaderTimeout time.Duration
	bodyReadTimeout   time.Duration
	idleTimeout       time.Duration
	sseAfter          time.Duration
	keepAlive         time.Duration
	stopTimeout       time.Duration
	now               func() time.Time // the throttle's and the cache's clock
	onAcceptWait      func()           // tests: Accept waits for a free connection slot
	onConnRefused     func()           // tests: a connection over its client's cap was closed
}

func defaultLimits() limits {
	return limits{
		maxInFlight:       streamable.DefaultMaxInFlight,
		maxConns:          256,
		maxConnsPerClient: 16,
		maxHeaderBytes:    16 << 10,
		maxBodyBytes:      streamable.DefaultMaxBodyBytes,
		maxVerifying:      64,
		maxCached:         MaxCachedVerdicts,
		cacheTTL:          VerdictCacheTTL,
		throttleBurst:     ThrottleBurst,
		throttlePerMinute: ThrottlePerMinute,
		throttleClients:   MaxThrottledClients,
		readHeaderTimeout: 5 * time.Second,
		bodyReadTimeout:   streamable.DefaultBodyReadTimeout,
		idleTimeout:       60 * time.Second,
		sseAfter:          streamable.DefaultSSEAfter,
		keepAlive:         streamable.DefaultKeepAlive,
		stopTimeout:       5 * time.Second,
		now:               time.Now,
	}
}

type state int

const (
	idle state = iota
	starting
	started
	stopped
)

// Host is the remote Streamable HTTP host. Its methods are safe for
// concurrent use.
type Host struct {
	bind    netip.Addr
	port    int // as configured; 0 = pick
	eng     *engine.Engine
	logger  *slog.Logger
	limits  limits
	door    *frontDoor // without next until Start
	proxies proxySet

	// base is every request's parent context; Stop cancels it with cause
	// engine.ErrShuttingDown, which cancels the calls in flight.
	base       context.Context
	cancelBase context.CancelCauseFunc
	// stopSignal ends when Stop is first called; it cancels a pending
	// Start's catalog validation.
	stopSignal context.Context
	signalStop context.CancelFunc
	stopOnce   sync.Once

	conns     sync.WaitGroup // open connections, from StateNew to StateClosed
	serveDone chan struct{}  // closed when http.Server.Serve has returned

	mu    sync.Mutex // guards state, srv, err
	state state
	srv   *http.Server
	err   error         // what Wait returns; set before done closes
	done  chan struct{} // closed once the host has stopped (or failed to start)
	once  sync.Once     // closes done
}

// New returns a host for opts. It binds nothing ([Host.Start] does) and
// fails, in this order, with an error wrapping ErrHost, ErrPort,
// ErrPublicURL, ErrIssuer, ErrScopes, ErrTrustedProxy or ErrVerifier (see
// [Options] and [Authorization]), then for a nil Session, then with
// [domain.ErrInvalidSubmitName]. Error texts never quote a URL that was
// (it might carry credentials); they may quote the refused bind address,
// scope or trusted proxy, and the scopes the verifier requires.
func New(opts Options) (*Host, error) {
	return newHost(opts, defaultLimits())
}

func newHost(opts Options, l limits) (*Host, error) {
	bindText := opts.Host
	if bindText == "" {
		bindText = DefaultHost
	}
	bind, err := netip.ParseAddr(bindText)
	if err != nil {
		return nil, fmt.Errorf("%w (got %q)", ErrHost, opts.Host)
	}
	if opts.Port < 0 || opts.Port > 65535 {
		return nil, fmt.Errorf("%w (got %d)", ErrPort, opts.Port)
	}
	a := opts.Authorization
	res, why := parsePublicURL(a.PublicURL)
	if why != "" {
		return nil, fmt.Errorf("%w (%s)", ErrPublicURL, why)
	}
	if !validIssuer(a.Issuer) {
		return nil, ErrIssuer
	}
	if len(a.Scopes) == 0 {
		return nil, fmt.Errorf("%w (got none)", ErrScopes)
	}
	for _, s := range a.Scopes {
		if !validScope(s) {
			return nil, fmt.Errorf("%w (got %q)", ErrScopes, s)
		}
	}
	proxies := make(proxySet, len(a.TrustedProxies))
	for _, p := range a.TrustedProxies {
		addr, ok := parseAddr(p)
		if !ok {
			return nil, fmt.Errorf("%w (got %q)", ErrTrustedProxy, p)
		}
		proxies[addr] = true
	}
	if a.Verifier == nil {
		return nil, fmt.Errorf("%w (it is nil)", ErrVerifier)
	}
	d := a.Verifier.Describe()
	switch {
	case d.Issuer != a.Issuer:
		return nil, fmt.Errorf("%w (it checks another issuer)", ErrVerifier)
	case d.Resource != a.PublicURL:
		return nil, fmt.Errorf("%w (it checks another resource)", ErrVerifier)
	case !sameScopes(d.Scopes, a.Scopes):
		return nil, fmt.Errorf("%w (it requires scopes %q)", ErrVerifier, d.Scopes)
	}
	if opts.Session == nil {
		return nil, errors.New("httpremote: nil Session")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	eng, err := engine.New(opts.Session, engine.Options{
		Name: opts.Name, Version: opts.Version, SubmitTool: opts.SubmitTool,
		AskClient: opts.AskClient, RoundLifetime: opts.RoundLifetime, Logger: logger,
	})
	if err != nil {
		return nil, fmt.Errorf("httpremote: %w", err)
	}
	audit := a.Audit
	if audit == nil {
		audit = discardAudit{}
	}
	door := &frontDoor{
		res:            res,
		metadata:       metadataDocument(a.PublicURL, a.Issuer, a.Scopes),
		challenges:     newChallenges(res.metadataURL, a.Scopes),
		maxHeaderBytes: l.maxHeaderBytes,
		verifier:       a.Verifier,
		proxies:        proxies,
		throttle:       newThrottle(l.throttlePerMinute, l.throttleBurst, l.throttleClients),
		cache:          newVerdictCache(l.maxCached, l.cacheTTL),
		verifying:      make(chan struct{}, l.maxVerifying),
		audit:          audit,
		now:            l.now,
		logger:         logger,
	}
	if r, ok := a.Verifier.(ports.KeyRefreshReporter); ok {
		door.refresh = r
	}
	base, cancelBase := context.WithCancelCause(context.Background())
	stopSignal, signalStop := context.WithCancel(context.Background())
	return &Host{
		bind:       bind,
		port:       opts.Port,
		eng:        eng,
		logger:     logger,
		limits:     l,
		door:       door,
		proxies:    proxies,
		base:       base,
		cancelBase: cancelBase,
		stopSignal: stopSignal,
		signalStop: signalStop,
		serveDone:  make(chan struct{}),
		done:       make(chan struct{}),
	}, nil
}

type discardAudit struct{}

func (discardAudit) Audit(ports.AuditRecord) {}

// String describes the host by its public URL.
func (h *Host) String() string { return "httpremote.Host(" + h.door.res.publicURL + ")" }

// Start validates the session's catalog (SPEC §2: a violation fails start-up
// before any port is bound), then listens on Host:Port and serves. It
// returns the bound address (with the port chosen when Port was 0) once
// connections are accepted. It fails with ErrAlreadyStarted (a second
// Start), ErrStopped (Stop came first, or won against this Start: then
// nothing was bound), the catalog's error, ctx's error, or the listen error
// (address in use). A failed Start ends the host.
func (h *Host) Start(ctx context.Context) (netip.AddrPort, error) {
	h.mu.Lock()
	switch h.state {
	case starting, started:
		h.mu.Unlock()
		return netip.AddrPort{}, ErrAlreadyStarted
	case stopped:
		h.mu.Unlock()
		return netip.AddrPort{}, ErrStopped
	}
	h.state = starting
	h.mu.Unlock()

	if err := h.validate(ctx); err != nil {
		h.startFailed(err)
		return netip.AddrPort{}, err
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	// Stop takes this lock to mark the host stopped: either it did so
	// before this point and nothing is bound, or it will find h.srv.
	if h.state == stopped {
		return netip.AddrPort{}, ErrStopped
	}
	network := "tcp4"
	if h.bind.Is6() {
		network = "tcp6"
	}
	ln, err := net.Listen(network, net.JoinHostPort(h.bind.String(), strconv.Itoa(h.port)))
	if err != nil {
		err = fmt.Errorf("httpremote: %w", err)
		h.state = stopped
		h.finish(err)
		return netip.AddrPort{}, err
	}
	bound := ln.Addr().(*net.TCPAddr).AddrPort()
	l := h.limits
	h.door.next = streamable.NewHandler(h.eng, streamable.Options{
		MaxBodyBytes: l.maxBodyBytes, MaxInFlight: l.maxInFlight,
		SSEAfter: l.sseAfter, KeepAlive: l.keepAlive, BodyReadTimeout: l.bodyReadTimeout,
		Logger: h.logger,
	})
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	srv := &http.Server{
		Handler:           h.door,
		Protocols:         protocols,
		ReadHeaderTimeout: l.readHeaderTimeout,
		IdleTimeout:       l.idleTimeout,
		MaxHeaderBytes:    l.maxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return h.base },
		ConnState: func(_ net.Conn, s http.ConnState) {
			switch s {
			case http.StateNew:
				h.conns.Add(1)
			case http.StateClosed, http.StateHijacked:
				h.conns.Done()
			}
		},
		ErrorLog: slog.NewLogLogger(h.logger.Handler(), slog.LevelDebug),
	}
	h.srv, h.state = srv, started
	lim := newConnLimitListener(ln, l.maxConns, l.maxConnsPerClient, h.proxies)
	lim.onWait, lim.onRefuse = l.onAcceptWait, l.onConnRefused
	go h.serve(srv, lim)
	switch {
	case !h.bind.IsLoopback():
		h.logger.Warn("httpremote: bound to a non-loopback address: the host speaks plain HTTP, so terminate TLS in front of it")
	case len(h.proxies) == 0:
		h.logger.Warn("httpremote: bound to loopback with no trusted proxy: every client behind the proxy shares one throttle budget")
	}
	h.logger.Info("httpremote: serving", "listen", bound.String(), "url", h.door.res.publicURL)
	return bound, nil
}

// validate runs the start-up catalog check, cut short by ctx or Stop.
func (h *Host) validate(ctx context.Context) error {
	vctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(h.stopSignal, func() { cancel(ErrStopped) })
	defer stop()
	err := h.eng.Validate(vctx)
	if cause := context.Cause(vctx); cause != nil {
		if errors.Is(cause, ErrStopped) {
			return ErrStopped
		}
		if err != nil {
			return cause
		}
	}
	if err != nil {
		return fmt.Errorf("httpremote: %w", err)
	}
	return nil
}

func (h *Host) startFailed(err error) {
	h.mu.Lock()
	h.state = stopped
	h.mu.Unlock()
	if errors.Is(err, ErrStopped) {
		err = nil
	}
	h.finish(err)
}

// serve runs the server until it is shut down. Should serving fail on its
// own (the listener broke), the host stops and Wait returns the failure.
func (h *Host) serve(srv *http.Server, ln net.Listener) {
	defer close(h.serveDone)
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return
	}
	h.logger.Error("httpremote: serving failed; stopping", "err", err)
	h.mu.Lock()
	h.err = fmt.Errorf("httpremote: serve: %w", err)
	h.state = stopped
	h.mu.Unlock()
	h.beginStop(srv)
}

// Stop ends the host: it stops accepting, cancels the calls in flight with
// cause [engine.ErrShuttingDown] (a tools/call still answers "server is
// shutting down" to its client, SPEC §3), closes every connection once its
// answer is written, and returns when nothing the host started is left
// running. It returns ErrStopTimeout when that takes longer than 5 s (a
// session ignoring cancellation) or ctx's error when ctx ends first; the
// host keeps shutting down in either case. A Stop during a pending Start
// makes that Start fail with ErrStopped without binding. Stop is safe to
// repeat and to call concurrently; after it returns nil, Wait returns at
// once.
func (h *Host) Stop(ctx context.Context) error {
	h.mu.Lock()
	h.state = stopped
	srv := h.srv
	h.mu.Unlock()
	h.beginStop(srv)
	timer := time.NewTimer(h.limits.stopTimeout)
	defer timer.Stop()
	select {
	case <-h.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return ErrStopTimeout
	}
}

// beginStop starts the shutdown once; srv is nil when nothing was bound.
func (h *Host) beginStop(srv *http.Server) {
	h.stopOnce.Do(func() {
		h.signalStop()
		h.eng.Shutdown()
		h.cancelBase(engine.ErrShuttingDown)
		if srv == nil {
			h.finish(nil)
			return
		}
		go h.shutdown(srv)
	})
}

// shutdown lets the handlers write their shutting-down answers, then closes
// what is left, and waits for every connection goroutine to end.
func (h *Host) shutdown(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), h.limits.stopTimeout*4/5)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		h.logger.Warn("httpremote: requests still running at stop; closing their connections")
		_ = srv.Close()
	}
	<-h.serveDone // after Serve returns, no connection is added
	h.conns.Wait()
	h.mu.Lock()
	err := h.err
	h.mu.Unlock()
	h.finish(err)
}

func (h *Host) finish(err error) {
	h.once.Do(func() {
		h.mu.Lock()
		if h.err == nil {
			h.err = err
		}
		h.mu.Unlock()
		close(h.done)
	})
}

// Wait blocks until the host has stopped: it returns nil after Stop, the
// failure when serving failed on its own or Start failed. Before Start it
// blocks until Start fails or the host is stopped.
func (h *Host) Wait() error {
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}
