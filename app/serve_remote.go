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
	"github.com/agentmcp/agentmcp/adapters/oauth"
	"github.com/agentmcp/agentmcp/ports"
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// serveRemoteCommand is "agentmcp serve remote ...": the reference
// workspace session over the remote Streamable HTTP host (docs/SPEC.md
// §5.3), with the adapters/oauth verifier (built by [NewRemote] from the
// same flags).
//
// Order of events: flags are checked (usage errors exit 2), the host and
// verifier are built (configuration errors exit 1, before anything is
// bound), the host validates the catalog and listens, then the bound address
// is printed on stdout. SIGINT or SIGTERM (ctx) stop the host: calls in
// flight are cancelled and answered "server is shutting down"; exit code 0.
// A failure exits 1.
var serveRemoteCommand = &command{
	name:     "remote",
	summary:  "Serve the reference session to remote clients as an OAuth-protected resource, behind a TLS proxy",
	synopsis: "--public-url URL --issuer URL --scope S...\n    (--allowed-subject SUB | --allowed-client ID)... [flags]",
	about: `Serves the session over plain HTTP on --listen (default 127.0.0.1:0, a free
port), behind a TLS-terminating reverse proxy that forwards the public URL's
path unchanged and keeps the Host header. Every request needs an access token
from --issuer (an RFC 9068 JWT: typ at+jwt, aud = --public-url, every
--scope, and a listed sub or client_id).

Once listening, the bound address (IP:PORT) is printed on stdout, alone on its
line. Refused requests are audited on stderr, one line each:
  refused: <refusal> (<loopback|private|public|unknown>[, throttled])
never with the token or the client's address. The issuer's certificate is
checked against the system's pool: set SSL_CERT_FILE for a private CA.

--trusted-proxy names a proxy (a literal IP) whose X-Forwarded-For is
believed; without one, every client behind a local proxy shares one
throttle budget.

With --model, each admitted principal (issuer, subject and client) has a
conversation of its own: one never sees another's turns (kept in
--state-dir, at most --max-conversations, the least recently updated dropped
first). Their turns run side by side, at most --max-turns at once, over the
one workspace.

--ask-client sends the session's permission and ask prompts to the MCP client
that made the call (input-required rounds, modern clients only). Turn it on
only when you trust whoever can reach the carrier — here, every principal the
issuer can mint an admitted token for — to approve the session's tool calls:
an approval lets the session write files under DIR.`,
	example: `agentmcp serve remote --public-url https://mcp.example.com/team/agent/mcp \
    --issuer https://auth.example.com --scope mcp:tools --allowed-subject 248289761001 \
    --listen 127.0.0.1:8080 --trusted-proxy 127.0.0.1 --root /srv/project`,
	setup: func(fs *flag.FlagSet) runFunc {
		f := &remoteFlags{common: addServeFlags(fs)}
		f.publicURL = fs.String("public-url", "", "the https `URL` clients use: resource identifier and token audience (required)")
		f.issuer = fs.String("issuer", "", "the authorization server's https issuer identifier, a `URL` (required)")
		fs.Var(&f.scopes, "scope", "a scope `S` every token must carry (required; repeatable)")
		fs.Var(&f.subjects, "allowed-subject", "a token `SUB` admitted (repeatable)")
		fs.Var(&f.clients, "allowed-client", "a token client_id `ID` admitted whatever its sub: confidential or machine clients only (repeatable)")
		f.listen = fs.String("listen", "127.0.0.1:0", "literal `IP:PORT` to bind; port 0 picks a free one")
		fs.Var(&f.proxies, "trusted-proxy", "literal `IP` of a proxy whose X-Forwarded-For is believed (repeatable)")
		f.noHealth = fs.Bool("no-health", false, "do not serve the health probes GET /healthz and /readyz")
		return func(ctx context.Context, inv *invocation) int { return serveRemote(ctx, inv, f) }
	},
}

// remoteFlags are serve remote's flags, as parsed, and what check made of
// them.
type remoteFlags struct {
	common                             *serveFlags
	publicURL, issuer, listen          *string
	scopes, subjects, clients, proxies stringList
	noHealth                           *bool

	bind     netip.AddrPort
	verifier *oauth.Verifier
}

