// Package engine is agentmcp's MCP server: a hand-written JSON-RPC 2.0 +
// MCP engine, built once by the composition root and served by every
// carrier. A carrier frames bytes and decides who may talk; the engine
// does everything else.
//
// It serves both protocol eras (docs/SPEC.md §4): the initialize-era
// revisions 2024-11-05 … 2025-11-25 ("legacy") and the stateless 2026-07-28
// revision ("modern"), chosen per request. Its methods are one table
// (methods.go): initialize and ping (legacy), server/discover (modern),
// tools/list and tools/call (docs/SPEC.md §2–§3), and the tasks/* methods
// of each era's tasks (§14). Every other method is -32601.
//
// Two entry points, one pipeline behind them (decode, era, validation,
// dispatch, encode — each written once):
//
//   - [Engine.ServeConn] serves one long-lived newline-delimited stream
//     (stdio, a Unix-socket connection) over internal/jsonrpc's Conn: one
//     client, one legacy negotiation, one in-flight id space,
//     server-to-client requests (legacy elicitation) and
//     notifications/cancelled.
//   - [Engine.Exchange] serves one stateless request body (a Streamable HTTP
//     POST) and returns an [Outcome] kind that the HTTP framing maps to a
//     status.
//
// Every carrier has the one lifecycle of [Carrier] (carrier.go). The engine
// knows no HTTP: a carrier hands it normalised header values and maps its
// [Outcome] kinds to its own terms.
//
// The files follow the concerns: handle.go (the pipeline, tools/list and
// tools/call), methods.go (the method table and callMode, what a
// tools/call becomes), call.go (a call's one state machine and its one
// Caller), index.go (the calls a client reaches by name, with their
// bounds), shared.go and replicas.go (those names in a store replicas
// share, and what replicas send each other), rounds.go (input-required
// rounds), tasks.go (both eras' tasks),
// conn.go (streams), exchange.go (stateless exchanges), observe.go (the
// Observer), carrier.go (the carrier lifecycle), codec.go and versions.go.
// JSON text in and out is internal/jsonrpc's.
package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/jsonrpc"
	"github.com/agentmcp/agentmcp/ports"

	"github.com/agentmcp/agentmcp/internal/logs"
)

// Options configures an Engine. The zero value of each field means its
// default.
type Options struct {
	// Name and Version are the serverInfo the engine reports; defaults
	// "agentmcp" and "0.0.0".
	Name, Version string
	// SubmitTool names, describes and annotates the submission tool; zero
	// means agent_submit with its defaults (docs/SPEC.md §2).
	SubmitTool domain.SubmitTool
	// Instructions, when set, is the instructions member of the initialize
	// and server/discover results (docs/SPEC.md §2): text a client may hand
	// its model, saying what the server's tools are for.
	Instructions string
	// ListTTL is the ttlMs of modern tools/list and server/discover results;
	// zero means 60 s, negative means 0.
	ListTTL time.Duration
	// AskClient lets prompts raised by a client's own call reach that client
	// (docs/SPEC.md §6). Off by default: every prompt settles closed. Turn
	// it on only when you trust whoever can reach the carriers serving this
	// engine to approve the session's tool calls.
	AskClient bool
	// RoundLifetime bounds a parked input-required round and a legacy
	// elicitation's wait; zero means 30 min, the most allowed.
	RoundLifetime time.Duration
	// Observer, when set, is told when each request that reaches the
	// session starts and ends (docs/SPEC.md §13), for metrics and traces;
	// the context it returns is the one the request runs in.
	Observer ports.Observer
	// Tasks bounds and times the 2026-07-28 tasks extension's tasks
	// (docs/SPEC.md §14).
	Tasks TaskOptions
	// View links the submission tool to an MCP App view the session
	// serves, for the clients View.Link says (docs/SPEC.md §2 "The turn
	// view"); zero links none.
	View ViewOptions
	// Calls, when set, is a store this engine shares with the other
	// replicas of one server (docs/SPEC.md §14 "Replicas"): its HTTP
	// clients' tasks and input-required rounds are named there, so a task
	// created through one replica is read, answered and cancelled through
	// any, and a round's retry that reaches another replica is carried to
	// the call; the calls themselves run where they started. New joins it
	// (its error is New's); Shutdown leaves it. nil: tasks and rounds live
	// in this process only, the default. A stream's tasks and rounds are
	// always this process's, and a plain tools/call never reaches it.
	Calls ports.CallStore
	// Logger receives operational logs (never tokens, arguments or
	// answers); nil discards. Carriers built on this engine log to it too
	// unless given their own.
	Logger *slog.Logger
}

