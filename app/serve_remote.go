package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"sync"

	"github.com/agentmcp/agentmcp/adapters/httpremote"
	"github.com/agentmcp/agentmcp/ports"
)

const remoteUsage = `usage: agentmcp serve remote --public-url URL --issuer URL --scope S [--scope S]...
         (--allowed-subject SUB | --allowed-client ID)... [--listen IP:PORT]
         [--trusted-proxy IP]... [--root DIR] [--submit-name NAME]
         [--submit-description TEXT] [--ask-client]

Serves the reference workspace session over DIR to remote MCP clients as an
OAuth 2.0 protected resource (docs/SPEC.md §5.3): plain HTTP on --listen (default
127.0.0.1:0, a free port), behind a TLS-terminating reverse proxy that
forwards the public URL's path unchanged and keeps the Host header. Every
request needs an access token from --issuer (an RFC 9068 JWT: typ at+jwt,
aud = --public-url, every --scope, and a listed sub or client_id).

Once listening, the bound address (IP:PORT) is printed on stdout, alone on its
line. Refused requests are audited on stderr, one line each:
  refused: <refusal> (<loopback|private|public|unknown>[, throttled])
never with the token or the client's address. The issuer's certificate is
checked against the system's pool: set SSL_CERT_FILE for a private CA.

--trusted-proxy names a proxy (a literal IP) whose X-Forwarded-For is
believed; without one, every client behind a local proxy shares one
throttle budget.

With --model, each admitted principal (issuer, subject and client) has a
conversation of its own: one never sees another's turns (at most 64 are kept,
the least recently used dropped first). Turns still run one at a time over
the one workspace.

--ask-client sends the session's permission and ask prompts to the MCP client
that made the call (input-required rounds, modern clients only). Turn it on
only when you trust whoever can reach the carrier — here, every principal the
issuer can mint an admitted token for — to approve the session's tool calls:
an approval lets the session write files under DIR.

Flags:`

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// serveRemote runs "agentmcp serve remote ...": the reference workspace
// session over the remote Streamable HTTP host, with the adapters/oauth
// verifier (built by [NewRemote] from the same flags).
//
// Order of events: flags are checked (usage errors exit 2), the host and
// verifier are built (configuration errors exit 1, before anything is
// bound), the host validates the catalog and listens, then the bound address
// is printed on stdout. SIGINT or SIGTERM (ctx) stop the host: calls in
// flight are cancelled and answered "server is shutting down"; exit code 0.
// A failure exits 1.
func serveRemote(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentmcp serve remote", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, remoteUsage)
		fs.PrintDefaults()
	}
	var scopes, subjects, clients, proxies stringList
	publicURL := fs.String("public-url", "", "the https URL clients use: resource identifier and token audience (required)")
	issuer := fs.String("issuer", "", "the authorization server's https issuer identifier (required)")
	fs.Var(&scopes, "scope", "a scope every token must carry (required; repeatable)")
	fs.Var(&subjects, "allowed-subject", "a token sub admitted (repeatable)")
	fs.Var(&clients, "allowed-client", "a token client_id admitted whatever its sub: confidential or machine clients only (repeatable)")
	listen := fs.String("listen", "127.0.0.1:0", "literal IP:PORT to bind; port 0 picks a free one")
	fs.Var(&proxies, "trusted-proxy", "literal IP of a proxy whose X-Forwarded-For is believed (repeatable)")
	common := addServeFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	usageError := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "agentmcp: "+format+"\n", a...)
		return 2
	}
	switch {
	case fs.NArg() > 0:
		return usageError("unexpected argument %q", fs.Arg(0))
	case *publicURL == "":
		return usageError("--public-url is required")
	case *issuer == "":
		return usageError("--issuer is required")
	case len(scopes) == 0:
		return usageError("at least one --scope is required")
	case len(subjects) == 0 && len(clients) == 0:
		return usageError("at least one --allowed-subject or --allowed-client is required: issuer, audience and scope alone would admit anyone the issuer serves")
	}
	bind, err := netip.ParseAddrPort(*listen)
	if err != nil {
		return usageError("--listen must be a literal IP:PORT, such as 127.0.0.1:8080 or [::1]:8080")
	}
	logger := newLogger(stderr)
	session, ok := common.openSession(logger)
	if !ok {
		return 1
	}
	defer session.Close()
	host, err := NewRemote(session, httpremote.Options{
		Name: "agentmcp", Version: Version, Logger: logger,
		Host: bind.Addr().String(), Port: int(bind.Port()),
		SubmitTool: common.submitTool(), AskClient: *common.askClient, Instructions: common.instructions(),
		Authorization: httpremote.Authorization{
			PublicURL: *publicURL, Issuer: *issuer, Scopes: scopes,
			TrustedProxies: proxies, Audit: newAuditWriter(stderr),
		},
	}, RemoteAccess{AllowedSubjects: subjects, AllowedClients: clients})
	if err != nil {
		logger.Error("cannot serve remote", "err", err)
		return 1
	}

	addr, err := host.Start(ctx)
	if err != nil {
		if errors.Is(err, httpremote.ErrStopped) || ctx.Err() != nil {
			return 0
		}
		logger.Error("start failed", "err", err)
		return 1
	}
	fmt.Fprintln(stdout, addr.String())
	logger.Info("serving MCP to remote clients", "listen", addr.String(), "url", *publicURL, "root", *common.root)

	return serveUntilDone(ctx, host, logger)
}

// auditWriter is the CLI's audit sink: one line per refused request,
// "refused: <refusal> (<class>[, throttled])". Lines are written whole, one
// at a time.
type auditWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func newAuditWriter(w io.Writer) *auditWriter { return &auditWriter{w: w} }

// Audit writes r's line; a write error is ignored (the request has been
// answered whatever happens to its record).
func (a *auditWriter) Audit(r ports.AuditRecord) {
	throttled := ""
	if r.Throttled {
		throttled = ", throttled"
	}
	line := fmt.Sprintf("refused: %s (%s%s)\n", r.Refusal, r.Remote, throttled)
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _ = io.WriteString(a.w, line)
}