func serveRemote(ctx context.Context, inv *invocation, f *remoteFlags) int {
	common := f.common
	if code, ok := f.check(inv); !ok {
		return code
	}
	logger := common.newLogger(inv.stderr)
	srv, ok := common.open(logger, inv)
	if !ok {
		return 1
	}
	defer srv.close()
	audit := auditSinks{newAuditWriter(inv.stderr)}
	if srv.metrics != nil {
		audit = append(audit, srv.metrics)
	}
	host, err := httpremote.New(srv.eng, httpremote.Options{
		Host: f.bind.Addr().String(), Port: int(f.bind.Port()), NoHealth: *f.noHealth,
		Authorization: httpremote.Authorization{
			Verifier: f.verifier, TrustedProxies: f.proxies, Audit: audit,
		},
	})
	if err != nil {
		logger.Error("cannot serve remote", "err", err)
		return 1
	}

	inUse := fmt.Sprintf("--listen %s is in use: choose another address, or port 0 (%s) for a free one (the bound address is printed on stdout)",
		f.bind, netip.AddrPortFrom(f.bind.Addr(), 0))
	if code, ok := start(ctx, host, logger, inUse); !ok {
		return code
	}
	addr := host.Addr()
	common.serving(logger, "serving MCP to remote clients", "listen", addr.String(), "url", *f.publicURL, "root", *common.root)
	fmt.Fprintln(inv.stdout, addr.String())

	return srv.run(ctx, host)
}

// check checks serve remote's flags before anything is opened: the
// required ones, --listen, and the host's identity and admission as
// NewRemote would build them (the verifier from --public-url, --issuer,
// --scope and the allowed principals; the public URL's canonical form and
// --trusted-proxy through httpremote.NewAdmission, which binds nothing).
// Each failure is a usage error.
func (f *remoteFlags) check(inv *invocation) (int, bool) {
	switch {
	case *f.publicURL == "":
		return inv.usageError("--public-url is required"), false
	case *f.issuer == "":
		return inv.usageError("--issuer is required"), false
	case len(f.scopes) == 0:
		return inv.usageError("at least one --scope is required"), false
	case len(f.subjects) == 0 && len(f.clients) == 0:
		return inv.usageError("at least one --allowed-subject or --allowed-client is required: issuer, audience and scope alone would admit anyone the issuer serves"), false
	}
	if code, ok := f.common.check(inv); !ok {
		return code, false
	}
	bind, err := netip.ParseAddrPort(*f.listen)
	if err != nil {
		return inv.usageError("--listen must be a literal IP:PORT, such as 127.0.0.1:8080 or [::1]:8080"), false
	}
	if m := f.common.metricsListen; m.on && m.ap == bind {
		return inv.usageError("--metrics-listen must be another address than --listen: metrics never share the MCP port"), false
	}
	v, err := RemoteAccess{PublicURL: *f.publicURL, Issuer: *f.issuer, Scopes: f.scopes,
		AllowedSubjects: f.subjects, AllowedClients: f.clients}.verifier()
	if err == nil {
		_, err = httpremote.NewAdmission(httpremote.Authorization{Verifier: v, TrustedProxies: f.proxies}, nil)
	}
	if err != nil {
		return inv.usageError("%s", remoteFlagError(err)), false
	}
	f.bind, f.verifier = bind, v
	return 0, true
}

// remoteFlags' errors name the flag whose value the host refused, in place
// of its Options field: "--public-url: must be an absolute https URL in
// canonical form (…)", not "httpremote: PublicURL must be …".
var remoteFlagErrors = []struct {
	err  error
	flag string
}{
	{httpremote.ErrPublicURL, "--public-url"},
	{httpremote.ErrIssuer, "--issuer"},
	{httpremote.ErrScopes, "--scope"},
	{httpremote.ErrTrustedProxy, "--trusted-proxy"},
}

// remoteFlagError is the usage error of an error remoteFlags.check met.
func remoteFlagError(err error) string {
	msg := err.Error()
	for _, fe := range remoteFlagErrors {
		if errors.Is(err, fe.err) {
			// The sentinel's text is "httpremote: <Field> must …": keep
			// from "must" on, and what the wrap added after it.
			_, rest, ok := strings.Cut(msg, " must ")
			if !ok {
				break
			}
			return fe.flag + ": must " + rest
		}
	}
	return strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(msg, "app: "), "oauth: "), "invalid verifier configuration: ")
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
