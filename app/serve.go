package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/agentmcp/agentmcp/adapters/agent"
	"github.com/agentmcp/agentmcp/adapters/metrics"
	"github.com/agentmcp/agentmcp/adapters/openai"
	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/secretenv"
	"github.com/agentmcp/agentmcp/ports"
)

// serveFlags are the flags every "agentmcp serve" command takes.
type serveFlags struct {
	root, submitName, submitDesc *string
	askClient                    *bool

	// The agent behind the submission tool (docs/SPEC.md §9).
	model, modelURL, systemPromptFile *string
	store                             *storeFlags // its conversations
	workspaceID                       *workspaceID
	maxTurns                          *int
	approvalTimeout                   *time.Duration
	noModelProbe                      *bool
	ui                                uiLink // the turn view's link (docs/SPEC.md §2 "The turn view")

	carrier     string        // the serve command's name ("stdio", "http", ...), set by check
	modelClient *openai.Model // --model's client, made by check; nil without --model

	// run_command (docs/SPEC.md §9 "Commands") and what its sandbox hides.
	cmds       *commandFlags
	hidden     hiddenPaths
	closeAfter io.Closer // what the session's end closes: the sandbox's launcher file

	tasks *taskFlags // the engine's tasks (docs/SPEC.md §14)

	*opsFlags // logging and metrics (docs/SPEC.md §13)
}

// addServeFlags registers the flags every "agentmcp serve" command takes on
// fs: the one place for them (each serve command's setup calls it; the
// serve group's help lists them). A flag's usage text names its argument
// in back quotes, which the help shows as "--flag ARG".
func addServeFlags(fs *flag.FlagSet) *serveFlags {
	f := &serveFlags{
		root:       fs.String("root", ".", "serve the files under `DIR`"),
		submitName: fs.String("submit-name", domain.DefaultSubmitName, "the submission tool's `NAME`"),
		submitDesc: fs.String("submit-description", domain.DefaultSubmitDescription, "the submission tool's description, a `TEXT`"),
		askClient:  fs.Bool("ask-client", false, "send permission and ask prompts to the calling client (only when you trust whoever can reach this carrier)"),
		model: fs.String("model", "", "turn on the agent behind the submission tool: the model `NAME` on an OpenAI-compatible "+
			"Chat Completions endpoint (the API key, if any, from OPENAI_API_KEY only)"),
		modelURL: fs.String("model-url", "", "the endpoint's base `URL` (default $OPENAI_BASE_URL when set, else "+openai.DefaultBaseURL+
			"; Ollama http://127.0.0.1:11434/v1, llama-server http://127.0.0.1:8080/v1)"),
		systemPromptFile: fs.String("system-prompt-file", "", "`PATH` of a file whose text replaces the agent's default system prompt"),
		store:            addStoreFlags(fs),
		maxTurns: intFlag(fs, "max-turns", agent.DefaultMaxTurns, 1, "at most `N` turns run at once, one per conversation; "+
			"more are refused as busy"),
		approvalTimeout: durationFlag(fs, "approval-timeout", agent.DefaultApprovalTimeout, time.Nanosecond, agent.DefaultTurnTimeout,
			"how long a turn's permission prompt or question waits for "+
				"an answer (a `DURATION` such as 5m, at most the turn's 30m); unanswered, it is denied and the turn stops"),
		noModelProbe: fs.Bool("no-model-probe", false, "do not check at start that the model endpoint answers "+
			"(a GET of its /models, at most "+modelProbeTimeout.String()+", never fatal)"),
		cmds: addCommandFlags(fs),
	}
	fs.Var(&f.ui, "ui", "for which clients agent_submit links the turn view, an MCP App: `WHEN` is auto (the default: "+
		"clients that declare the io.modelcontextprotocol/ui extension), always (every client: over legacy HTTP none can declare it) "+
		"or never (needs --model)")
	f.store.addLeaseFlag(fs)
	f.workspaceID = addWorkspaceIDFlag(fs, "name the workspace `ID` in the conversation store (letters, digits, . _ - : /) instead of "+
		"the root's real path: give it to replicas that mount one workspace at different paths (needs --model)")
	f.tasks = addTaskFlags(fs)
	f.opsFlags = addOpsFlags(fs)
	return f
}

