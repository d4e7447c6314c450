// Package engine is agentmcp's hand-written JSON-RPC 2.0 + MCP engine, shared
// by every carrier. A carrier frames bytes and decides who may talk; it hands
// each decoded frame to the engine and writes back what the engine returns.
//
// The engine serves both protocol eras (docs/SPEC.md §4): the initialize-era
// revisions 2024-11-05 … 2025-11-25 ("legacy") and the stateless 2026-07-28
// revision ("modern"), chosen per request. It exposes exactly the tools
// capability: tools/list (the session's runtime tools, then the submission
// tool) and tools/call (docs/SPEC.md §2–§3). Every other method is -32601.
//
// Two entry points exist: [Engine.NewStream] for a long-lived bidirectional
// stream (stdio, a Unix socket) and [Engine.Exchange] for one stateless
// request (an HTTP POST).
package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// Options configures an Engine. The zero value of each field means its
// default.
type Options struct {
	// Name and Version are the serverInfo the engine reports.
	Name, Version string
	// SubmitTool names the submission tool; zero means agent_submit with its
	// default description.
	SubmitTool domain.SubmitTool
	// Instructions, when set, is the instructions member of the initialize
	// and server/discover results (docs/SPEC.md §2): text a client may hand
	// its model, saying what the server's tools are for.
	Instructions string
	// ListTTL is the ttlMs of modern tools/list and server/discover results;
	// zero means 60 s, negative means 0.
	ListTTL time.Duration
	// AskClient lets prompts raised by a client's own call reach that client
	// (docs/SPEC.md §6). Off by default: every prompt settles closed.
	AskClient bool
	// RoundLifetime bounds a parked input-required round; zero means 30 min.
	RoundLifetime time.Duration
	// Logger receives operational logs (never tokens, arguments or answers);
	// nil discards.
	Logger *slog.Logger
}

// Engine serves one Session. It is safe for concurrent use by any number of
// streams and exchanges.
type Engine struct {
	session ports.Session
	submit  domain.SubmitTool
	info    serverInfo
	instr   string
	ttlMs   int64
	logger  *slog.Logger

	// stopping is closed by Shutdown; from then on new calls get the
	// shutting-down tool error.
	stopOnce sync.Once
	stopping chan struct{}

	// validated is the last catalog that passed validation, reused while the
	// session reports the same tools (docs/SPEC.md §2 allows caching the result while
	// the catalog is unchanged; comparing is far cheaper than validating).
	validated atomic.Pointer[domain.Catalog]

	// base is the context parked calls run on (not a request's, which ends
	// with the first answer); Shutdown cancels it.
	base       context.Context
	cancelBase context.CancelCauseFunc
	// rounds holds parked input-required rounds; nil while AskClient is off.
	rounds *domain.Rounds[*parked]
	// roundLifetime bounds a legacy elicitation's wait as well.
	roundLifetime time.Duration
	// parkedCalls counts the goroutines of calls running under rounds.
	parkedCalls sync.WaitGroup
}

type serverInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// ErrShuttingDown is the cause of contexts the engine cancels on Shutdown.
var ErrShuttingDown = errors.New("server is shutting down")

// New returns an engine serving session. It fails when the submission tool's
// name breaks the MCP tool-name rule ([domain.ErrInvalidSubmitName]) or
// session is nil.
func New(session ports.Session, opts Options) (*Engine, error) {
	if session == nil {
		return nil, errors.New("engine: nil session")
	}
	submit, err := opts.SubmitTool.Resolve()
	if err != nil {
		return nil, err
	}
	ttl := opts.ListTTL
	switch {
	case ttl == 0:
		ttl = 60 * time.Second
	case ttl < 0:
		ttl = 0
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	name := opts.Name
	if name == "" {
		name = "agentmcp"
	}
	version := opts.Version
	if version == "" {
		version = "0.0.0"
	}
	e := &Engine{
		session:  session,
		submit:   submit,
		info:     serverInfo{Name: name, Version: version},
		instr:    opts.Instructions,
		ttlMs:    ttl.Milliseconds(),
		logger:   logger,
		stopping: make(chan struct{}),
	}
	e.base, e.cancelBase = context.WithCancelCause(context.Background())
	if opts.AskClient {
		e.rounds = newRounds(opts.RoundLifetime)
		e.roundLifetime = e.rounds.Lifetime()
	}
	return e, nil
}

// Validate reads the session's catalog and validates it (docs/SPEC.md §2). Carriers
// call it at start, before any client connects or any port is bound; its
// error (a *domain.CatalogError or the session's) fails start-up.
func (e *Engine) Validate(ctx context.Context) error {
	_, err := e.catalog(ctx)
	return err
}

// Shutdown makes every later call answer "server is shutting down", cancels
// the calls parked in input-required rounds and settles their prompts
// closed. Calls in flight are cancelled by their carriers (streams:
// [Stream.Stop]; HTTP: the request context, with cause ErrShuttingDown).
func (e *Engine) Shutdown() {
	e.stopOnce.Do(func() {
		close(e.stopping)
		e.cancelBase(ErrShuttingDown)
		if e.rounds != nil {
			for _, p := range e.rounds.Drain() {
				p.call.abandon()
			}
		}
	})
}

// Wait blocks until every call the engine runs on goroutines of its own
// (calls under input-required rounds) has returned, or ctx ends, then
// returns ctx's error. Call it after Shutdown, which makes them end.
func (e *Engine) Wait(ctx context.Context) error { return waitGroup(ctx, &e.parkedCalls) }

// AskClient reports whether prompts may reach clients.
func (e *Engine) AskClient() bool { return e.rounds != nil }

func (e *Engine) isStopping() bool {
	select {
	case <-e.stopping:
		return true
	default:
		return false
	}
}

// catalog reads and validates the session's catalog. It runs on every
// tools/list and tools/call because a session's catalog may change.
func (e *Engine) catalog(ctx context.Context) (*domain.Catalog, error) {
	tools, err := e.session.RuntimeTools(ctx)
	if err != nil {
		return nil, err
	}
	if c := e.validated.Load(); c != nil && c.Same(tools) {
		return c, nil
	}
	c, err := domain.NewCatalog(tools, e.submit)
	if err != nil {
		return nil, err
	}
	e.validated.Store(c)
	return c, nil
}