// Engine serves one Session to any number of carriers. It is safe for
// concurrent use.
type Engine struct {
	session ports.Session
	// features are the session's optional server features, read once by
	// New (docs/SPEC.md §2).
	features ports.Features
	submit   domain.SubmitTool
	ttlMs    int64
	logger   *slog.Logger
	observe  ports.Observer // nil: none
	// serverInfo and the modern _meta, encoded once.
	infoJSON, metaJSON []byte
	instructions       string
	// viewMeta is the submission tool's _meta when it links the view (nil:
	// it never does); viewAlways links it for every client.
	viewMeta   []byte
	viewAlways bool

	// validated is the last catalog that passed validation, reused while the
	// session reports the same tools (docs/SPEC.md §2 allows caching the
	// result while the catalog is unchanged; comparing is far cheaper than
	// validating).
	validated atomic.Pointer[domain.Catalog]

	// base is the parent of every call's context; Shutdown cancels it with
	// cause ErrShuttingDown, which ends every call on every carrier.
	base       context.Context
	cancelBase context.CancelCauseFunc
	// calls counts the goroutines the engine runs: streams' requests,
	// batch elements and calls that outlive their request. Shutdown waits
	// for them; once stopped is set (under mu) no new one starts.
	calls   sync.WaitGroup
	mu      sync.Mutex
	stopped bool

	// askClient: prompts may reach the client of the call that raised them
	// (docs/SPEC.md §6); roundLifetime bounds a parked round and a
	// prompt's wait.
	askClient     bool
	roundLifetime time.Duration
	taskOpts      TaskOptions // with the defaults

	// index holds every call a client reaches by a name (index.go).
	index index
	// shared is the index's names when they are a shared store's (nil:
	// in memory), for what only replicas do: a retry or a dropped answer
	// whose call runs on another replica.
	shared *sharedNames
	// closeNames closes the index's names once, after Shutdown's wait.
	closeNames sync.Once
	closeErr   error
}

// ErrShuttingDown is the cause of the contexts the engine cancels on
// Shutdown; a carrier that stops may cancel its requests with it too, so a
// tools/call answers "server is shutting down" (docs/SPEC.md §3 "Ending").
var ErrShuttingDown = errors.New("server is shutting down")

// New returns an engine serving session. It fails when session is nil,
// the submission tool's name breaks the MCP tool-name rule
// ([domain.ErrInvalidSubmitName]) or View names a resource that is not a
// ui:// URI.
func New(session ports.Session, opts Options) (*Engine, error) {
	if session == nil {
		return nil, errors.New("engine: nil session")
	}
	submit, err := opts.SubmitTool.Resolve()
	if err != nil {
		return nil, err
	}
	if ports.HasConversations(session) { // docs/SPEC.md §2, §9
		submit = submit.WithConversations(ports.TurnResultSchema)
	}
	vmeta, err := viewMeta(opts.View)
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
	logger := logs.OrDiscard(opts.Logger)
	name, version := opts.Name, opts.Version
	if name == "" {
		name = "agentmcp"
	}
	if version == "" {
		version = "0.0.0"
	}
	info := jsonrpc.AppendString(append(jsonrpc.AppendString([]byte(`{"name":`), name), `,"version":`...), version)
	info = append(info, '}')
	e := &Engine{
		session:      session,
		features:     ports.FeaturesOf(session),
		submit:       submit,
		ttlMs:        ttl.Milliseconds(),
		logger:       logger,
		infoJSON:     info,
		metaJSON:     append(append([]byte(`{"`+metaServerInfo+`":`), info...), '}'),
		instructions: opts.Instructions,
		observe:      opts.Observer,
		viewMeta:     vmeta,
		viewAlways:   opts.View.Link == ViewAlways,
	}
	e.base, e.cancelBase = context.WithCancelCause(context.Background())
	e.askClient = opts.AskClient
	e.roundLifetime = opts.RoundLifetime
	if e.roundLifetime <= 0 || e.roundLifetime > domain.MaxRoundLifetime {
		e.roundLifetime = domain.MaxRoundLifetime
	}
	e.taskOpts = opts.Tasks.withDefaults()
	local := newMemNames(opts.AskClient, e.roundLifetime, e.taskOpts)
	e.index.names = local
	if opts.Calls != nil {
		shared, err := newSharedNames(e, opts.Calls, local)
		if err != nil {
			return nil, err
		}
		e.index.names, e.shared = shared, shared
	}
	return e, nil
}

