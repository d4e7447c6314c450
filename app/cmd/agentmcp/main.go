// Command agentmcp serves an agent session as an MCP server.
//
//	agentmcp serve stdio [--root DIR] [--submit-name NAME] [--submit-description TEXT]
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentmcp/agentmcp/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
