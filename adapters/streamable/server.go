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
	// the catalog is valid, with the Server's lock held so that a
	// concurrent Stop either comes first (Listen is not called) or finds
	// the listener. Its error fails Start, wrapped with Name.
	Listen func() (net.Listener, error)
	// Admit returns what serves every request: the host's admission in
	// front of its [Handler]. It is given the address Listen bound (an
	// admission that checks Host or Origin needs the port chosen for port
	// 0). Start calls it once, with the lock held, before serving: it must
	// not call the Server's methods.
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

type state int

const (
	idle state = iota
	starting
	started
	stopped
)

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

	mu    sync.Mutex // guards state, srv, bound, err
	state state
	srv   *http.Server
	bound netip.AddrPort // what Listen bound; set by a successful Start
	err   error          // what Wait returns; set before done closes
	done  chan struct{}  // closed once the server has stopped (or failed to start)
	once  sync.Once      // closes done
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
	base, cancelBase := context.WithCancelCause(opts.Engine.BaseContext(context.Background()))
	stopSignal, signalStop := context.WithCancel(context.Background())
	return &Server{
		opts:       opts,
		logger:     logger,
		base:       base,
		cancelBase: cancelBase,
		stopSignal: stopSignal,
		signalStop: signalStop,
		serveDone:  make(chan struct{}),
		done:       make(chan struct{}),
	}, nil
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
// Start) or [engine.ErrStopped] (Stop came first, or won against this
// Start: then Listen was not called), the catalog's error, ctx's error (ctx
// bounds the validation only), or the listen error (address in use). A
// failed Start ends the Server: [Server.Wait] then returns its error (nil
// for ErrStopped).
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	switch s.state {
	case starting, started:
		s.mu.Unlock()
		return s.lifecycleErr(engine.ErrAlreadyStarted)
	case stopped:
		s.mu.Unlock()
		return s.lifecycleErr(engine.ErrStopped)
	}
	s.state = starting
	s.mu.Unlock()

	err := s.validate(ctx)
	if err == nil {
		err = s.listenAndServe()
	}
	switch {
	case errors.Is(err, engine.ErrStopped): // Stop has ended the server already
		return s.lifecycleErr(engine.ErrStopped)
	case err != nil:
		s.mu.Lock()
		s.state = stopped
		s.mu.Unlock()
		s.finish(err)
		s.beginStop(nil) // nothing is bound: this only releases the engine
		return err
	}
	return nil
}

// lifecycleErr wraps one of the engine's lifecycle errors with the
// Server's name.
func (s *Server) lifecycleErr(err error) error { return fmt.Errorf("%s: %w", s.opts.Name, err) }

// Addr is the address Listen bound (with the port chosen for port 0); the
// zero AddrPort before a successful Start.
func (s *Server) Addr() netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bound
}

// validate runs the start-up catalog check, cut short by ctx or Stop.
func (s *Server) validate(ctx context.Context) error {
	vctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.stopSignal, func() { cancel(engine.ErrStopped) })
	defer stop()
	err := s.opts.Engine.Validate(vctx)
	if cause := context.Cause(vctx); cause != nil {
		if errors.Is(cause, engine.ErrStopped) {
			return engine.ErrStopped
		}
		if err != nil {
			return cause
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", s.opts.Name, err)
	}
	return nil
}

// listenAndServe binds and starts serving, unless Stop came first.
func (s *Server) listenAndServe() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Stop takes this lock to mark the server stopped: either it did so
	// before this point and nothing is bound, or it will find s.srv.
	if s.state == stopped {
		return engine.ErrStopped
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
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	srv := &http.Server{
		Handler:           s.limitHeaders(s.opts.Admit(bound)),
		Protocols:         protocols,
		ReadHeaderTimeout: s.opts.ReadHeaderTimeout,
		IdleTimeout:       s.opts.IdleTimeout,
		MaxHeaderBytes:    s.opts.MaxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return s.base },
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
	s.srv, s.state, s.bound = srv, started, bound
	go s.serve(srv, limited)
	return nil
}

func addrPort(a net.Addr) netip.AddrPort {
	if tcp, ok := a.(*net.TCPAddr); ok {
		return tcp.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}

// serve runs the server until it is shut down. Should serving fail on its
// own (the listener broke), the server stops and Wait returns the failure.
func (s *Server) serve(srv *http.Server, ln net.Listener) {
	defer close(s.serveDone)
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return
	}
	s.logger.Error(s.opts.Name+": serving failed; stopping", "err", err)
	s.mu.Lock()
	s.err = fmt.Errorf("%s: serve: %w", s.opts.Name, err)
	s.state = stopped
	s.mu.Unlock()
	s.beginStop(srv)
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
// [engine.ErrStopped] without calling Listen. Stop is safe to repeat and to
// call concurrently, and before Start; after it returns nil, Wait returns
// at once.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.state = stopped
	srv := s.srv
	s.mu.Unlock()
	s.beginStop(srv)
	timer := time.NewTimer(s.opts.StopTimeout)
	defer timer.Stop()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return s.lifecycleErr(engine.ErrStopTimeout)
	}
}

// beginStop starts the shutdown once; srv is nil when nothing was bound.
func (s *Server) beginStop(srv *http.Server) {
	s.stopOnce.Do(func() {
		s.signalStop()
		s.cancelBase(engine.ErrShuttingDown)
		if srv == nil {
			s.finish(nil)
			return
		}
		go s.shutdown(srv)
	})
}

// shutdown lets the handlers write their shutting-down answers, then closes
// what is left, and waits for every connection goroutine to end.
func (s *Server) shutdown(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.StopTimeout*4/5)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		s.logger.Warn(s.opts.Name + ": requests still running at stop; closing their connections")
		_ = srv.Close()
	}
	<-s.serveDone // after Serve returns, no connection is added
	s.conns.Wait()
	s.mu.Lock()
	err := s.err
	s.mu.Unlock()
	s.finish(err)
}

// finish records what Wait returns, unless something was recorded before,
// and ends Wait; only its first call counts.
func (s *Server) finish(err error) {
	s.once.Do(func() {
		s.mu.Lock()
		if s.err == nil {
			s.err = err
		}
		s.mu.Unlock()
		close(s.done)
	})
}

// Wait blocks until the server has stopped: it returns nil after Stop, the
// failure when serving failed on its own or Start failed. Before Start it
// blocks until Start fails or the server is stopped.
func (s *Server) Wait() error {
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

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
