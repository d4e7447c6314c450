package app

import (
	"context"
	"flag"
	"fmt"

	"github.com/agentmcp/agentmcp/adapters/unixsocket"
)

// serveUnixCommand is "agentmcp serve unix --socket PATH [flags]": the
// reference workspace session on a Unix socket (docs/SPEC.md §10), one
// newline-delimited stream per connection, for local clients of this user
// only. Once listening, the socket path is printed on stdout, alone on its
// line. SIGINT or SIGTERM (ctx) stop it: calls in flight are cancelled and
// answered "server is shutting down"; exit code 0. A failure exits 1, a
// usage error 2.
var serveUnixCommand = &command{
	name:     "unix",
	summary:  "Serve the reference session on a Unix socket, to local clients of this user",
	synopsis: "--socket PATH [flags]",
	about: `Each connection is one MCP stream framed as stdio (one JSON message per line).
The socket file is created with mode 0600, a stale one is replaced, and every
peer's credentials are checked: only processes of this user are served. Once
listening, the socket path is printed on stdout. SIGINT or SIGTERM end it with
status 0.`,
	example: "agentmcp serve unix --socket $XDG_RUNTIME_DIR/agentmcp.sock --root ~/project",
	setup: func(fs *flag.FlagSet) runFunc {
		common := addServeFlags(fs)
		path := fs.String("socket", "", "`PATH` of the socket file to create (required)")
		return func(ctx context.Context, inv *invocation) int {
			if *path == "" {
				return inv.usageError("--socket is required")
			}
			if limit := maxSocketPath; limit > 0 && len(*path) > limit {
				return inv.usageError("--socket is %d bytes long; a socket path holds at most %d bytes on this system (sun_path): use a shorter one, say under $XDG_RUNTIME_DIR", len(*path), limit)
			}
			if code, ok := common.check(inv); !ok {
				return code
			}
			return serveUnix(ctx, inv, common, *path)
		}
	},
}

func serveUnix(ctx context.Context, inv *invocation, common *serveFlags, path string) int {
	logger := common.newLogger(inv.stderr)
	common.hidden.add(path) // a command must not be a client of its own server
	srv, ok := common.open(logger, inv)
	if !ok {
		return 1
	}
	defer srv.close()
	s, err := unixsocket.New(srv.eng, unixsocket.Options{Path: path})
	if err != nil {
		logger.Error("cannot serve unix", "err", err)
		return 1
	}
	if code, ok := start(ctx, s, logger, ""); !ok {
		return code
	}
	fmt.Fprintln(inv.stdout, path)
	logger.Info("serving MCP on a Unix socket", "socket", path, "root", *common.root)
	return srv.run(ctx, s)
}