// agentFlags configure the agent, which --model turns on: given without
// it, they are a usage error (serveRules).
var agentFlags = []string{"model-url", "system-prompt-file", "max-turns", "approval-timeout", "no-model-probe", "ui",
	"state-dir", "store", "store-password-file", "ephemeral", "history-bytes", "max-conversations", "max-conversations-per-principal", "max-store-bytes", "max-conversation-age",
	"lease", "workspace-id"}

// serveRules relate the flags every serve command takes (flagcheck.go).
var serveRules = append([]flagRule{
	{flags: agentFlags, needs: "model", why: "it configures the agent, which --model NAME turns on"},
	{flags: []string{"sandbox", "no-sandbox", "command-network"}, needs: "allow-commands", why: "it configures run_command, which --allow-commands turns on"},
	{flags: []string{"no-sandbox"}, excludes: "sandbox", why: "--no-sandbox is --sandbox none: give one or the other"},
	{flags: []string{"ephemeral"}, excludes: "state-dir", why: "--ephemeral keeps conversations in memory only: use one or the other"},
	{flags: []string{"ephemeral"}, excludes: "store", why: "--ephemeral keeps conversations in memory only: use one or the other"},
	{flags: []string{"lease"}, needs: "store", why: "it is the lease of a PostgreSQL --store's shared tasks and rounds"},
}, storeRules...)

// storeRules relate the store's flags, of every serve command and of the
// conversations commands.
var storeRules = []flagRule{
	{flags: []string{"store"}, excludes: "state-dir", why: "--store names the store itself (--state-dir DIR is --store sqlite:DIR/conversations.db): use one or the other"},
	{flags: []string{"store-password-file"}, needs: "store", why: "it is the password of --store's PostgreSQL database"},
}

// check finishes the common flags once they are parsed (their values and
// serveRules already checked), for the serve command inv runs: a usage
// error (exit 2, returned with false) for a submission tool name that
// breaks docs/SPEC.md §2's rule, an empty --model, a model endpoint
// openai.New refuses (a URL with credentials, not http or https) or task
// times out of order (taskFlags.check); --root made absolute, so logs and
// the workspace name the directory actually served.
func (f *serveFlags) check(inv *invocation) (int, bool) {
	f.carrier = inv.cmd.name
	if _, err := f.submitTool().Resolve(); err != nil {
		return inv.usageError("--submit-name %q: the name must match ^[A-Za-z0-9._-]{1,128}$", *f.submitName), false
	}
	if msg := f.tasks.check(); msg != "" {
		return inv.usageError("%s", msg), false
	}
	// --model "" is a mistake to name, not the same as leaving --model out.
	if flagWritten(inv.fs, "model") {
		if strings.TrimSpace(*f.model) == "" {
			return inv.usageError("--model needs a model NAME (leave --model out to serve without the agent)"), false
		}
		m, err := f.newModel(f.newLogger(inv.stderr))
		if err != nil {
			from := "--model-url"
			if *f.modelURL == "" {
				from = "$OPENAI_BASE_URL"
			}
			return inv.usageError("%s: %s", from, strings.TrimPrefix(err.Error(), "openai: ")), false
		}
		f.modelClient = m
	}
	if msg := f.cmds.check(f.carrier); msg != "" {
		return inv.usageError("%s", msg), false
	}
	if flagWritten(inv.fs, "lease") && !f.store.store.isPostgres() {
		return inv.usageError("--lease is the lease of a PostgreSQL store's shared tasks and rounds: give --store postgres://…"), false
	}
	if abs, err := filepath.Abs(*f.root); err == nil {
		*f.root = abs
	}
	return 0, true
}

// newModel is the model client --model, --model-url (else
// $OPENAI_BASE_URL) and $OPENAI_API_KEY name; it makes no request.
func (f *serveFlags) newModel(logger *slog.Logger) (*openai.Model, error) {
	baseURL := *f.modelURL
	if baseURL == "" {
		baseURL = os.Getenv("OPENAI_BASE_URL")
	}
	// The key is read back from the pipe secretenv.Reexec moved it onto.
	return openai.New(openai.Options{Model: *f.model, BaseURL: baseURL, APIKey: secretenv.Getenv("OPENAI_API_KEY"), Logger: logger})
}

// approvalCarriers are the serve commands whose clients are asked over
// HTTP, where only 2026-07-28 clients can be (docs/SPEC.md §6).
var approvalCarriers = map[string]string{
	"stdio":  "stream",
	"unix":   "stream",
	"http":   "http",
	"remote": "http",
}

