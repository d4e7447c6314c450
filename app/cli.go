package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/agentmcp/agentmcp/adapters/stdio"
)

// Version is reported as serverInfo.version.
var Version = "0.1.0"

const usage = `usage:
  agentmcp serve stdio [--root DIR] [--submit-name NAME] [--submit-description TEXT] [--ask-client]
  agentmcp serve http [--root DIR] [--port N] [--token-file PATH] [--submit-name NAME] [--submit-description TEXT] [--ask-client]
  agentmcp serve remote --public-url URL --issuer URL --scope S... (--allowed-subject SUB | --allowed-client ID)... [--listen IP:PORT] [--trusted-proxy IP]... [--root DIR] [--ask-client]

Serves the reference workspace session (list_dir, read_file, search_text,
write_file over DIR, and the submission tool) as an MCP server.

--model NAME turns on the agent behind the submission tool, on any
OpenAI-compatible Chat Completions endpoint: --model-url URL (default
$OPENAI_BASE_URL, else https://api.openai.com/v1; Ollama:
http://127.0.0.1:11434/v1), the key from OPENAI_API_KEY only,
--system-prompt-file PATH to replace its system prompt. Without --model the
submission tool is refused.

--ask-client sends the session's permission and ask prompts to the MCP client
that made the call (elicitation, or input-required rounds). Turn it on only
when you trust whoever can reach the carrier to approve the session's tool
calls: an approval lets the session write files under DIR.`

// Main runs the command line with args (without the program name) and
// returns the process exit code: 0 on a clean end (stdin closed, SIGINT or
// SIGTERM through ctx), 1 on a failure, 2 on a usage error. Logs go to
// stderr; stdout carries only MCP messages.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 2 || args[0] != "serve" {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	switch args[1] {
	case "stdio":
		return serveStdio(ctx, args[2:], stdin, stdout, stderr)
	case "http":
		return serveHTTP(ctx, args[2:], stdout, stderr)
	case "remote":
		return serveRemote(ctx, args[2:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "agentmcp: unknown carrier %q\n%s\n", args[1], usage)
	return 2
}

func serveStdio(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentmcp serve stdio", flag.ContinueOnError)
	fs.SetOutput(stderr)
	common := addServeFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentmcp: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	logger := newLogger(stderr)
	session, ok := common.openSession(logger)
	if !ok {
		return 1
	}
	defer session.Close()
	t, err := NewStdio(session, stdio.Options{
		Name: "agentmcp", Version: Version, Stdin: stdin, Stdout: stdout, Logger: logger,
		SubmitTool: common.submitTool(), AskClient: *common.askClient, Instructions: common.instructions(),
	})
	if err != nil {
		logger.Error("cannot serve stdio", "err", err)
		return 1
	}
	if err := t.Start(ctx); err != nil {
		if errors.Is(err, stdio.ErrInputClosed) {
			return 0
		}
		logger.Error("start failed", "err", err)
		return 1
	}
	logger.Info("serving MCP on stdio", "root", *common.root)
	return serveUntilDone(ctx, t, logger)
}
