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
	"time"
	"unicode/utf8"

	"github.com/agentmcp/agentmcp/adapters/agent"
	"github.com/agentmcp/agentmcp/adapters/landlock"
	"github.com/agentmcp/agentmcp/adapters/metrics"
	"github.com/agentmcp/agentmcp/adapters/openai"
	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/ports"
)

// serveFlags are the flags every "agentmcp serve" command takes.
type serveFlags struct {
	root, submitName, submitDesc *string
	askClient                    *bool

	// The agent behind the submission tool (docs/SPEC.md §9).
	model, modelURL, systemPromptFile *string
	store                             *storeFlags // its conversations
	maxTurns                          *int
	approvalTimeout                   *time.Duration
	noModelProbe                      *bool

	carrier string // the serve command's name ("stdio", "http", ...), set by check

	// run_command (docs/SPEC.md §9 "Commands").
	allowCommands, noSandbox *bool

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
		systemPromptFile: fs.String("system-prompt-file", "", "`PATH` of a file whose text replaces the agent's default system prompt (needs --model)"),
		store:            addStoreFlags(fs),
		maxTurns: fs.Int("max-turns", agent.DefaultMaxTurns, "at most `N` turns run at once, one per principal's conversation; "+
			"more are refused as busy (needs --model)"),
		approvalTimeout: fs.Duration("approval-timeout", agent.DefaultApprovalTimeout, "how long a turn's permission prompt or question waits for "+
			"an answer (a `DURATION` such as 5m, at most the turn's 30m); unanswered, it is denied and the turn stops (needs --model)"),
		noModelProbe: fs.Bool("no-model-probe", false, "do not check at start that the model endpoint answers "+
			"(a GET of its /models, at most "+modelProbeTimeout.String()+", never fatal)"),
		allowCommands: fs.Bool("allow-commands", false, "add the run_command tool: shell commands in the workspace, each approved by the user, "+
			"sandboxed with Landlock (writes only under the workspace and a private temporary directory)"),
		noSandbox: fs.Bool("no-sandbox", false, "with --allow-commands, run commands without the Landlock sandbox (needed where the kernel has no Landlock)"),
	}
	f.tasks = addTaskFlags(fs)
	f.opsFlags = addOpsFlags(fs)
	return f
}

// check finishes the common flags once they are parsed, for the serve
// command inv runs: a usage error (exit 2, returned with false) for a
// submission tool name that breaks docs/SPEC.md §2's rule, an empty
// --model or a task bound or time out of range (taskFlags.check); --root made absolute, so logs and the workspace name the
// directory actually served.
func (f *serveFlags) check(inv *invocation) (int, bool) {
	f.carrier = inv.cmd.name
	if _, err := f.submitTool().Resolve(); err != nil {
		return inv.usageError("--submit-name %q: the name must match ^[A-Za-z0-9._-]{1,128}$", *f.submitName), false
	}
	modelSet := false
	inv.fs.Visit(func(fl *flag.Flag) { modelSet = modelSet || fl.Name == "model" })
	if modelSet && strings.TrimSpace(*f.model) == "" {
		return inv.usageError("--model needs a model NAME (leave --model out to serve without the agent)"), false
	}
	if msg := f.tasks.check(); msg != "" {
		return inv.usageError("%s", msg), false
	}
	if abs, err := filepath.Abs(*f.root); err == nil {
		*f.root = abs
	}
	return 0, true
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
		logger.Info("approvals off: write_file is refused, for clients and the agent alike; " +
			"start with --ask-client to let the calling client approve writes")
	case approvalCarriers[f.carrier] == "http":
		logger.Warn("approvals: only 2026-07-28 clients can approve writes on this carrier (input-required rounds); " +
			"a 2025-era HTTP client (TypeScript SDK v1, LangChain, mcp-use, Claude Code over HTTP) cannot be asked, " +
			"so its writes are refused: serve it over stdio or a Unix socket to approve writes")
	default:
		logger.Info("approvals: the calling client approves writes when it declared form elicitation (2025-06-18 or later) " +
			"or speaks 2026-07-28; other clients' writes are refused")
	}
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
	if *f.allowCommands {
		changers = "write_file and edit_file change a file and run_command runs a shell command in the workspace; each needs"
	}
	return "This server is an agent working in one directory (the workspace). " + submit +
		"You can also call the workspace tools directly: list_dir, read_file, search_text and find_files only read; " + changers +
		" the user's approval, which the server asks for when it can (otherwise the call is refused). " +
		"Paths are relative to the workspace root."
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
}

