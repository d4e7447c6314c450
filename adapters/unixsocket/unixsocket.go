// Package unixsocket is agentmcp's Unix-socket carrier (docs/SPEC.md §10):
// each connection is one newline-delimited JSON-RPC stream, framed exactly
// as stdio (MCP lets custom transports reuse the stdio framing), served by
// [engine.Engine.ServeConn]. The socket file is created with mode 0600 and
// every peer's credentials are checked before a frame is read: only
// processes of this process's user are served.
//
// Lifecycle: the Server is an [engine.Carrier] (docs/SPEC.md §5): [New] →
// [Server.Start] → [Server.Wait] / [Server.Stop], then the engine's
// Shutdown ([engine.Engine.Run] does the last two in order). The README's
// "Writing a carrier" walks through it.
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

var (
	errAlreadyStarted = fmt.Errorf("unixsocket: %w", engine.ErrAlreadyStarted)
	errStopped        = fmt.Errorf("unixsocket: %w", engine.ErrStopped)
)

// Server serves an engine on a Unix socket, once. Its methods are safe for
// concurrent use.
type Server struct {
	eng    *engine.Engine
	opts   Options
	logger *slog.Logger
	ctx    context.Context // every connection's; Stop cancels it
	cancel context.CancelFunc
	slots  chan struct{} // one per connection served
	conns  sync.WaitGroup

	mu       sync.Mutex // guards used, stopped, ln and err
	used     bool       // Start or Stop was called
	stopped  bool       // Stop was called
	ln       net.Listener
	made     os.FileInfo // the socket file Start created, to remove only it
	err      error
	done     chan struct{} // closed when serving has ended
	doneOnce sync.Once
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
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{eng: eng, opts: opts, logger: opts.Logger, ctx: ctx, cancel: cancel,
		slots: make(chan struct{}, opts.MaxConns), done: make(chan struct{})}, nil
}

var _ engine.Carrier = (*Server)(nil)

// Start validates the catalog, replaces a stale socket file, listens with
// mode 0600 and serves. It fails with an error wrapping
// [engine.ErrAlreadyStarted] (a second Start) or [engine.ErrStopped] (Stop
// came first, or during the validation: then nothing was bound), the
// catalog's error, ctx's error (ctx bounds start-up only), ErrInUse,
// ErrNotSocket, or the listen error; a failed Start ends the Server.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	switch {
	case s.stopped:
		s.mu.Unlock()
		return errStopped
	case s.used:
		s.mu.Unlock()
		return errAlreadyStarted
	}
	s.used = true
	s.mu.Unlock()

	// The validation is cut short by ctx or by Stop (which cancels s.ctx).
	vctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	err := s.eng.Validate(vctx)
	stop()
	cancel()

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped { // Stop waits for this end
		s.end(nil)
		return errStopped
	}
	if err == nil {
		s.ln, err = s.listen()
	} else if ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		s.end(err)
		return err
	}
	s.made, _ = os.Lstat(s.opts.Path) // nil if it is already gone: then Stop removes nothing
	go s.accept(s.ln)
	return nil
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

func (s *Server) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			s.conns.Wait()
			if s.ctx.Err() != nil {
				err = nil // Stop closed the listener
			}
			s.end(err)
			return
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
			err := s.eng.ServeConn(s.ctx, c, c, engine.ConnOptions{Close: c.Close})
			if err != nil && !errors.Is(err, engine.ErrInputClosed) {
				s.logger.Debug("unixsocket: connection ended", "err", err)
			}
		}()
	}
}

// end records why serving ended, once, and releases Wait.
func (s *Server) end(err error) {
	s.doneOnce.Do(func() { s.err = err; close(s.done) })
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
func (s *Server) Stop(ctx context.Context) error {
	s.cancel()
	s.mu.Lock()
	s.stopped = true
	ln, made := s.ln, s.made
	s.made = nil
	if !s.used {
		s.used = true
		s.end(nil)
	}
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
		removeOwn(s.opts.Path, made)
	}
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

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
func (s *Server) Wait() error {
	<-s.done
	return s.err
}
