// Package httploopback is agentmcp's loopback Streamable HTTP host (SPEC
// §5.2): it serves one session to local MCP clients on 127.0.0.1, admitting
// only requests that carry the bearer token minted for this host.
//
// The host is a front door in front of the shared Streamable HTTP framing
// (adapters/streamable). Every request passes, in order, before its body is
// read:
//
//	headers over 16 KiB                              431, empty
//	request target not exactly /mcp                  403, empty
//	Host not exactly 127.0.0.1:<port>                403, empty
//	Origin present and not http://127.0.0.1:<port>   403, empty
//	Authorization not "Bearer <token>"               401, empty, no WWW-Authenticate
//
// and then the framing's own checks (SPEC §4). The 401 deliberately carries
// no WWW-Authenticate: a challenge would send MCP clients into OAuth
// discovery against a host that has no authorization server. The Host and
// Origin checks defeat DNS rebinding (K8): a page on evil.example that
// resolves to 127.0.0.1 still sends Host: evil.example.
//
// Limits (SPEC §5.2): 16 requests in flight (the 17th gets 503 without its
// body being read), request line and headers 16 KiB, 5 s to read the headers,
// 15 s to read a body, 60 s idle keep-alive, at most 32 open connections (the
// 33rd waits in the kernel's accept queue until one closes), and no write
// timeout, because turns can be long.
//
// Lifecycle: [New] → [Host.Start] → [Host.Wait] / [Host.Stop]. A host serves
// once; a second Start, or a Start after Stop, fails.
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
	"strconv"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/adapters/engine"
	"github.com/agentmcp/agentmcp/adapters/streamable"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// LoopbackHost is the only address the host binds.
const LoopbackHost = "127.0.0.1"

// Options configures a Host.
type Options struct {
	// Name and Version are the serverInfo reported to clients.
	Name, Version string
	// Session is the session served; required.
	Session ports.Session
	// Port is the TCP port to bind on 127.0.0.1; 0 picks a free one.
	// Outside 0..65535 construction fails with ErrPort.
	Port int
	// Host must be "" or "127.0.0.1"; anything else (0.0.0.0, localhost,
	// ::1 included) fails construction with ErrHost.
	Host string
	// SubmitTool names the submission tool; zero means agent_submit.
	SubmitTool domain.SubmitTool
	// AskClient lets prompts raised by a client's own call reach that client
	// (SPEC §6): input-required rounds for modern clients; a legacy client
	// over HTTP is never asked. Off by default. Turn it on only when you
	// trust every holder of the token to approve the session's tool calls.
	AskClient bool
	// RoundLifetime bounds a parked input-required round; zero means 30 min.
	RoundLifetime time.Duration
	// Logger receives operational logs (never the token, arguments or
	// answers); nil discards.
	Logger *slog.Logger
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

// Errors of New, Start and Stop.
var (
	ErrHost           = errors.New("httploopback: Host must be 127.0.0.1")
	ErrPort           = errors.New("httploopback: Port must be within 0..65535")
	ErrAlreadyStarted = errors.New("httploopback: already started")
	ErrStopped        = errors.New("httploopback: stopped")
	ErrStopTimeout    = errors.New("httploopback: calls still running when the stop timeout ended")
)

// limits are SPEC §5.2's numbers; tests shorten them (export_test.go).
type limits struct {
	maxInFlight       int
	maxConns          int
	maxHeaderBytes    int
	maxBodyBytes      int64
	readHeaderTimeout time.Duration
	bodyReadTimeout   time.Duration
	idleTimeout       time.Duration
	sseAfter          time.Duration
	keepAlive         time.Duration
	unreadBodyGrace   time.Duration
	stopTimeout       time.Duration
	onAcceptWait      func() // called when the 33rd connection starts waiting
}

func defaultLimits() limits {
	return limits{
		maxInFlight:       streamable.DefaultMaxInFlight,
		maxConns:          32,
		maxHeaderBytes:    16 << 10,
		maxBodyBytes:      streamable.DefaultMaxBodyBytes,
		readHeaderTimeout: 5 * time.Second,
		bodyReadTimeout:   streamable.DefaultBodyReadTimeout,
		idleTimeout:       60 * time.Second,
		sseAfter:          streamable.DefaultSSEAfter,
		keepAlive:         streamable.DefaultKeepAlive,
		unreadBodyGrace:   streamable.DefaultUnreadBodyGrace,
		stopTimeout:       5 * time.Second,
	}
}

type state int

const (
	idle state = iota
	starting
	started
	stopped
)

// Host is the loopback Streamable HTTP host. Its methods are safe for
// concurrent use.
type Host struct {
	port   int // as configured; 0 = pick
	token  string
	eng    *engine.Engine
	logger *slog.Logger
	limits limits

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

// New returns a host for opts.Session with a freshly minted token. It fails
// with ErrHost, ErrPort, [domain.ErrInvalidSubmitName] or a nil session. It
// binds nothing: [Host.Start] does.
func New(opts Options) (*Host, error) {
	return newHost(opts, defaultLimits())
}

func newHost(opts Options, l limits) (*Host, error) {
	if opts.Host != "" && opts.Host != LoopbackHost {
		return nil, fmt.Errorf("%w (got %q)", ErrHost, opts.Host)
	}
	if opts.Port < 0 || opts.Port > 65535 {
		return nil, fmt.Errorf("%w (got %d)", ErrPort, opts.Port)
	}
	if opts.Session == nil {
		return nil, errors.New("httploopback: nil Session")
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
		return nil, fmt.Errorf("httploopback: %w", err)
	}
	base, cancelBase := context.WithCancelCause(context.Background())
	stopSignal, signalStop := context.WithCancel(context.Background())
	return &Host{
		port:       opts.Port,
		token:      mintToken(),
		eng:        eng,
		logger:     logger,
		limits:     l,
		base:       base,
		cancelBase: cancelBase,
		stopSignal: stopSignal,
		signalStop: signalStop,
		serveDone:  make(chan struct{}),
		done:       make(chan struct{}),
	}, nil
}

// mintToken returns 32 bytes from crypto/rand as 64 lowercase hex characters.
func mintToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand: it crashes the program instead)
	return hex.EncodeToString(b[:])
}