func (s *servedSession) Close() error {
	err := s.ws.Close()
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
	eng, err := engine.New(s, engine.Options{
		Name: "agentmcp", Version: Version, Logger: logger, Observer: observer,
		SubmitTool: f.submitTool(), AskClient: *f.askClient, Instructions: f.instructions(),
		Tasks: f.tasks.options(),
	})
	if err != nil {
		s.Close()
		logger.Error("cannot build the engine", "err", err)
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
// is logged and reported as false.
func (f *serveFlags) openSession(logger *slog.Logger, observer ports.Observer) (*servedSession, bool) {
	if *f.model == "" && (*f.modelURL != "" || *f.systemPromptFile != "" || *f.maxTurns != agent.DefaultMaxTurns ||
		*f.approvalTimeout != agent.DefaultApprovalTimeout || *f.store.stateDir != "" || *f.store.ephemeral) {
		logger.Error("--model-url, --system-prompt-file, --max-turns, --approval-timeout, --state-dir and --ephemeral configure the agent, which --model turns on: add --model NAME")
		return nil, false
	}
	if *f.maxTurns < 1 {
		logger.Error("--max-turns must be at least 1")
		return nil, false
	}
	if *f.approvalTimeout <= 0 || *f.approvalTimeout > agent.DefaultTurnTimeout {
		logger.Error("--approval-timeout must be more than 0 and at most " + agent.DefaultTurnTimeout.String())
		return nil, false
	}
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
	ws, err := workspace.New(workspace.Options{Root: *f.root, Logger: logger, Commands: cmds})
	if err != nil {
		logger.Error("cannot open the workspace", "err", err)
		return nil, false
	}
	if *f.model == "" {
		logger.Info("no model configured: " + *f.submitName + " is refused (start with --model NAME and --model-url URL to turn the agent on)")
		return &servedSession{Session: ws, ws: ws}, true
	}
	baseURL := *f.modelURL
	if baseURL == "" {
		baseURL = os.Getenv("OPENAI_BASE_URL")
	}
	key := os.Getenv("OPENAI_API_KEY")
	model, err := openai.New(openai.Options{Model: *f.model, BaseURL: baseURL, APIKey: key, Logger: logger})
	if err != nil {
		ws.Close()
		logger.Error("cannot use the model endpoint", "err", err)
		return nil, false
	}
	workspaceName := *f.root
	if abs, err := filepath.Abs(*f.root); err == nil {
		workspaceName = filepath.Base(abs)
	}
	root, err := realRoot(*f.root)
	if err != nil {
		ws.Close()
		logger.Error("cannot resolve the workspace root", "err", err)
		return nil, false
	}
	store, err := f.store.open(logger)
	if err != nil {
		ws.Close()
		logger.Error("cannot open the conversation store: " + err.Error())
		return nil, false
	}
	a, err := agent.New(ws, model, agent.Options{SystemPrompt: systemPrompt, Workspace: workspaceName, MaxTurns: *f.maxTurns,
		ApprovalTimeout: *f.approvalTimeout, Logger: logger, Observer: observer,
		Store: store, Root: root, HistoryBytes: *f.store.historyBytes})
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
	return &servedSession{Session: a, ws: ws, store: store}, true
}

// commands configures run_command from --allow-commands and --no-sandbox:
// nil without --allow-commands; sandboxed with Landlock unless
// --no-sandbox. Where the kernel offers no Landlock, --allow-commands
// alone fails start-up with one line that says so and names --no-sandbox.
func (f *serveFlags) commands(logger *slog.Logger) (*workspace.Commands, bool) {
	switch {
	case !*f.allowCommands && *f.noSandbox:
		logger.Error("--no-sandbox configures run_command, which --allow-commands turns on: add --allow-commands")
		return nil, false
	case !*f.allowCommands:
		return nil, true
	case *f.noSandbox:
		logger.Warn("run_command is on WITHOUT a sandbox (--no-sandbox): an approved command can do whatever this user can")
		return &workspace.Commands{}, true
	}
	abi, err := landlockAvailable()
	if err != nil {
		logger.Error("--allow-commands sandboxes commands with Landlock, and " + err.Error() + ": add --no-sandbox to run them without a sandbox")
		return nil, false
	}
	logger.Info("run_command is on, sandboxed with Landlock", "abi", abi)
	return &workspace.Commands{Sandbox: landlock.Wrap}, true
}

// landlockAvailable is landlock.Available; tests replace it to play a
// kernel without Landlock.
var landlockAvailable = landlock.Available

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
