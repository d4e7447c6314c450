package streamable

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/netcap"
)

// Defaults of [ServerOptions], the numbers docs/SPEC.md §5.2 gives the loopback host
// and §5.3 keeps for the remote one.
const (
	DefaultMaxHeaderBytes    = 16 << 10 // request line and headers, bytes
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultStopTimeout       = engine.StopTimeout
	DefaultSendBuffer        = netcap.DefaultSendBuffer // bytes
)

// ConnLimits configures the connection caps of a [Server] (docs/SPEC.md
// §5.2, §5.3); see [netcap.Limits].
type ConnLimits = netcap.Limits

// ErrConnLimits is wrapped by [NewServer]'s error for connection caps it
// cannot apply.
var ErrConnLimits = netcap.ErrLimits

// ServerOptions configures a [Server]. Engine, Listen, Admit and
// Conns.Total are required; every other zero field means its default.
type ServerOptions struct {
	// Name prefixes the errors the Server returns or wraps (the catalog's,
	// the listen error, a serve failure) and its log records:
	// "httploopback", "httpremote". Default "streamable".
	Name string
	// Engine is what the server's handler serves: Start validates its
	// catalog before listening. The Server never shuts it down; the
	// composition root does, after Stop.
	Engine *engine.Engine
	// Listen binds the listening socket (a TCP listener: the bound address
	// is reported as a netip.AddrPort). Start calls it at most once, after
	// the catalog is valid and unless Stop has begun (a listener bound
	// while Stop begins is closed before Stop returns). Its error fails
	// Start, wrapped with Name.
	Listen func() (net.Listener, error)
	// Admit returns what serves every request: the host's admission in
	// front of its [Handler]. It is given the address Listen bound (an
	// admission that checks Host or Origin needs the port chosen for port
	// 0). Start calls it once, before serving: it must not call the
	// Server's methods.
	Admit func(bound netip.AddrPort) http.Handler
	// Conns caps the open connections (see [netcap.NewListener]); the
	// server reports its connections' states to the listener, so idle ones
	// make room for newcomers.
	Conns ConnLimits
	// MaxHeaderBytes bounds a request's line and headers, in bytes as
	// sent; default 16 KiB. A request over it gets 431, empty, with
	// Connection: close, before Admit's handler sees it. (http.Server's own
	// check, set to the same number, allows 4 KiB of slack and answers
	// larger ones itself.)
	MaxHeaderBytes int
	// ReadHeaderTimeout bounds reading a request's line and headers: a
	// connection's first request from when it was accepted, a later one
	// from its first bytes; default 5 s. Bodies are bounded by the framing
	// ([Options.BodyReadTimeout]), stalled response writes too
	// ([Options.WriteStallTimeout]); there is no bound on how long a call
	// may run, because turns can be long.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a kept-alive connection on which no next request
	// starts within it, counted from when the previous response was written
	// (net/http arms it after the response is flushed); default 60 s.
	IdleTimeout time.Duration
	// StopTimeout bounds [Server.Stop]; default [engine.StopTimeout], 5 s
	// (docs/SPEC.md §3 "Ending").
	StopTimeout time.Duration
	// SendBuffer is the kernel send buffer (SO_SNDBUF) of each accepted
	// connection, in bytes; default 256 KiB. It bounds the kernel memory a
	// client that stops reading can hold, and it is what lets the framing's
	// WriteStallTimeout tell a slow reader from a stalled one: a blocked
	// write resumes once about a third of the buffer has drained, so with
	// the kernel's own autotuned buffer (up to 4 MiB on Linux) a reader
	// would have to take over a MiB within the timeout to count as
	// progressing (docs/SPEC.md §5.2).
	SendBuffer int
	// Logger receives operational records (never requests' contents); nil
	// means the engine's. net/http's own error log goes to it at debug
	// level.
	Logger *slog.Logger
}

// Server serves an engine over Streamable HTTP (HTTP/1.1 only) for one
// host, once. It is an [engine.Carrier]: [Server.Start] validates the
// catalog and listens, [Server.Addr] is the address bound, [Server.Stop]
// ends it, [Server.Wait] reports how it ended. It owns what
// the two hosts share (docs/SPEC.md §5.2, §5.3, §3 "Ending"): the
// http.Server and its timeouts, the header limit, the connection caps and
// the stop sequence. The host keeps its admission and framing (Admit), its
// listener (Listen) and its public API. Its methods are safe for
// concurrent use.
type Server struct {
	opts   ServerOptions
	logger *slog.Logger
	life   *engine.Lifecycle
	conns  sync.WaitGroup // open connections, from StateNew to StateClosed

	mu    sync.Mutex
	bound netip.AddrPort // what Listen bound; set before Start returns
}

