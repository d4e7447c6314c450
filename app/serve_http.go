package app

import (
	"context"
	"flag"
	"fmt"

	"github.com/agentmcp/agentmcp/adapters/httploopback"
)

// serveHTTPCommand is "agentmcp serve http [flags]": the reference
// workspace session over the loopback Streamable HTTP host (docs/SPEC.md
// §5.2).
//
// Order of events: the token file is opened (tokenfile.go: created
// exclusively with mode 0600, a stale one reused, a persistent one read)
// before anything is bound, so a file that cannot be used fails start-up
// without side effects; the host validates the catalog and listens; a new
// token is written to the file; then the URL is printed on stdout, alone on
// its line — a script that waits for that line can read the token file at
// once. The token itself is never printed or logged. Without --token-file
// the file is a new one in $XDG_RUNTIME_DIR (when set and absolute) or
// os.TempDir(), and its path is logged. At exit a per-run file is removed
// if it is still the file this process used (not if it was replaced
// meanwhile); a persistent one stays.
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
read it from the token file. Every request needs
"Authorization: Bearer <token>". SIGINT or SIGTERM end it with status 0.

By default the token is new at every start and its file is removed at exit;
a token file left by a host that no longer runs (killed, or a reboot) is
reused. With --persistent-token the token in --token-file is kept across
restarts (created on the first start, mode 0600), so a client configuration
holding it keeps working; --rotate-token replaces it.`,
	example: "agentmcp serve http --root ~/project --port 8931 --token-file ~/.agentmcp-token",
	rules: []flagRule{
		{flags: []string{"persistent-token"}, needs: "token-file", why: "the file that keeps the token"},
		{flags: []string{"rotate-token"}, needs: "persistent-token", why: "it writes a new token into the persistent token's file"},
	},
	hints: loopbackHints,
	setup: func(fs *flag.FlagSet) runFunc {
		common := addServeFlags(fs)
		var port portValue
		fs.Var(&port, "port", "TCP port `N` on 127.0.0.1; 0 picks a free one")
		tokenPath := fs.String("token-file", "", "`PATH` of the bearer token's file (mode 0600; a stale one left by a host that no longer runs is reused); "+
			"default: a new file in $XDG_RUNTIME_DIR or the temporary directory")
		persistent := fs.Bool("persistent-token", false, "keep the token in --token-file across restarts: created on the first start, "+
			"reused after, never removed (refused when others can read the file)")
		rotate := fs.Bool("rotate-token", false, "write a new token into the --persistent-token file (clients holding the old one must be updated)")
		noHealth := fs.Bool("no-health", false, "do not serve the health probes GET /healthz and /readyz")
		return func(ctx context.Context, inv *invocation) int {
			if code, ok := common.check(inv); !ok {
				return code
			}
			return serveHTTP(ctx, inv, common, int(port), tokenOptions{path: *tokenPath, persistent: *persistent, rotate: *rotate}, *noHealth)
		}
	},
}

// loopbackHints answer the flags people try to bind serve http elsewhere:
// the loopback host binds 127.0.0.1 only (docs/SPEC.md §5.2).
var loopbackHints = func() map[string]string {
	h := "serve http listens on 127.0.0.1 only, on --port N; to serve other addresses, " +
		"use 'agentmcp serve remote --listen IP:PORT' behind a TLS proxy"
	return map[string]string{"host": h, "listen": h, "bind": h, "addr": h, "address": h}
}()

// tokenOptions are serve http's token flags.
type tokenOptions struct {
	path               string
	persistent, rotate bool
}

func serveHTTP(ctx context.Context, inv *invocation, common *serveFlags, port int, to tokenOptions, noHealth bool) int {
	stdout, stderr := inv.stdout, inv.stderr
	logger := common.newLogger(stderr)
	srv, ok := common.open(logger, inv)
	if !ok {
		return 1
	}
	defer srv.close()

	var tf *tokenFile
	var err error
	if to.persistent {
		tf, err = openPersistentTokenFile(to.path, to.rotate)
	} else {
		tf, err = openRunTokenFile(to.path)
	}
	if err != nil {
		logger.Error("cannot use the token file", "err", err)
		return 1
	}
	defer tf.close(logger)
	common.hidden.add(tf.path) // the bearer token: never a command's to read
	switch {
	case tf.replaced:
		logger.Info("reusing a stale token file: no running agentmcp holds it (its host ended without removing it)", "path", tf.path)
	case to.path == "":
		logger.Info("bearer token file", "path", tf.path)
	}

	host, err := httploopback.New(srv.eng, httploopback.Options{Port: port, Token: tf.token, NoHealth: noHealth})
	if err != nil {
		logger.Error("cannot serve http", "err", err)
		return 1
	}

	inUse := fmt.Sprintf("port %d on 127.0.0.1 is in use: choose another --port, or --port 0 for a free one (the URL is printed on stdout)", port)
	if code, ok := start(ctx, host, logger, inUse); !ok {
		return code
	}
	ep := host.Endpoint()
	if tf.token != ep.Token {
		if err := tf.write(ep.Token); err != nil {
			logger.Error("cannot write the token file", "err", err)
			stop(host, logger)
			return 1
		}
	}
	tokenNote := "new at this start, removed at exit"
	if to.persistent {
		tokenNote = "persistent"
	}
	common.serving(logger, "serving MCP over Streamable HTTP", "url", ep.URL, "root", *common.root, "tokenFile", tf.path, "token", tokenNote)
	fmt.Fprintln(stdout, ep.URL)

	return srv.run(ctx, host)
}
