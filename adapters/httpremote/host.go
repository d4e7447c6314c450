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

	"github.com/agentmcp/agentmcp/adapters/streamable"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/ports"
)

// DefaultHost is the address bound when Options.Host is empty: a
// TLS-terminating proxy on the same machine forwards to it.
const DefaultHost = "127.0.0.1"

// Options configures a Host.
type Options struct {
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
	// Logger receives operational logs: never a token, a claim value, a
	// client address, arguments or answers (net/http's own debug-level
	// record of a handler panic names the peer); nil means the engine's.
	Logger *slog.Logger
	// NoHealth turns off the health probes, GET /healthz and /readyz
	// (docs/SPEC.md §13; [streamable.WithHealth], any Host): ready once the
	// catalog validates and, when the verifier implements
	// [ports.KeyReadiness], it holds the issuer's keys.
	NoHealth bool
}

// Authorization is what makes the host an OAuth 2.0 protected resource.
// The Verifier is the one source of the resource's identity: its
// Describe() gives the public URL (the resource identifier and the audience
// tokens must name), the issuer and the required scopes, which the host
// advertises and derives its paths from (docs/SPEC.md §5.3). The app
// package builds a verifier from flags; a custom host hands its own.
type Authorization struct {
	// Verifier decides every bearer token; required (ErrVerifier). Its
	// Describe() must name: a Resource that is an absolute https URL in
	// canonical form — lower-case host, no default port, no trailing slash
	// unless the path is "/", no credentials, query or fragment, a clean
	// path (else ErrPublicURL); an https Issuer (else ErrIssuer); at least
	// one Scope, each an RFC 6749 §3.3 scope token (printable ASCII without
	// space, '"' or '\'; else ErrScopes).
	Verifier ports.AccessTokenVerifier
	// TrustedProxies are the literal IP addresses whose X-Forwarded-For is
	// believed (see the package documentation); else ErrTrustedProxy.
	TrustedProxies []string
	// Audit receives one record per refused request; nil discards them.
	Audit ports.AuditSink
}

