// Command agentmcp serves an agent session as an MCP server.
//
//	agentmcp serve stdio  [--root DIR] [--submit-name NAME] [--submit-description TEXT] [--ask-client]
//	agentmcp serve http   [--root DIR] [--port N] [--token-file PATH] [--ask-client]
//	agentmcp serve remote --public-url URL --issuer URL --scope S... (--allowed-subject SUB | --allowed-client ID)...
//	                      [--listen IP:PORT] [--trusted-proxy IP]... [--root DIR] [--ask-client]
//
// Every serve command also takes --model NAME [--model-url URL]
// [--system-prompt-file PATH]: the agent behind agent_submit, on an
// OpenAI-compatible endpoint (the key from OPENAI_API_KEY).
//
// See app.Main for exit codes and the README for client configuration.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentmcp/agentmcp/app"
)

func main() {
	// A write to a closed stdout must fail with EPIPE, so the stdio carrier
	// reports the broken output (Wait returns it, exit 1) instead of the
	// runtime killing the process with SIGPIPE (os/signal, "SIGPIPE").
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
