// Package unixsocket is agentmcp's Unix-socket carrier (docs/SPEC.md §10):
// each connection is one newline-delimited JSON-RPC stream, framed exactly
// as stdio (MCP lets custom transports reuse the stdio framing), served by
// [engine.Engine.ServeConn]. The socket file is created with mode 0600 and
// every peer's credentials are checked before a frame is read: only
// processes of this process's user are served.
//
// Lifecycle: the Server is an [engine.Carrier] (docs/SPEC.md §5): [New] →
// [Server.Start] → [Server.Wait] / [Server.Stop], then the engine's
// Shutdown ([engine.Engine.Run] does the last two in order), written once
// by [engine.Lifecycle]: the Server supplies how it binds and serves.
// docs/carrier.md, "Writing a carrier", walks through it.
package unixsocket

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/agentmcp/agentmcp/engine"
)

// Options configures a Server.
type Options struct {
	// Path is the socket file; required. A stale socket file (nothing
	// answers on it) is replaced; anything else there fails Start.
	Path string
	// MaxConns bounds the connections served at once; one more is closed
	// at once. Default 16.
	MaxConns int
	// Logger receives operational logs; nil means the engine's.
	Logger *slog.Logger
}

// Errors of Start, beside the lifecycle errors every carrier shares
// ([engine.ErrAlreadyStarted], [engine.ErrStopped]), which it wraps as
// "unixsocket: …".
var (
	ErrInUse     = errors.New("unixsocket: something answers on the socket path")
	ErrNotSocket = errors.New("unixsocket: the path exists and is not a socket")
)

// Server serves an engine on a Unix socket, once. Its methods are safe for
// concurrent use.
type Server struct {
	eng    *engine.Engine
	opts   Options
	logger *slog.Logger
	life   *engine.Lifecycle
	slots  chan struct{} // one per connection served
	conns  sync.WaitGroup
}

// New returns a Server for eng; it binds nothing. It fails without an engine
// or a path.
func New(eng *engine.Engine, opts Options) (*Server, error) {
	if eng == nil || opts.Path == "" {
		return nil, errors.New("unixsocket: New needs an engine and Options.Path")
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 16
	}
	if opts.Logger == nil {
		opts.Logger = eng.Logger()
	}
	s := &Server{eng: eng, opts: opts, logger: opts.Logger, slots: make(chan struct{}, opts.MaxConns)}
	// Stop is bounded by the connections' drain (5 s each), not by a timer
	// of its own.
	s.life = engine.NewLifecycle("unixsocket", s.serve, 0)
	return s, nil
}

var _ engine.Carrier = (*Server)(nil)

// Start validates the catalog, replaces a stale socket file, listens with
// mode 0600 and serves. It fails with an error wrapping
// [engine.ErrAlreadyStarted] (a second Start) or [engine.ErrStopped] (Stop
// came first, or during the validation: then nothing was bound), the
// catalog's error, ctx's error (ctx bounds start-up only), ErrInUse,
// ErrNotSocket, or the listen error; a failed Start ends the Server.
func (s *Server) Start(ctx context.Context) error { return s.life.Start(ctx) }

// serve binds the socket, then accepts until Stop (ctx) or a failed Accept.
// Stop's order: the connections' context (ctx) is cancelled, the listener
// closed, the socket file removed, then the connections are waited for.
func (s *Server) serve(ctx context.Context, ready func()) error {
	// The catalog first (docs/SPEC.md §2); once ctx has ended (Stop, or
	// Start's ctx) nothing is bound.
	if err := s.eng.Validate(ctx); err != nil || ctx.Err() != nil {
		return err
	}
	ln, err := s.listen()
	if err != nil {
		return err
	}
	made, _ := os.Lstat(s.opts.Path) // nil if it is already gone: then nothing is removed
	unhook := context.AfterFunc(ctx, func() { ln.Close() })
	defer unhook()
	ready()
	for {
		c, err := ln.Accept()
		if err != nil {
			ln.Close()
			removeOwn(s.opts.Path, made)
			s.conns.Wait()
			if ctx.Err() != nil {
				return nil // Stop closed the listener
			}
			return err
		}
		if err := sameUser(c); err != nil {
			s.logger.Warn("unixsocket: peer refused", "err", err)
			c.Close()
			continue
		}
		select {
		case s.slots <- struct{}{}:
		default:
			s.logger.Warn("unixsocket: connection bound reached; connection closed")
			c.Close()
			continue
		}
		s.conns.Add(1)
		go func() {
			defer func() { c.Close(); <-s.slots; s.conns.Done() }()
			err := s.eng.ServeConn(ctx, c, c, engine.ConnOptions{Close: c.Close})
			if err != nil && !errors.Is(err, engine.ErrInputClosed) {
				s.logger.Debug("unixsocket: connection ended", "err", err)
			}
		}()
	}
}

func (s *Server) listen() (net.Listener, error) {
	if fi, err := os.Lstat(s.opts.Path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, ErrNotSocket
		}
		if c, err := net.DialTimeout("unix", s.opts.Path, time.Second); err == nil {
			c.Close()
			return nil, ErrInUse
		}
		_ = os.Remove(s.opts.Path) // stale: nothing answers on it
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: s.opts.Path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("unixsocket: %w", err)
	}
	// Closing the listener must not unlink the path: by then it may name
	// another server's socket. Stop removes the file only if it is the one
	// made here (removeOwn).
	ln.SetUnlinkOnClose(false)
	// Every peer is checked below, so the moment before the mode narrows
	// admits nobody else either.
	if err := os.Chmod(s.opts.Path, 0o600); err != nil {
		ln.Close()
		_ = os.Remove(s.opts.Path) // just made, nothing else can be there yet
		return nil, fmt.Errorf("unixsocket: %w", err)
	}
	return ln, nil
}

// Stop stops accepting, removes the socket file if it is still the one
// Start made (the same file, compared by device and inode: a file put there
// since, such as another server's socket, stays), stops every connection
// (calls in flight are cancelled; a tools/call still answers "server is
// shutting down") and waits for them — each connection drains for at most
// 5 s ([engine.ConnOptions].DrainTimeout) — or for ctx (ctx's error). A
// Stop during a pending Start makes it fail with [engine.ErrStopped]. Safe
// to repeat, to call concurrently, and before Start (which then fails with
// [engine.ErrStopped]); after it returns nil, Wait returns at once.
func (s *Server) Stop(ctx context.Context) error { return s.life.Stop(ctx) }

// removeOwn removes path if it is still the file made (nil: nothing to
// remove). Between the check and the removal another server could replace
// the file; the window is one system call wide and needs a third party to
// remove a live socket first, the case this guards against.
func removeOwn(path string, made os.FileInfo) {
	if made == nil {
		return
	}
	if fi, err := os.Lstat(path); err == nil && os.SameFile(fi, made) {
		_ = os.Remove(path)
	}
}

// Path is the socket file.
func (s *Server) Path() string { return s.opts.Path }

// Wait blocks until the Server has ended: nil after Stop, else why (a
// failed Start's error included). Before Start it blocks until Start fails
// or Stop is called.
func (s *Server) Wait() error { return s.life.Wait() }