// logApprovals logs, at start, who can approve the session's writes on
// this carrier (docs/SPEC.md §6): nobody without --ask-client; on HTTP only
// 2026-07-28 clients — a 2025-era HTTP client (the TypeScript SDK v1, v2 in
// its legacy mode, LangChain, mcp-use, Claude Code's HTTP client) cannot
// be asked, so its writes, and its agent's, are refused.
func (f *serveFlags) logApprovals(logger *slog.Logger) {
	switch {
	case !*f.askClient:
		logger.Info("approvals off: write_file and edit_file (and run_command) are refused, for clients and the agent alike; " +
			"start with --ask-client to let the calling client approve them")
	case approvalCarriers[f.carrier] == "http":
		logger.Warn("approvals: only 2026-07-28 clients can approve writes on this carrier (input-required rounds); " +
			"a 2025-era HTTP client (TypeScript SDK v1, LangChain, mcp-use, Claude Code over HTTP) cannot be asked, " +
			"so its writes are refused: serve it over stdio or a Unix socket to approve writes")
	default:
		logger.Info("approvals: the calling client approves writes when it declared form elicitation (2025-06-18 or later) " +
			"or speaks 2026-07-28; other clients' writes are refused")
	}
}

// uiLink is --ui: auto (the default), always or never, checked as the
// flag is parsed.
type uiLink struct{ link engine.ViewLink }

var uiLinks = map[string]engine.ViewLink{"auto": engine.ViewAuto, "always": engine.ViewAlways, "never": engine.ViewNever}

func (u *uiLink) String() string {
	for name, l := range uiLinks {
		if l == u.link {
			return name
		}
	}
	return "auto"
}

func (u *uiLink) Set(v string) error {
	l, ok := uiLinks[v]
	if !ok {
		return errors.New("must be auto, always or never")
	}
	u.link = l
	return nil
}

// view links agent_submit to the agent's turn view, for the clients --ui
// says; without --model there is no turn to view.
func (f *serveFlags) view() engine.ViewOptions {
	if *f.model == "" {
		return engine.ViewOptions{}
	}
	return engine.ViewOptions{ResourceURI: agent.ViewURI, Link: f.ui.link}
}

func (f *serveFlags) submitTool() domain.SubmitTool {
	return domain.SubmitTool{Name: *f.submitName, Description: *f.submitDesc}
}

// instructions is the text every serve command gives clients as the
// initialize and server/discover results' instructions (docs/SPEC.md §2):
// what the submission tool is for (and, without --model, that it is
// refused), what the other tools do, and that writes need the person's
// approval.
func (f *serveFlags) instructions() string {
	submit := "Hand it a task in plain language with " + *f.submitName + " {prompt}: the agent reads, searches and edits the workspace with its own tools and answers with the result of its turn; follow-up prompts continue the same conversation. "
	if *f.model == "" {
		submit = "Its " + *f.submitName + " tool is refused on this server: it was started without a model (--model). "
	}
	changers := "write_file and edit_file change a file and need"
	if *f.cmds.allow {
		changers = "write_file and edit_file change a file and run_command runs a shell command in the workspace; each needs"
	}
	return "This server is an agent working in one directory (the workspace). " + submit +
		"You can also call the workspace tools directly: list_dir, read_file, search_text and find_files only read; " + changers +
		" the user's approval, which the server asks for when it can (otherwise the call is refused). " +
		"Paths are relative to the workspace root."
}

// resourceURIs is how a serve command names the workspace's files as
// resources (docs/SPEC.md §2): file:// URIs for a local client,
// agentmcp://workspace/ ones on serve remote, whose clients never learn
// the server's paths (§9).
func resourceURIs(carrier string) workspace.ResourceURIs {
	if carrier == "remote" {
		return workspace.WorkspaceURIs
	}
	return workspace.FileURIs
}

// maxSystemPromptBytes bounds --system-prompt-file.
const maxSystemPromptBytes = 64 << 10

// servedSession is what a serve command serves: the reference workspace,
// with the agent in front of it when --model is set. Close releases the
// workspace.
type servedSession struct {
	ports.Session
	ws    *workspace.Session
	store *openedStore // the agent's conversations; nil without --model
	after io.Closer    // closed after the workspace; may be nil
}

// Conversations answers for the session it serves (the agent keeps named
// conversations, the bare workspace does not): the embedded interface
// alone would hide the agent's [ports.ConversationSession] from the engine.
func (s *servedSession) Conversations() bool { return ports.HasConversations(s.Session) }

