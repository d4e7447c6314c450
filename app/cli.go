package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/agentmcp/agentmcp/adapters/stdio"
	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/domain"
)

// Version is reported as serverInfo.version.
var Version = "0.1.0"

const usage = `usage:
  agentmcp serve stdio [--root DIR] [--submit-name NAME] [--submit-description TEXT] [--ask-client]
  agentmcp serve http [--root DIR] [--port N] [--token-file PATH] [--ask-client]
  agentmcp serve remote --public-url URL --issuer URL --scope S... (--allowed-subject SUB | --allowed-client ID)... [--listen IP:PORT] [--trusted-proxy IP]... [--root DIR] [--ask-client]

Serves the reference workspace session (list_dir, read_file, search_text,
write_file over DIR, and the submission tool) as an MCP server.

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
	root := fs.String("root", ".", "directory the reference session serves")
	submitName := fs.String("submit-name", domain.DefaultSubmitName, "name of the submission tool")
	submitDesc := fs.String("submit-description", domain.DefaultSubmitDescription, "description of the submission tool")
	askClient := fs.Bool("ask-client", false, "send permission and ask prompts to the calling client (only when you trust whoever can reach this carrier)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentmcp: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	session, err := workspace.New(workspace.Options{Root: *root, Logger: logger})
	if err != nil {
		logger.Error("cannot open the workspace", "err", err)
		return 1
	}
	defer session.Close()
	t, err := NewStdio(session, stdio.Options{
		Name: "agentmcp", Version: Version, Stdin: stdin, Stdout: stdout, Logger: logger,
		SubmitTool: domain.SubmitTool{Name: *submitName, Description: *submitDesc},
		AskClient:  *askClient,
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
	logger.Info("serving MCP on stdio", "root", *root)
	done := make(chan error, 1)
	go func() { done <- t.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			logger.Error("stdio carrier failed", "err", err)
			return 1
		}
		return 0
	case <-ctx.Done():
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := t.Stop(stopCtx); err != nil {
			logger.Warn("stop did not finish in time", "err", err)
		}
		return 0
	}
}
