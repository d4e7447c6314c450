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
	// Instructions is the initialize and server/discover results'
	// instructions (docs/SPEC.md §2); "" leaves it out.
	Instructions string
	// AskClient lets prompts raised by a client's own call reach that client
	// (docs/SPEC.md §6): input-required rounds for modern clients, bound to the
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
// ErrAlreadyStarted, ErrStopped and ErrStopTimeout are the shared host
// lifecycle's ([streamable.ErrStopped] and so on), so errors.Is matches
// either name.
var (
	ErrHost           = errors.New("httpremote: Host must be a literal IP address")
	ErrPort           = errors.New("httpremote: Port must be within 0..65535")
	ErrPublicURL      = errors.New("httpremote: PublicURL must be an absolute https URL in canonical form")
	ErrIssuer         = errors.New("httpremote: Issuer must be an absolute https URL")
	ErrScopes         = errors.New("httpremote: Scopes must hold at least one RFC 6749 scope token, and only such tokens")
	ErrTrustedProxy   = errors.New("httpremote: a trusted proxy must be a literal IP address")
	ErrVerifier       = errors.New("httpremote: Verifier must be set and describe the same issuer, resource and scopes")
	ErrAlreadyStarted = streamable.ErrAlreadyStarted
	ErrStopped        = streamable.ErrStopped
	ErrStopTimeout    = streamable.ErrStopTimeout
)

// docs/SPEC.md §5.3's connection caps.
const (
	maxConns          = 256
	maxConnsPerClient = 16
)

// limits are the numbers tests change (export_test.go); the framing's and
// the server's zero fields mean their docs/SPEC.md §5.2/§5.3 defaults.
type limits struct {
	framing           streamable.Options
	server            streamable.ServerOptions // limits only: newHost sets the rest
	maxVerifying      int
	maxCached         int
	cacheTTL          time.Duration
	throttleBurst     int
	throttlePerMinute int
	throttleClients   int
	now               func() time.Time // the throttle's and the cache's clock
}

func defaultLimits() limits {
	return limits{
		server: streamable.ServerOptions{
			Conns: streamable.ConnLimits{Total: maxConns, PerClient: maxConnsPerClient},
		},
		maxVerifying:      64,
		maxCached:         MaxCachedVerdicts,
		cacheTTL:          VerdictCacheTTL,
		throttleBurst:     ThrottleBurst,
		throttlePerMinute: ThrottlePerMinute,
		throttleClients:   MaxThrottledClients,
		now:               time.Now,
	}
}

// Host is the remote Streamable HTTP host. Its methods are safe for
// concurrent use.
type Host struct {
	bind    netip.Addr
	logger  *slog.Logger
	door    *frontDoor
	proxies proxySet
	srv     *streamable.Server
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
		if !domain.ValidScopeToken(s) {
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
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	audit := a.Audit
	if audit == nil {
		audit = discardAudit{}
	}
	door := &frontDoor{
		res:        res,
		metadata:   metadataDocument(a.PublicURL, a.Issuer, a.Scopes),
		challenges: newChallenges(res.metadataURL, a.Scopes),
		verifier:   a.Verifier,
		proxies:    proxies,
		throttle:   newThrottle(l.throttlePerMinute, l.throttleBurst, l.throttleClients),
		cache:      newVerdictCache(l.maxCached, l.cacheTTL),
		verifying:  make(chan struct{}, l.maxVerifying),
		audit:      audit,
		now:        l.now,
		logger:     logger,
	}
	if r, ok := a.Verifier.(ports.KeyRefreshReporter); ok {
		door.refresh = r
	}
	network := "tcp4"
	if bind.Is6() {
		network = "tcp6"
	}
	so := l.server
	so.Name, so.Session, so.Framing, so.Logger = "httpremote", opts.Session, l.framing, logger
	so.Engine = engine.Options{
		Name: opts.Name, Version: opts.Version, SubmitTool: opts.SubmitTool, Instructions: opts.Instructions,
		AskClient: opts.AskClient, RoundLifetime: opts.RoundLifetime,
	}
	so.Conns.ClientOf = proxies.connClient
	so.Listen = func() (net.Listener, error) {
		return net.Listen(network, net.JoinHostPort(bind.String(), strconv.Itoa(opts.Port)))
	}
	so.Admit = func(_ netip.AddrPort, framing *streamable.Handler) http.Handler {
		door.next = framing
		return door
	}
	srv, err := streamable.NewServer(so)
	if err != nil {
		return nil, err
	}
	return &Host{bind: bind, logger: logger, door: door, proxies: proxies, srv: srv}, nil
}

type discardAudit struct{}

func (discardAudit) Audit(ports.AuditRecord) {}

// String describes the host by its public URL.
func (h *Host) String() string { return "httpremote.Host(" + h.door.res.publicURL + ")" }

// Start validates the session's catalog (docs/SPEC.md §2: a violation fails start-up
// before any port is bound), then listens on Host:Port and serves. It
// returns the bound address (with the port chosen when Port was 0) once
// connections are accepted. It fails with ErrAlreadyStarted (a second
// Start), ErrStopped (Stop came first, or won against this Start: then
// nothing was bound), the catalog's error, ctx's error, or the listen error
// (address in use). A failed Start ends the host.
func (h *Host) Start(ctx context.Context) (netip.AddrPort, error) {
	bound, err := h.srv.Start(ctx)
	if err != nil {
		return netip.AddrPort{}, err
	}
	switch {
	case !h.bind.IsLoopback():
		h.logger.Warn("httpremote: bound to a non-loopback address: the host speaks plain HTTP, so terminate TLS in front of it")
	case len(h.proxies) == 0:
		h.logger.Warn("httpremote: bound to loopback with no trusted proxy: every client behind the proxy shares one throttle budget")
	}
	h.logger.Info("httpremote: serving", "listen", bound.String(), "url", h.door.res.publicURL)
	return bound, nil
}

// Stop ends the host: it stops accepting, cancels the calls in flight with
// cause [engine.ErrShuttingDown] (a tools/call still answers "server is
// shutting down" to its client, docs/SPEC.md §3), closes every connection once its
// answer is written, and returns when nothing the host started is left
// running, parked input-required calls included. It returns ErrStopTimeout
// when that takes longer than 5 s (a session ignoring cancellation) or ctx's
// error when ctx ends first; the host keeps shutting down in either case. A
// Stop during a pending Start makes that Start fail with ErrStopped without
// binding. Stop is safe to repeat and to call concurrently; after it
// returns nil, Wait returns at once.
func (h *Host) Stop(ctx context.Context) error { return h.srv.Stop(ctx) }

// Wait blocks until the host has stopped: it returns nil after Stop, the
// failure when serving failed on its own or Start failed. Before Start it
// blocks until Start fails or the host is stopped.
func (h *Host) Wait() error { return h.srv.Wait() }
