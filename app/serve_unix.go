package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/agentmcp/agentmcp/adapters/unixsocket"
)

// serveUnixCommand is "agentmcp serve unix [--socket PATH] [flags]": the
// reference workspace session on a Unix socket (docs/SPEC.md §10), one
// newline-delimited stream per connection, for local clients of this user
// only. Without --socket the socket is defaultSocket's. Once listening,
// the socket path is printed on stdout, alone on its line. SIGINT or
// SIGTERM (ctx) stop it: calls in flight are cancelled and answered
// "server is shutting down"; exit code 0. A failure exits 1, a usage error
// 2.
var serveUnixCommand = &command{
	name:     "unix",
	summary:  "Serve the reference session on a Unix socket, to local clients of this user",
	synopsis: "[flags]",
	about: `Each connection is one MCP stream framed as stdio (one JSON message per line).
The socket file is created with mode 0600, a stale one is replaced, and every
peer's credentials are checked: only processes of this user are served. Without
--socket it is agentmcp.sock in $XDG_RUNTIME_DIR, or, where that is not set, in
agentmcp-UID under the temporary directory (made with mode 0700). Once
listening, the socket path is printed on stdout. SIGINT or SIGTERM end it with
status 0.`,
	example: "agentmcp serve unix --root ~/project",
	setup: func(fs *flag.FlagSet) runFunc {
		common := addServeFlags(fs)
		path := fs.String("socket", "", "`PATH` of the socket file to create (default: agentmcp.sock in $XDG_RUNTIME_DIR, "+
			"else in agentmcp-UID under the temporary directory)")
		return func(ctx context.Context, inv *invocation) int {
			sock, private := *path, ""
			if sock == "" {
				sock, private = defaultSocket()
			} else if runtimeDir() == "" && filepath.Dir(filepath.Clean(sock)) == "/" {
				def, _ := defaultSocket()
				return inv.usageError("--socket %s is in the root directory and $XDG_RUNTIME_DIR is empty here "+
					"(did \"$XDG_RUNTIME_DIR/agentmcp.sock\" expand to it?): leave --socket out to use %s, or name a path in a directory of yours", sock, def)
			}
			if limit := maxSocketPath; limit > 0 && len(sock) > limit {
				return inv.usageError("--socket is %d bytes long; a socket path holds at most %d bytes on this system (sun_path): use a shorter one, say under $XDG_RUNTIME_DIR", len(sock), limit)
			}
			if code, ok := common.check(inv); !ok {
				return code
			}
			return serveUnix(ctx, inv, common, sock, private)
		}
	},
}

// runtimeDir is $XDG_RUNTIME_DIR when it is set and absolute (the XDG Base
// Directory spec ignores a relative one), else "".
func runtimeDir() string {
	if dir := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(dir) {
		return dir
	}
	return ""
}

// defaultSocket is serve unix's socket without --socket: agentmcp.sock in
// the user's runtime directory (which the system makes, mode 0700), else —
// root in a container, a service without a login session — in
// agentmcp-<uid> under os.TempDir(), as tmux and Emacs do: private is then
// that directory, which privateDir makes or checks before the socket is
// created.
func defaultSocket() (path, private string) {
	if dir := runtimeDir(); dir != "" {
		return filepath.Join(dir, "agentmcp.sock"), ""
	}
	dir := filepath.Join(os.TempDir(), "agentmcp-"+strconv.Itoa(os.Getuid()))
	return filepath.Join(dir, "agentmcp.sock"), dir
}

// privateDir makes dir with mode 0700, or accepts the one there when it is
// a directory (not a link) of this user that nobody else may enter: in a
// directory every user writes to, someone else's could put their socket
// in the place of ours.
func privateDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("cannot make %s for the socket (%w): name a socket with --socket PATH", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() || !ownedByMe(fi) || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is not a directory of this user closed to others (%v): remove it, or name a socket with --socket PATH", dir, fi.Mode())
	}
	return nil
}

func serveUnix(ctx context.Context, inv *invocation, common *serveFlags, path, private string) int {
	logger := common.newLogger(inv.stderr)
	if private != "" {
		if err := privateDir(private); err != nil {
			logger.Error(err.Error())
			return 1
		}
	}
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
	common.serving(logger, "serving MCP on a Unix socket", "socket", path, "root", *common.root)
	fmt.Fprintln(inv.stdout, path)
	return srv.run(ctx, s)
}
