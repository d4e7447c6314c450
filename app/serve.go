package app

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"time"

	"github.com/agentmcp/agentmcp/adapters/engine"
	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/domain"
)

// serveFlags are the flags every "agentmcp serve" command takes.
type serveFlags struct {
	root, submitName, submitDesc *string
	askClient                    *bool
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
	}
}

func (f *serveFlags) submitTool() domain.SubmitTool {
	return domain.SubmitTool{Name: *f.submitName, Description: *f.submitDesc}
}

// instructions is the text every serve command gives clients as the
// initialize and server/discover results' instructions (docs/SPEC.md §2):
// what the submission tool is for, what the other tools do, and that writes
// need the person's approval.
func (f *serveFlags) instructions() string {
	return "This server is an agent working in one directory (the workspace). " +
		"Hand it a task in plain language with " + *f.submitName + " {prompt}: the agent reads, searches and edits the workspace with its own tools and answers with the result of its turn; follow-up prompts continue the same conversation. " +
		"You can also call the workspace tools directly: list_dir, read_file and search_text only read; write_file replaces a file and needs the user's approval, which the server asks for when it can (otherwise the write is refused). " +
		"Paths are relative to the workspace root."
}

// served is what every serve command serves: the reference session and the
// one engine its carrier takes.
type served struct {
	session *workspace.Session
	eng     *engine.Engine
	logger  *slog.Logger
}

// open opens the reference workspace session over --root and builds the
// engine from the common flags, logging a failure.
func (f *serveFlags) open(logger *slog.Logger) (*served, bool) {
	s, err := workspace.New(workspace.Options{Root: *f.root, Logger: logger})
	if err != nil {
		logger.Error("cannot open the workspace", "err", err)
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