// NewServer returns a Server for opts; it binds nothing. It fails when
// Engine, Listen or Admit is nil, Conns is refused by [netcap.NewListener]
// (an error wrapping [ErrConnLimits]) or a duration is negative.
func NewServer(opts ServerOptions) (*Server, error) {
	if opts.Name == "" {
		opts.Name = "streamable"
	}
	switch {
	case opts.Engine == nil || opts.Listen == nil || opts.Admit == nil:
		return nil, errors.New(opts.Name + ": ServerOptions needs Engine, Listen and Admit")
	case opts.Conns.Check() != nil:
		return nil, fmt.Errorf("%s: ServerOptions.Conns: %w", opts.Name, opts.Conns.Check())
	case opts.MaxHeaderBytes < 0 || opts.ReadHeaderTimeout < 0 || opts.IdleTimeout < 0 || opts.StopTimeout < 0 || opts.SendBuffer < 0:
		return nil, errors.New(opts.Name + ": ServerOptions must not be negative")
	}
	orDefault(&opts.MaxHeaderBytes, DefaultMaxHeaderBytes)
	orDefault(&opts.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	orDefault(&opts.IdleTimeout, DefaultIdleTimeout)
	orDefault(&opts.StopTimeout, DefaultStopTimeout)
	orDefault(&opts.SendBuffer, DefaultSendBuffer)
	logger := opts.Logger
	if logger == nil {
		logger = opts.Engine.Logger()
	}
	s := &Server{opts: opts, logger: logger}
	s.life = engine.NewLifecycle(opts.Name, s.serve, opts.StopTimeout)
	return s, nil
}

// orDefault sets *v to def when it is zero or less.
func orDefault[T ~int | ~int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

var _ engine.Carrier = (*Server)(nil)

// NewHandler returns a [Handler] for the Server's engine, like the package
// NewHandler, that knows its requests come through this Server: their
// contexts derive from the engine's [engine.Engine.BaseContext] (the
// Server's base), so an exchange arranges nothing per request to end its
// calls at [engine.Engine.Shutdown] ([engine.ExchangeOptions].EndsWithEngine).
// Give it to Admit only: mounted in another server, its calls would not
// end at Shutdown. A Handler made with the package NewHandler is the one to
// mount elsewhere (it binds each call to the engine's end itself).
func (s *Server) NewHandler(opts Options) (*Handler, error) {
	h, err := NewHandler(s.opts.Engine, opts)
	if err != nil {
		return nil, err
	}
	h.endsWithEngine = true
	return h, nil
}

// Start validates the session's catalog (docs/SPEC.md §2: a violation fails
// start-up before anything is bound), then listens and serves; it returns
// once connections are accepted ([Server.Addr] is then the bound address).
// It fails with an error wrapping [engine.ErrAlreadyStarted] (a second
// Start) or [engine.ErrStopped] (Stop came first, or before this Start
// returned: Listen is not called once Stop has begun), the catalog's error,
// ctx's error (ctx bounds the validation only), or the listen error
// (address in use). A
// failed Start ends the Server: [Server.Wait] then returns its error (nil
// for ErrStopped).
func (s *Server) Start(ctx context.Context) error { return s.life.Start(ctx) }

// Addr is the address Listen bound (with the port chosen for port 0); the
// zero AddrPort before a successful Start.
func (s *Server) Addr() netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bound
}

// serve validates the catalog, listens and serves until Stop (ctx, whose
// cause ErrShuttingDown every request's context inherits) or until serving
// fails on its own; then it shuts the http.Server down.
func (s *Server) serve(ctx context.Context, ready func()) error {
	if err := s.opts.Engine.Validate(ctx); err != nil {
		return fmt.Errorf("%s: %w", s.opts.Name, err)
	}
	if ctx.Err() != nil {
		return nil // Stop, or Start's ctx: nothing is bound
	}
	ln, err := s.opts.Listen()
	if err != nil {
		return fmt.Errorf("%s: %w", s.opts.Name, err)
	}
	limited, err := netcap.NewListener(netcap.SendBuffer(ln, s.opts.SendBuffer), s.opts.Conns)
	if err != nil { // NewServer checked the limits
		_ = ln.Close()
		return fmt.Errorf("%s: %w", s.opts.Name, err)
	}
	bound := addrPort(ln.Addr())
	// Every request's context: it ends at Stop (ctx) or when serving fails,
	// with cause engine.ErrShuttingDown, and at the engine's Shutdown.
	base, cancelBase := context.WithCancelCause(s.opts.Engine.BaseContext(ctx))
	defer cancelBase(nil)
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	srv := &http.Server{
		Handler:           s.limitHeaders(s.opts.Admit(bound)),
		Protocols:         protocols,
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    s.opts.MaxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return base },
		ConnContext:       withClientGone,
		ConnState: func(c net.Conn, st http.ConnState) {
			limited.ConnState(c, st)
			switch st {
			case http.StateNew:
				s.conns.Add(1)
			case http.StateClosed, http.StateHijacked:
				s.conns.Done()
			}
		},
		ErrorLog: slog.NewLogLogger(s.logger.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(limited) }()
	s.mu.Lock()
	s.bound = bound
	s.mu.Unlock()
	ready()
	var failed error
	select {
	case <-ctx.Done():
		s.shutdown(srv)
		<-served // after Serve returns, no connection is added
	case err := <-served:
		// Serving failed on its own (the listener broke): stop, and Wait
		// returns the failure.
		s.logger.Error(s.opts.Name+": serving failed; stopping", "err", err)
		failed = fmt.Errorf("%s: serve: %w", s.opts.Name, err)
		cancelBase(engine.ErrShuttingDown)
		s.shutdown(srv)
	}
	s.conns.Wait()
	return failed
}

func addrPort(a net.Addr) netip.AddrPort {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}

// Stop ends the server: it stops accepting, cancels the calls in flight
// through the requests' base context with cause [engine.ErrShuttingDown] (a
// tools/call still answers "server is shutting down" to its client,
// docs/SPEC.md §3 "Ending"), lets http.Server.Shutdown close every
// connection once its answer is written and closes what is left after 4/5
// of StopTimeout, and returns when every connection has ended. Calls parked
// in input-required rounds belong to the engine: [engine.Engine.Shutdown]
// ends them. It returns an error wrapping [engine.ErrStopTimeout] when that
// takes longer than StopTimeout (5 s; a session ignoring cancellation) or
// ctx's error when ctx ends first; the server keeps shutting down in either
// case. A Stop during a pending Start makes that Start fail with
// [engine.ErrStopped] (Listen is not called once Stop has begun). Stop is
// safe to repeat and to call concurrently, and before Start; after it
// returns nil, Wait returns at once.
func (s *Server) Stop(ctx context.Context) error { return s.life.Stop(ctx) }

// shutdown lets the handlers write their shutting-down answers, then closes
// what is left.
func (s *Server) shutdown(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.StopTimeout*4/5)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		s.logger.Warn(s.opts.Name + ": requests still running at stop; closing their connections")
		_ = srv.Close()
	}
}

// Wait blocks until the server has stopped: it returns nil after Stop, the
// failure when serving failed on its own or Start failed. Before Start it
// blocks until Start fails or the server is stopped.
func (s *Server) Wait() error { return s.life.Wait() }

// limitHeaders answers 431 to a request whose line and headers exceed
// MaxHeaderBytes (docs/SPEC.md §5.2: "headers 16 KiB (→ 431)"), empty and closing
// the connection like the hosts' other refusals; next serves the rest.
func (s *Server) limitHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if headerBytes(r) <= s.opts.MaxHeaderBytes {
			next.ServeHTTP(w, r)
			return
		}
		s.logger.Debug(s.opts.Name+": refused", "status", http.StatusRequestHeaderFieldsTooLarge, "reason", "headers too large")
		Refuse(w, r, http.StatusRequestHeaderFieldsTooLarge)
	})
}

// headerBytes is the size in bytes of r's request line and header section
// as they were sent, less any whitespace net/http trimmed.
func headerBytes(r *http.Request) int {
	n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + 2
	if r.Host != "" {
		n += len("Host: ") + len(r.Host) + 2
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + 2 + len(v) + 2
		}
	}
	return n + 2
}
