// Command agentmcp serves an agent session as an MCP server.
//
//	agentmcp serve stdio  [--root DIR] [--submit-name NAME] [--submit-description TEXT] [--ask-client]
//	agentmcp serve http   [--root DIR] [--port N] [--token-file PATH] [--submit-name NAME] [--submit-description TEXT] [--ask-client]
//	agentmcp serve unix   --socket PATH [--root DIR] [--submit-name NAME] [--submit-description TEXT] [--ask-client]
//	agentmcp serve remote --public-url URL --issuer URL --scope S... (--allowed-subject SUB | --allowed-client ID)...
//	                      [--listen IP:PORT] [--trusted-proxy IP]... [--root DIR] [--submit-name NAME] [--submit-description TEXT] [--ask-client]
//	agentmcp conversations list|show|clear [--root DIR] [--state-dir DIR]
//	agentmcp version      (or --version)
//	agentmcp help [COMMAND...]   (or -h, --help after any command)
//
// Every serve command also takes --model NAME [--model-url URL]
// [--system-prompt-file PATH] [--max-turns N] [--state-dir DIR | --ephemeral]:
// the agent behind agent_submit, on an OpenAI-compatible endpoint (the key
// from OPENAI_API_KEY), its conversations kept in DIR; and
// --allow-commands [--sandbox bubblewrap|landlock|none] [--command-network]:
// the run_command tool, sandboxed with bubblewrap and Landlock by default.
//
// Flags take one dash or two (-root, --root). Help goes to stdout with
// status 0; a usage error prints one line and the usage on stderr with
// status 2. See app.Main for the exit codes and the README for client
// configuration.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentmcp/agentmcp/adapters/landlock"
	"github.com/agentmcp/agentmcp/app"
)

func main() {
	// First: when this process is run_command's sandbox launcher (the
	// binary re-executed by landlock.Wrap), restrict it and exec the
	// command; it never returns then.
	landlock.Main()
	// Then a serve command starts again without its secrets (the API key)
	// in its environment, where any process of the user could read them.
	app.KeepSecretsOutOfEnvironment(os.Args[1:])
	// A write to a closed stdout must fail with EPIPE, so the stdio carrier
	// reports the broken output (Wait returns it, exit 1) instead of the
	// runtime killing the process with SIGPIPE (os/signal, "SIGPIPE").
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
