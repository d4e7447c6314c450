package app

import (
	"context"
	"errors"
	"flag"

	"github.com/agentmcp/agentmcp/adapters/stdio"
	"github.com/agentmcp/agentmcp/engine"
)

// serveStdioCommand is "agentmcp serve stdio [flags]": the reference
// workspace session over stdio (docs/SPEC.md §5.1). Logs go to stderr,
// stdout carries only MCP messages. "serving MCP on stdio" is logged once
// the catalog is valid, before the first message is read. Closing stdin,
// SIGINT or SIGTERM (ctx) end it with 0; a closed stdout, or another
// failure, with 1.
var serveStdioCommand = &command{
	name:     "stdio",
	summary:  "Serve the reference session over stdio, to the process that launched agentmcp",
	synopsis: "[flags]",
	about: `Logs go to stderr; stdout carries only MCP messages. Closing stdin, SIGINT or
SIGTERM ends it with status 0; a closed stdout ends it with status 1.`,
	example: "agentmcp serve stdio --root ~/project",
	setup: func(fs *flag.FlagSet) runFunc {
		common := addServeFlags(fs)
		return func(ctx context.Context, inv *invocation) int {
			if code, ok := common.check(inv); !ok {
				return code
			}
			return serveStdio(ctx, inv, common)
		}
	},
}

func serveStdio(ctx context.Context, inv *invocation, common *serveFlags) int {
	logger := common.newLogger(inv.stderr)
	srv, ok := common.open(logger, inv)
	if !ok {
		return 1
	}
	defer srv.close()
	t, err := stdio.New(srv.eng, stdio.Options{Stdin: inv.stdin, Stdout: inv.stdout})
	if err != nil {
		logger.Error("cannot serve stdio", "err", err)
		return 1
	}
	// The stream is there before Start, which binds nothing: with the
	// catalog valid, what is served is known, so it is logged before the
	// first message is read. Start can end at once without serving
	// anything (stdin closed before a message: ErrInputClosed), and a line
	// logged after it would then be missing.
	if err := srv.eng.Validate(ctx); err != nil {
		logger.Error("cannot serve stdio", "err", err)
		return 1
	}
	common.serving(logger, "serving MCP on stdio", "root", *common.root)
	if err := t.Start(ctx); err != nil {
		if errors.Is(err, engine.ErrInputClosed) {
			return 0
		}
		logger.Error("start failed", "err", err)
		return 1
	}
	return srv.run(ctx, t)
}