// Logger is the engine's logger (never nil), for carriers built on it.
func (e *Engine) Logger() *slog.Logger { return e.logger }

// Validate reads the session's catalog and validates it (docs/SPEC.md §2).
// Carriers call it at start, before any client connects or any port is
// bound; its error (a *domain.CatalogError or the session's) fails start-up.
func (e *Engine) Validate(ctx context.Context) error {
	_, err := e.catalog(ctx)
	return err
}

// Shutdown ends everything the engine serves: from now on every call is
// answered "server is shutting down" (a tools/call as that tool error,
// anything else -32603); the calls in flight on every carrier are cancelled
// with cause [ErrShuttingDown] (where the carrier can still write, a
// tools/call answers "server is shutting down"); [Engine.ServeConn] calls
// stop serving and return; parked input-required rounds settle closed;
// running tasks are cancelled (statusMessage "server is shutting down"),
// and every task is forgotten once its call has returned. It
// then waits until every goroutine the engine started has returned, or ctx
// ends (returning ctx's error; the calls keep being cancelled). Safe to
// repeat and to call concurrently.
//
// Carriers own their listeners and connections: stop them first (their Stop
// answers what they can still write), then shut the engine down;
// [Engine.Run] does both in that order.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	first := !e.stopped
	e.stopped = true
	e.mu.Unlock()
	if first {
		e.cancelBase(ErrShuttingDown)
		rounds, tasks := e.index.drain()
		for _, in := range rounds {
			in.c.leave(ErrShuttingDown)
		}
		for _, c := range tasks {
			c.stop(ErrShuttingDown, ErrShuttingDown.Error())
		}
	}
	if err := waitGroup(ctx, &e.calls); err != nil {
		return err
	}
	// Every call has returned: what a shared store is owed is written.
	e.closeNames.Do(func() { e.closeErr = e.index.close(ctx) })
	return e.closeErr
}

// goCall runs f on a goroutine Shutdown waits for, unless the engine has
// stopped (then it reports false and f does not run).
func (e *Engine) goCall(f func()) bool {
	e.mu.Lock()
	if e.stopped {
		e.mu.Unlock()
		return false
	}
	e.calls.Add(1)
	e.mu.Unlock()
	go func() {
		defer e.calls.Done()
		f()
	}()
	return true
}

func (e *Engine) isStopping() bool { return e.base.Err() != nil }

// catalog reads and validates the session's catalog. It runs on every
// tools/list and tools/call because a session's catalog may change.
func (e *Engine) catalog(ctx context.Context) (*domain.Catalog, error) {
	tools, err := e.runtimeTools(ctx)
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

// errCatalogPanic is the error of a catalog read whose session panicked
// (docs/SPEC.md §3): a fixed message, never the panic's value.
var errCatalogPanic = errors.New("Internal error: the session failed while listing its tools")

// runtimeTools is the session's RuntimeTools with its panic recovered as
// errCatalogPanic, logged like recoverSession's.
func (e *Engine) runtimeTools(ctx context.Context) (tools []domain.Tool, err error) {
	defer func() {
		if v := recover(); v != nil {
			e.logPanic(v, "engine: the session panicked listing its tools")
			tools, err = nil, errCatalogPanic
		}
	}()
	return e.session.RuntimeTools(ctx)
}

// waitGroup waits for wg until ctx ends.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
