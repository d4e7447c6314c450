// Package httploopback is agentmcp's loopback Streamable HTTP host (docs/SPEC.md
// §5.2): it serves one session to local MCP clients on 127.0.0.1, admitting
// only requests that carry the bearer token minted for this host.
//
// The host is a front door in front of the shared Streamable HTTP framing
// (adapters/streamable). Every request passes, in order, before its body is
// read:
//
//	headers over 16 KiB                              431, empty
//	request target not exactly /mcp                  403, a hint
//	Host not exactly 127.0.0.1:<port>                403, a hint
//	Origin present and not http://127.0.0.1:<port>   403, a hint
//	Authorization not "Bearer <token>"               401, a hint, no WWW-Authenticate
//
// and then the framing's own checks (docs/SPEC.md §4). A hint is one line
// of text saying what to do (the endpoint to use, where the token comes
// from); each refusal is also logged, at a bounded rate (see [Admission]). The 401 deliberately carries
// no WWW-Authenticate: a challenge would send MCP clients into OAuth
// discovery against a host that has no authorization server. The Host and
// Origin checks defeat DNS rebinding (docs/SPEC.md K8): a page on evil.example that
// resolves to 127.0.0.1 still sends Host: evil.example.
//
// Limits (docs/SPEC.md §5.2): 16 requests in flight (the 17th gets 503 without its
// body being read), request line and headers 16 KiB, 5 s to read the headers,
// 15 s to read a body, 60 s idle keep-alive, at most 128 open connections
// (at the cap the one idle longest, never-used ones first, makes room for
// the next once it has been idle 250 ms; active ones never do), and no bound on
// how long a call may run, because turns can be long — only a response
// write that makes no progress for 30 s ends its connection.
//
// The parts compose: [Admission] is an http middleware any Go host can put
// in front of a [streamable.Handler] in its own mux. The Host is the
// convenient lifecycle of docs/SPEC.md §5.2 built from them.
//
// Lifecycle: the Host is an [engine.Carrier] (docs/SPEC.md §5): [New] →
// [Host.Start] → [Host.Endpoint] → [Host.Wait] / [Host.Stop], then the
// engine's Shutdown ([engine.Engine.Run] does the last two in order). A
// host serves once; a second Start, or a Start after Stop, fails.
package httploopback

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"

	"github.com/agentmcp/agentmcp/adapters/streamable"
	"github.com/agentmcp/agentmcp/engine"
)

// LoopbackHost is the only address the host binds.
const LoopbackHost = "127.0.0.1"

// Options configures a Host. The zero value serves on a free port.
type Options struct {
	// Port is the TCP port to bind on 127.0.0.1; 0 picks a free one.
	// Outside 0..65535 construction fails with ErrPort.
	Port int
	// Host must be "" or "127.0.0.1"; anything else (0.0.0.0, localhost,
	// ::1 included) fails construction with ErrHost.
	Host string
	// Logger receives operational logs (never the token, arguments or
	// answers); nil means the engine's.
	Logger *slog.Logger
	// NoHealth turns off the health probes, GET /healthz and /readyz
	// (docs/SPEC.md §13; [streamable.WithHealth], with the Host rule of
	// /mcp).
	NoHealth bool
	// Token, when set, is the bearer token instead of a freshly minted one
	// (a persistent token the caller keeps, docs/SPEC.md §5.2): 64 lowercase
	// hex characters, as minted; anything else fails construction with
	// ErrToken.
	Token string
}

// Endpoint is where a started host listens and the credential its clients
// must present. Token is a secret: String, GoString and LogValue leave it
// out, so printing or logging an Endpoint does not leak it.
type Endpoint struct {
	// URL is "http://127.0.0.1:<port>/mcp".
	URL string
	// Token is the bearer token: 64 lowercase hex characters (32 bytes from
	// crypto/rand), sent as "Authorization: Bearer <Token>".
	Token string
}

// String returns the URL alone.
func (e Endpoint) String() string { return e.URL }

// GoString leaves the token out of %#v.
func (e Endpoint) GoString() string { return fmt.Sprintf("httploopback.Endpoint{URL:%q}", e.URL) }

// LogValue logs the URL alone.
func (e Endpoint) LogValue() slog.Value { return slog.GroupValue(slog.String("url", e.URL)) }

var _ slog.LogValuer = Endpoint{}

// Errors of New. Start and Stop fail with the lifecycle errors every
// carrier shares ([engine.ErrAlreadyStarted], [engine.ErrStopped],
// [engine.ErrStopTimeout]), wrapped as "httploopback: …".
var (
	ErrHost  = errors.New("httploopback: Host must be 127.0.0.1")
	ErrPort  = errors.New("httploopback: Port must be within 0..65535")
	ErrToken = errors.New("httploopback: Token must be 64 lowercase hex characters")
)

// maxConns is docs/SPEC.md §5.2's cap on open connections.
const maxConns = 128

// limits are the numbers tests change (export_test.go); the framing's and
// the server's zero fields mean their docs/SPEC.md §5.2 defaults.
type limits struct {
	framing streamable.Options
	server  streamable.ServerOptions // limits only: newHost sets the rest
}

func defaultLimits() limits {
	return limits{server: streamable.ServerOptions{Conns: streamable.ConnLimits{Total: maxConns}}}
}

