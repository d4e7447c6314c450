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

	"github.com/agentmcp/agentmcp/adapters/httploopback"
	"github.com/agentmcp/agentmcp/engine"
)

// serveHTTPCommand is "agentmcp serve http [flags]": the reference
// workspace session over the loopback Streamable HTTP host (docs/SPEC.md
// §5.2).
//
// Order of events: the token file is created (exclusively, mode 0600) before
// anything is bound, so an existing file fails start-up without side
// effects; the host validates the catalog and listens; the token is written
// to the file; then the URL is printed on stdout, alone on its line — a
// script that waits for that line can read the token file at once. The
// token itself is never printed or logged. Without --token-file the file is
// a new one in $XDG_RUNTIME_DIR (when set and absolute) or os.TempDir(), and
// its path is printed on stderr. At exit the file is removed if it is still
// the file this process created (not if it was replaced meanwhile).
//
// SIGINT or SIGTERM (ctx) stop the host: calls in flight are cancelled and
// answered "server is shutting down"; exit code 0. A failure exits 1, a usage
// error 2.
var serveHTTPCommand = &command{
	name:     "http",
	summary:  "Serve the reference session over Streamable HTTP on 127.0.0.1, behind a bearer token",
	synopsis: "[flags]",
	about: `Once the host listens and the token file is written, the endpoint URL is
printed on stdout, alone on its line. The token is never printed or logged:
read it from the token file, which is removed at exit. Every request needs
"Authorization: Bearer <token>". SIGINT or SIGTERM end it with status 0.`,
	example: "agentmcp serve http --root ~/project --port 8931 --token-file ~/.agentmcp-token",
	setup: func(fs *flag.FlagSet) runFunc {
		common := addServeFlags(fs)
		port := fs.Int("port", 0, "TCP port `N` on 127.0.0.1; 0 picks a free one")
		tokenPath := fs.String("token-file", "", "`PATH` of the file to create (exclusively, mode 0600) for the bearer token; "+
			"default: a new file in $XDG_RUNTIME_DIR or the temporary directory")
		return func(ctx context.Context, inv *invocation) int {
			if *port < 0 || *port > 65535 {
				return inv.usageError("--port must be within 0..65535")
			}
			return serveHTTP(ctx, inv, common, *port, *tokenPath)
		}
	},
}

func serveHTTP(ctx context.Context, inv *invocation, common *serveFlags, port int, tokenPath string) int {
	stdout, stderr := inv.stdout, inv.stderr
	logger := newLogger(stderr)
	srv, ok := common.open(logger)
	if !ok {
		return 1
	}
	defer srv.close()
	host, err := httploopback.New(srv.eng, httploopback.Options{Port: port})
	if err != nil {
		logger.Error("cannot serve http", "err", err)
		return 1
	}

	tf, err := createTokenFile(tokenPath)
	if err != nil {
		logger.Error("cannot create the token file", "err", err)
		return 1
	}
	defer tf.remove(logger)
	if tokenPath == "" {
		fmt.Fprintf(stderr, "agentmcp: bearer token file: %s\n", tf.path)
	}

	if err := host.Start(ctx); err != nil {
		if errors.Is(err, engine.ErrStopped) || ctx.Err() != nil {
			return 0
		}
		logger.Error("start failed", "err", err)
		return 1
	}
	ep := host.Endpoint()
	if err := tf.write(ep.Token); err != nil {
		logger.Error("cannot write the token file", "err", err)
		stop(host, logger)
		return 1
	}
	fmt.Fprintln(stdout, ep.URL)
	logger.Info("serving MCP over Streamable HTTP", "url", ep.URL, "root", *common.root)

	return srv.run(ctx, host)
}

// tokenFile is the file this process created for the token. It stays open
// until remove: while it is open its inode cannot be reused, so a file put
// in its place is never mistaken for it.
type tokenFile struct {
	path string
	f    *os.File
}

// createTokenFile creates path exclusively with mode 0600, or, when path is
// "", a new file in the user's runtime directory or os.TempDir().
func createTokenFile(path string) (*tokenFile, error) {
	var f *os.File
	var err error
	if path == "" {
		dir := os.Getenv("XDG_RUNTIME_DIR")
		if dir == "" || !filepath.IsAbs(dir) {
			dir = os.TempDir()
		}
		f, err = os.CreateTemp(dir, "agentmcp-token-*") // O_EXCL, mode 0600
	} else {
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	}
	if err != nil {
		return nil, err
	}
	return &tokenFile{path: f.Name(), f: f}, nil
}

func (t *tokenFile) write(token string) error {
	if _, err := io.WriteString(t.f, token); err != nil {
		return err
	}
	return t.f.Sync()
}

// remove deletes the file if path still names the file created (the same
// file, compared by os.SameFile); a file put in its place meanwhile is left
// alone.
func (t *tokenFile) remove(logger *slog.Logger) {
	defer t.f.Close()
	mine, err := t.f.Stat()
	if err != nil {
		logger.Warn("cannot check the token file; not removing it", "path", t.path, "err", err)
		return
	}
	now, err := os.Lstat(t.path)
	if err != nil || !os.SameFile(now, mine) {
		logger.Info("token file replaced or gone; not removing it", "path", t.path)
		return
	}
	t.f.Close() // before removing: some systems cannot remove an open file
	if err := os.Remove(t.path); err != nil {
		logger.Warn("cannot remove the token file", "path", t.path, "err", err)
	}
}
