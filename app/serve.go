package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmcp/agentmcp/adapters/agent"
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
}

// addServeFlags registers the flags every "agentmcp serve" command takes on
// fs: the one place for them (each serve command's setup calls it; the
// serve group's help lists them). A flag's usage text names its argument
// in back quotes, which the help shows as "--flag ARG".
func addServeFlags(fs *flag.FlagSet) *serveFlags {
	return &serveFlags{
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
	return "This server is an agent working in one directory (the workspace). " + submit +
		"You can also call the workspace tools directly: list_dir, read_file and search_text only read; write_file replaces a file and needs the user's approval, which the server asks for when it can (otherwise the write is refused). " +
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
}

// open opens the session (openSession) and builds the engine from the
// common flags, logging a failure.
func (f *serveFlags) open(logger *slog.Logger) (*served, bool) {
	s, ok := f.openSession(logger)
	if !ok {
		return nil, false
	}
	eng, err := engine.New(s, engine.Options{
		Name: "agentmcp", Version: Version, Logger: logger,
		SubmitTool: f.submitTool(), AskClient: *f.askClient, Instructions: f.instructions(),
	})
	if err != nil {
		s.Close()
		logger.Error("cannot build the engine", "err", err)
		return nil, false
	}
	return &served{session: s, eng: eng, logger: logger}, true
}

// close shuts the engine down (after the carrier has stopped: what is left
// are calls parked in input-required rounds) and closes the session.
func (s *served) close() {
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
func (f *serveFlags) openSession(logger *slog.Logger) (*servedSession, bool) {
	if *f.model == "" && (*f.modelURL != "" || *f.systemPromptFile != "" || *f.store.stateDir != "" || *f.store.ephemeral) {
		logger.Error("--model-url, --system-prompt-file, --state-dir and --ephemeral configure the agent, which --model turns on: add --model NAME")
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
	ws, err := workspace.New(workspace.Options{Root: *f.root, Logger: logger})
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
	a, err := agent.New(ws, model, agent.Options{SystemPrompt: systemPrompt, Workspace: workspaceName, Logger: logger,
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
		"apiKey", keyNote, "systemPrompt", promptNote)
	return &servedSession{Session: a, ws: ws, store: store}, true
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

// newLogger logs text records to stderr: stdout is the carrier's (stdio) or
// carries only the address line (HTTP).
func newLogger(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, nil))
}

// running is a started carrier, as the CLI drives it.
type running interface {
	Wait() error
	Stop(ctx context.Context) error
}

// stopGrace bounds the CLI's Stop: every carrier's own Stop returns within
// 5 s (docs/SPEC.md §3); the margin only guards against one that would not.
const stopGrace = 6 * time.Second

// stop stops c, logging a Stop that did not finish cleanly.
func stop(c running, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		logger.Warn("stop did not finish cleanly", "err", err)
	}
}

// serveUntilDone waits until c ends on its own (exit 0, or 1 with the
// failure logged) or ctx ends — SIGINT or SIGTERM — and then stops it (exit
// 0: calls in flight are answered "server is shutting down").
func serveUntilDone(ctx context.Context, c running, logger *slog.Logger) int {
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			logger.Error("carrier failed", "err", err)
			return 1
		}
		return 0
	case <-ctx.Done():
		stop(c, logger)
		return 0
	}
}