// String describes the host without its token.
func (h *Host) String() string { return "httploopback.Host" }

// Start validates the session's catalog (SPEC §2: a violation fails start-up
// before any port is bound), then listens on 127.0.0.1 and serves. It
// returns the endpoint and token once the port is bound (connections are
// accepted from then on). It fails with ErrAlreadyStarted (a second Start),
// ErrStopped (Stop came first, or won against this Start: then nothing was
// bound), the catalog's error, ctx's error, or the listen error (port in
// use). A failed Start ends the host.
func (h *Host) Start(ctx context.Context) (Endpoint, error) {
	h.mu.Lock()
	switch h.state {
	case starting, started:
		h.mu.Unlock()
		return Endpoint{}, ErrAlreadyStarted
	case stopped:
		h.mu.Unlock()
		return Endpoint{}, ErrStopped
	}
	h.state = starting
	h.mu.Unlock()

	if err := h.validate(ctx); err != nil {
		h.startFailed(err)
		return Endpoint{}, err
	}

	h.mu.Lock()
	// Stop takes this lock to mark the host stopped: either it did so
	// before this point and nothing is bound, or it will find h.srv.
	if h.state == stopped {
		h.mu.Unlock()
		return Endpoint{}, ErrStopped
	}
	ln, err := net.Listen("tcp4", net.JoinHostPort(LoopbackHost, strconv.Itoa(h.port)))
	if err != nil {
		h.state = stopped
		h.mu.Unlock()
		err = fmt.Errorf("httploopback: %w", err)
		h.finish(err)
		return Endpoint{}, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	hostport := net.JoinHostPort(LoopbackHost, strconv.Itoa(port))
	l := h.limits
	framing := streamable.NewHandler(h.eng, streamable.Options{
		MaxBodyBytes: l.maxBodyBytes, MaxInFlight: l.maxInFlight,
		SSEAfter: l.sseAfter, KeepAlive: l.keepAlive, BodyReadTimeout: l.bodyReadTimeout,
		UnreadBodyGrace: l.unreadBodyGrace, Logger: h.logger,
	})
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	srv := &http.Server{
		Handler: &frontDoor{
			target: "/mcp", host: hostport, origin: "http://" + hostport,
			token: []byte(h.token), maxHeaderBytes: l.maxHeaderBytes,
			next: framing, logger: h.logger,
		},
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
	go h.serve(srv, newLimitListener(ln, l.maxConns, l.onAcceptWait))
	h.mu.Unlock()
	ep := Endpoint{URL: "http://" + hostport + "/mcp", Token: h.token}
	h.logger.Debug("httploopback: serving", "url", ep.URL)
	return ep, nil
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
		return fmt.Errorf("httploopback: %w", err)
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
	h.logger.Error("httploopback: serving failed; stopping", "err", err)
	h.mu.Lock()
	h.err = fmt.Errorf("httploopback: serve: %w", err)
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
// makes that Start fail with ErrStopped without binding the port. Stop is
// safe to repeat and to call concurrently; after it returns nil, Wait
// returns at once.
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
		h.logger.Warn("httploopback: requests still running at stop; closing their connections")
		_ = srv.Close()
	}
	<-h.serveDone // after Serve returns, no connection is added
	h.conns.Wait()
	if err := h.eng.Wait(ctx); err != nil { // calls parked in input-required rounds
		h.logger.Warn("httploopback: parked calls still running at stop")
	}
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