// Errors of New and NewAdmission; New's errors wrap one of them. Start and
// Stop fail with the lifecycle errors every carrier shares
// ([engine.ErrAlreadyStarted], [engine.ErrStopped],
// [engine.ErrStopTimeout]), wrapped as "httpremote: …".
var (
	ErrHost         = errors.New("httpremote: Host must be a literal IP address")
	ErrPort         = errors.New("httpremote: Port must be within 0..65535")
	ErrPublicURL    = errors.New("httpremote: PublicURL must be an absolute https URL in canonical form")
	ErrIssuer       = errors.New("httpremote: Issuer must be an absolute https URL")
	ErrScopes       = errors.New("httpremote: Scopes must hold at least one RFC 6749 scope token, and only such tokens")
	ErrTrustedProxy = errors.New("httpremote: a trusted proxy must be a literal IP address")
	ErrVerifier     = errors.New("httpremote: Authorization.Verifier is required")
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

// Host is the remote Streamable HTTP host: a lifecycle around the shared
// parts — an [Admission] in front of a [streamable.Handler], in a
// [streamable.Server]. Its methods are safe for concurrent use.
type Host struct {
	bind   netip.Addr
	logger *slog.Logger
	door   *Admission
	srv    *streamable.Server
}

var _ engine.Carrier = (*Host)(nil)

// New returns a host serving eng. It binds nothing ([Host.Start] does) and
// fails, in this order, with an error wrapping ErrHost, ErrPort, then
// [NewAdmission]'s errors (ErrVerifier, ErrPublicURL, ErrIssuer, ErrScopes,
// ErrTrustedProxy), then for a nil engine. Error texts never quote a URL
// (it might carry credentials); they may quote the refused bind address,
// scope or trusted proxy. Whether prompts reach clients is the engine's
// AskClient (docs/SPEC.md §6: input-required rounds for modern clients,
// bound to the client's principal; a legacy client over HTTP is never
// asked): turn it on only when you trust every principal the verifier
// admits to approve the session's tool calls.
func New(eng *engine.Engine, opts Options) (*Host, error) {
	return newHost(eng, opts, defaultLimits())
}

func newHost(eng *engine.Engine, opts Options, l limits) (*Host, error) {
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
	logger := opts.Logger
	if logger == nil && eng != nil {
		logger = eng.Logger()
	}
	door, err := newAdmission(opts.Authorization, logger, l)
	if err != nil {
		return nil, err
	}
	if eng == nil {
		return nil, errors.New("httpremote: nil engine")
	}
	l.framing.Logger = door.logger
	network := "tcp4"
	if bind.Is6() {
		network = "tcp6"
	}
	so := l.server
	so.Name, so.Engine, so.Logger = "httpremote", eng, door.logger
	so.Conns.ClientOf = door.proxies.connClient
	so.Listen = func() (net.Listener, error) {
		ln, err := net.Listen(network, net.JoinHostPort(bind.String(), strconv.Itoa(opts.Port)))
		return streamable.ObserveConns(ln, eng.Observer()), err
	}
	var framing *streamable.Handler // made by the Server: its requests' contexts end with the engine
	so.Admit = func(netip.AddrPort) http.Handler {
		if opts.NoHealth {
			return door.Wrap(framing)
		}
		return streamable.WithHealth(door.Wrap(framing), streamable.HealthOptions{Ready: ready(eng, opts.Authorization.Verifier)})
	}
	srv, err := streamable.NewServer(so)
	if err != nil {
		return nil, err
	}
	if framing, err = srv.NewHandler(l.framing); err != nil {
		return nil, fmt.Errorf("httpremote: %w", err)
	}
	return &Host{bind: bind, logger: door.logger, door: door, srv: srv}, nil
}

// ready is the remote host's readiness: the catalog validates, and the
// verifier (when it fetches keys) holds its issuer's keys.
func ready(eng *engine.Engine, v ports.AccessTokenVerifier) func(context.Context) string {
	catalog := streamable.CatalogReady(eng)
	keys, _ := v.(ports.KeyReadiness)
	return func(ctx context.Context) string {
		if why := catalog(ctx); why != "" {
			return why
		}
		if keys != nil && !keys.KeysReady(ctx) {
			return "keys"
		}
		return ""
	}
}

type discardAudit struct{}

func (discardAudit) Audit(ports.AuditRecord) {}

// String describes the host by its public URL.
func (h *Host) String() string { return "httpremote.Host(" + h.door.res.publicURL + ")" }

// Start validates the engine's catalog (docs/SPEC.md §2: a violation fails
// start-up before any port is bound), then listens on Host:Port and serves;
// it returns once connections are accepted, and [Host.Addr] is then the
// bound address. It fails with an error wrapping [engine.ErrAlreadyStarted]
// (a second Start) or [engine.ErrStopped] (Stop came first, or before this
// Start returned: then nothing stays bound), the catalog's error, ctx's
// error, or the listen error (address in use). A failed Start ends the host.
func (h *Host) Start(ctx context.Context) error {
	if err := h.srv.Start(ctx); err != nil {
		return err
	}
	switch {
	case !h.bind.IsLoopback():
		h.logger.Warn("httpremote: bound to a non-loopback address: the host speaks plain HTTP, so terminate TLS in front of it")
	case len(h.door.proxies) == 0:
		h.logger.Warn("httpremote: bound to loopback with no trusted proxy: every client behind the proxy shares one throttle budget")
	}
	h.logger.Info("httpremote: serving", "listen", h.Addr().String(), "url", h.door.res.publicURL)
	return nil
}

// Addr is the address the started host listens on (with the port chosen
// when Port was 0); the zero AddrPort before a successful Start.
func (h *Host) Addr() netip.AddrPort { return h.srv.Addr() }

// Stop ends the host: it stops accepting, cancels the calls in flight with
// cause [engine.ErrShuttingDown] (a tools/call still answers "server is
// shutting down" to its client, docs/SPEC.md §3), closes every connection
// once its answer is written, and returns when every connection has ended.
// Calls parked in input-required rounds are the engine's: shut the engine
// down after Stop. It returns an error wrapping [engine.ErrStopTimeout]
// when that takes longer than 5 s (a session ignoring cancellation) or
// ctx's error when ctx ends first; the host keeps shutting down in either
// case. A Stop during a pending Start makes that Start fail with
// [engine.ErrStopped] and leaves nothing bound. Stop is safe to repeat, to call
// concurrently and before Start; after it returns nil, Wait returns at
// once.
func (h *Host) Stop(ctx context.Context) error { return h.srv.Stop(ctx) }

// Wait blocks until the host has ended: it returns nil after Stop, the
// failure when serving failed on its own or Start failed (nil when Stop
// made Start fail). Before Start it blocks until Start fails or the host is
// stopped.
func (h *Host) Wait() error { return h.srv.Wait() }