// Features answers for the session it serves, for the same reason: the
// workspace's resources, through the agent when it is in front.
func (s *servedSession) Features() ports.Features { return ports.FeaturesOf(s.Session) }

func (s *servedSession) Close() error {
	err := s.ws.Close()
	if s.after != nil {
		err = errors.Join(err, s.after.Close())
	}
	if s.store != nil {
		err = errors.Join(err, s.store.close())
	}
	return err
}

// served is what every serve command serves: the session and the one
// engine its carrier takes.
type served struct {
	session *servedSession
	eng     *engine.Engine
	logger  *slog.Logger
	metrics *metrics.Metrics // nil without --metrics-listen
	scrape  *metricsServer
}

// open opens the session (openSession) and builds the engine from the
// common flags, with the metrics (--metrics-listen, whose listener it
// starts) and inv's observer watching both, logging a failure.
func (f *serveFlags) open(logger *slog.Logger, inv *invocation) (*served, bool) {
	addr, on := f.metricsListen.ap, f.metricsListen.on
	srv := &served{logger: logger}
	if on {
		srv.metrics = metrics.New(metrics.Options{Version: Version, Runtime: true,
			ParkedRounds: func() int { return srv.eng.Stats().ParkedRounds }})
	}
	var m ports.Observer
	if srv.metrics != nil {
		m = srv.metrics
	}
	observer := ports.Observers(m, inv.observer)
	s, ok := f.openSession(logger, observer)
	if !ok {
		return nil, false
	}
	opts := engine.Options{
		Name: "agentmcp", Version: Version, Logger: logger, Observer: observer,
		SubmitTool: f.submitTool(), AskClient: *f.askClient, Instructions: f.instructions(),
		Tasks: f.tasks.options(), View: f.view(),
	}
	if s.store != nil && s.store.calls != nil {
		opts.Calls = s.store.calls // docs/SPEC.md §14 "Replicas"
	}
	eng, err := engine.New(s, opts)
	if err != nil {
		s.Close()
		logger.Error("cannot build the engine: " + err.Error())
		return nil, false
	}
	srv.session, srv.eng = s, eng
	if on {
		if srv.scrape, err = startMetrics(addr, srv.metrics, logger); err != nil {
			s.Close()
			logger.Error("cannot serve metrics", "err", err)
			return nil, false
		}
	}
	f.logApprovals(logger)
	return srv, true
}

// close shuts the engine down (a no-op after [served.run], which did; else
// after a failed start, when no carrier is left) and closes the session.
func (s *served) close() {
	defer s.scrape.stop()
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	if err := s.eng.Shutdown(ctx); err != nil {
		s.logger.Warn("engine shutdown did not finish cleanly", "err", err)
	}
	s.session.Close()
}

