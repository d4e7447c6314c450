// Command agentmcp serves an agent session as an MCP server.
//
//	agentmcp serve stdio|http|unix|remote [flags]
//	agentmcp record --out FILE [flags] -- COMMAND [ARGS...]
//	agentmcp conversations list|show|clear [flags]
//	agentmcp version      (or --version)
//	agentmcp help [COMMAND...]   (or -h, --help after any command)
//
// "agentmcp help serve http" (or "agentmcp serve http --help") lists a
// command's flags; the README and the guides under docs/ show them at work.
// Help goes to stdout with status 0; a usage error prints at most four
// lines on stderr with status 2. See app.Main for the exit codes.
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