// Host is the loopback Streamable HTTP host: a lifecycle around the shared
// parts — [Admission] in front of a [streamable.Handler], in a
// [streamable.Server]. Its methods are safe for concurrent use.
type Host struct {
	token  string
	logger *slog.Logger
	srv    *streamable.Server
}

var _ engine.Carrier = (*Host)(nil)

// New returns a host serving eng with a freshly minted token (or
// opts.Token). It fails with ErrHost, ErrPort, ErrToken, or when eng is nil. It binds nothing: [Host.Start]
// does. Whether prompts reach clients is the engine's AskClient (docs/SPEC.md
// §6: input-required rounds for modern clients; a legacy client over HTTP
// is never asked): turn it on only when you trust every holder of the token
// to approve the session's tool calls.
func New(eng *engine.Engine, opts Options) (*Host, error) {
	return newHost(eng, opts, defaultLimits())
}

func newHost(eng *engine.Engine, opts Options, l limits) (*Host, error) {
	if eng == nil {
		return nil, errors.New("httploopback: nil engine")
	}
	if opts.Host != "" && opts.Host != LoopbackHost {
		return nil, fmt.Errorf("%w (got %q)", ErrHost, opts.Host)
	}
	if opts.Port < 0 || opts.Port > 65535 {
		return nil, fmt.Errorf("%w (got %d)", ErrPort, opts.Port)
	}
	logger := opts.Logger
	if logger == nil {
		logger = eng.Logger()
	}
	l.framing.Logger = logger
	token := opts.Token
	if token == "" {
		token = mintToken()
	} else if !validToken(token) {
		return nil, ErrToken // the token is never part of an error
	}
	h := &Host{token: token, logger: logger}
	so := l.server
	so.Name, so.Engine, so.Logger = "httploopback", eng, logger
	so.Listen = func() (net.Listener, error) {
		ln, err := net.Listen("tcp4", net.JoinHostPort(LoopbackHost, strconv.Itoa(opts.Port)))
		return streamable.ObserveConns(ln, eng.Observer()), err
	}
	var framing *streamable.Handler // made by the Server: its requests' contexts end with the engine
	so.Admit = func(bound netip.AddrPort) http.Handler {
		door := Admission(bound, h.token, logger)(framing)
		if opts.NoHealth {
			return door
		}
		return streamable.WithHealth(door, streamable.HealthOptions{Host: bound.String(), Ready: streamable.CatalogReady(eng)})
	}
	var err error
	if h.srv, err = streamable.NewServer(so); err != nil {
		return nil, err
	}
	if framing, err = h.srv.NewHandler(l.framing); err != nil {
		return nil, fmt.Errorf("httploopback: %w", err)
	}
	return h, nil
}

// mintToken returns 32 bytes from crypto/rand as 64 lowercase hex characters.
func mintToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand: it crashes the program instead)
	return hex.EncodeToString(b[:])
}

// validToken: what mintToken returns, 64 lowercase hex characters.
func validToken(t string) bool {
	if len(t) != 64 {
		return false
	}
	for _, c := range []byte(t) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// String describes the host without its token.
func (h *Host) String() string { return "httploopback.Host" }

// Start validates the engine's catalog (docs/SPEC.md §2: a violation fails
// start-up before any port is bound), then listens on 127.0.0.1 and serves;
// it returns once the port is bound (connections are accepted from then
// on), and [Host.Endpoint] is then the URL and token. It fails with an error
// wrapping [engine.ErrAlreadyStarted] (a second Start) or
// [engine.ErrStopped] (Stop came first, or before this Start returned:
// then nothing stays bound), the catalog's error, ctx's error, or the
// listen error (port in use). A failed Start ends the host.
func (h *Host) Start(ctx context.Context) error {
	if err := h.srv.Start(ctx); err != nil {
		return err
	}
	h.logger.Debug("httploopback: serving", "url", h.Endpoint().URL)
	return nil
}

// Endpoint is where the started host listens and the token its clients
// must present; the zero Endpoint before a successful Start.
func (h *Host) Endpoint() Endpoint {
	bound := h.srv.Addr()
	if !bound.IsValid() {
		return Endpoint{}
	}
	return Endpoint{URL: "http://" + bound.String() + "/mcp", Token: h.token}
}

// Stop ends the host: it stops accepting, cancels the calls in flight with
// cause [engine.ErrShuttingDown] (a tools/call still answers "server is
// shutting down" to its client, docs/SPEC.md §3), closes every connection
// once its answer is written, and returns when every connection has ended.
// Calls parked in input-required rounds are the engine's: shut the engine
// down after Stop. It returns an error wrapping [engine.ErrStopTimeout]
// when that takes longer than 5 s (a session ignoring cancellation) or
// ctx's error when ctx ends first; the host keeps shutting down in either
// case. A Stop during a pending Start makes that Start fail with
// [engine.ErrStopped] and leaves the port unbound. Stop is safe to repeat, to
// call concurrently and before Start; after it returns nil, Wait returns at
// once.
func (h *Host) Stop(ctx context.Context) error { return h.srv.Stop(ctx) }

// Wait blocks until the host has ended: it returns nil after Stop, the
// failure when serving failed on its own or Start failed (nil when Stop
// made Start fail). Before Start it blocks until Start fails or the host is
// stopped.
func (h *Host) Wait() error { return h.srv.Wait() }