// openSession opens the reference workspace session over --root and, with
// --model, puts the agent (adapters/agent on adapters/openai) in front of
// it, logging which model and endpoint it uses (never the key). A failure
// is logged and reported as false; what commands opened for the sandbox
// (closeAfter) is then released, else the session's Close releases it.
func (f *serveFlags) openSession(logger *slog.Logger, observer ports.Observer) (_ *servedSession, ok bool) {
	defer func() {
		if !ok && f.closeAfter != nil {
			f.closeAfter.Close()
		}
	}()
	var systemPrompt string
	if *f.systemPromptFile != "" {
		b, err := readSystemPrompt(*f.systemPromptFile)
		if err != nil {
			logger.Error("cannot use the system prompt file", "err", err)
			return nil, false
		}
		systemPrompt = b
	}
	cmds, ok := f.commands(logger)
	if !ok {
		return nil, false
	}
	ws, err := workspace.New(workspace.Options{Root: *f.root, Logger: logger, Commands: cmds, Resources: resourceURIs(f.carrier)})
	if err != nil {
		logger.Error("cannot open the workspace", "err", err)
		return nil, false
	}
	if *f.model == "" {
		logger.Info("no model configured: " + *f.submitName + " is refused (start with --model NAME and --model-url URL to turn the agent on)")
		return &servedSession{Session: ws, ws: ws, after: f.closeAfter}, true
	}
	key, model := secretenv.Getenv("OPENAI_API_KEY"), f.modelClient
	workspaceName := *f.root
	if abs, err := filepath.Abs(*f.root); err == nil {
		workspaceName = filepath.Base(abs)
	}
	root, err := f.workspaceID.key(*f.root)
	if err != nil {
		ws.Close()
		logger.Error("cannot resolve the workspace root", "err", err)
		return nil, false
	}
	store, err := f.store.open(logger, *f.maxTurns, root)
	if err != nil {
		ws.Close()
		logger.Error("cannot open the conversation store: " + err.Error())
		return nil, false
	}
	f.hidden.add(store.dir) // every principal's conversations: never a command's to read
	a, err := agent.New(ws, model, agent.Options{SystemPrompt: systemPrompt, Workspace: workspaceName, MaxTurns: *f.maxTurns,
		ApprovalTimeout: *f.approvalTimeout, Logger: logger, Observer: observer,
		Store: store.ConversationStore, Root: root, HistoryBytes: *f.store.historyBytes, MaxConversationsPerPrincipal: *f.store.maxPerPrincipal})
	if err != nil {
		ws.Close()
		store.close()
		logger.Error("cannot start the agent", "err", err)
		return nil, false
	}
	keyNote, promptNote := "none", "default"
	if key != "" {
		keyNote = "from OPENAI_API_KEY"
	}
	if systemPrompt != "" {
		promptNote = "from --system-prompt-file"
	}
	d := model.Describe()
	logger.Info("agent on: "+*f.submitName+" runs turns of the model", "model", d.Model, "endpoint", d.Endpoint,
		"apiKey", keyNote, "systemPrompt", promptNote, "maxTurns", *f.maxTurns)
	if key == "" && isHosted(d.Endpoint) {
		logger.Warn("no OPENAI_API_KEY: the hosted endpoint will refuse every turn; set OPENAI_API_KEY, "+
			"or point --model-url at a local server (Ollama http://127.0.0.1:11434/v1)", "endpoint", d.Endpoint)
	}
	if !*f.noModelProbe {
		probeModel(context.Background(), http.DefaultTransport, d.Endpoint, key, logger)
	}
	return &servedSession{Session: a, ws: ws, store: store, after: f.closeAfter}, true
}

// readSystemPrompt reads --system-prompt-file: UTF-8 text, not empty, at
// most 64 KiB.
func readSystemPrompt(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSystemPromptBytes+1))
	switch {
	case err != nil:
		return "", err
	case len(b) > maxSystemPromptBytes:
		return "", fmt.Errorf("%s is larger than %d bytes", path, maxSystemPromptBytes)
	case !utf8.Valid(b):
		return "", fmt.Errorf("%s is not UTF-8 text", path)
	case strings.TrimSpace(string(b)) == "":
		return "", fmt.Errorf("%s is empty", path)
	}
	return string(b), nil
}

// stopGrace bounds the CLI's own stops (a carrier whose start-up it
// abandons, the engine's Shutdown at exit): every carrier's Stop returns
// within 5 s (docs/SPEC.md §3); the margin only guards against one that
// would not.
const stopGrace = engine.StopTimeout + time.Second

// start starts c for a serve command. A Start cut short by ctx (SIGINT or
// SIGTERM) or by a Stop is a clean exit; any other failure is logged: an
// address in use as inUse, when given, a line that says what to do (a port
// in use suggests --port 0, docs/SPEC.md §15). ok is false when Start
// failed, with the exit code.
func start(ctx context.Context, c engine.Carrier, logger *slog.Logger, inUse string) (code int, ok bool) {
	err := c.Start(ctx)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, engine.ErrStopped) || ctx.Err() != nil:
		return 0, false
	case inUse != "" && errors.Is(err, syscall.EADDRINUSE):
		logger.Error(inUse)
		return 1, false
	}
	logger.Error("start failed", "err", err)
	return 1, false
}

// stop stops c, logging a Stop that did not finish cleanly.
func stop(c engine.Carrier, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		logger.Warn("stop did not finish cleanly", "err", err)
	}
}

// run serves on the started carrier c until it ends on its own (exit 0, or
// 1 with the failure logged) or ctx ends — SIGINT or SIGTERM — then stops
// it and shuts the engine down ([engine.Engine.Run]; exit 0: calls in
// flight are answered "server is shutting down").
func (s *served) run(ctx context.Context, c engine.Carrier) int {
	if err := s.eng.Run(ctx, c); err != nil {
		s.logger.Error("carrier failed", "err", err)
		return 1
	}
	return 0
}
