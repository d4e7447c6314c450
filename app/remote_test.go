package app_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/internal/syncbuf"

	"github.com/agentmcp/agentmcp/adapters/httpremote"
	"github.com/agentmcp/agentmcp/adapters/oauth"
	"github.com/agentmcp/agentmcp/app"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/enginetest"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/load"
	"github.com/agentmcp/agentmcp/ports"
)

const (
	remotePublicURL = "https://mcp.example.test/team/agent/mcp"
	remoteMetadata  = "https://mcp.example.test/.well-known/oauth-protected-resource/team/agent/mcp"
	remoteScope     = "mcp:tools"
)

// testIssuer is internal/load's authorization server over TLS (httptest),
// publishing one RS256 key through RFC 8414 metadata, minting access
// tokens with this file's default claims.
type testIssuer struct{ *load.Issuer }

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	iss, err := load.NewIssuer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(iss.Close)
	return &testIssuer{iss}
}

// token mints an access token; change edits the default claims (sub alice,
// client cli, aud the public URL, the scope, valid for an hour); forged
// signs it with a key the issuer never published.
func (iss *testIssuer) token(t *testing.T, forged bool, change func(map[string]any)) string {
	t.Helper()
	now := time.Now()
	claims := map[string]any{
		"iss": iss.URL(), "aud": remotePublicURL, "sub": "alice", "client_id": "cli",
		"scope": remoteScope + " other", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
	if change != nil {
		change(claims)
	}
	tok, err := iss.Sign(claims, forged)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

type recordingAudit struct {
	mu      sync.Mutex
	records []ports.AuditRecord
}

func (a *recordingAudit) Audit(r ports.AuditRecord) {
	a.mu.Lock()
	a.records = append(a.records, r)
	a.mu.Unlock()
}

func (a *recordingAudit) all() []ports.AuditRecord {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]ports.AuditRecord(nil), a.records...)
}

func remoteOptions(audit ports.AuditSink) httpremote.Options {
	return httpremote.Options{Authorization: httpremote.Authorization{Audit: audit}}
}

// remoteAccess is the verifier's configuration for issuer, admitting alice.
func remoteAccess(issuer string) app.RemoteAccess {
	return app.RemoteAccess{PublicURL: remotePublicURL, Issuer: issuer, Scopes: []string{remoteScope}, AllowedSubjects: []string{"alice"}}
}

// newEngine builds an engine for a fresh fake session, shut down when the
// test ends (after the host's Stop: cleanups run last-registered first).
func newEngine(t testing.TB) *engine.Engine {
	t.Helper()
	return enginetest.New(t, fake.New(), engine.Options{Name: "t", Version: "1"}, 5*time.Second)
}

func TestNewRemoteChecks(t *testing.T) {
	eng := newEngine(t)
	opts := remoteOptions(nil)
	access := remoteAccess("https://issuer.example.test")
	if _, err := app.NewRemote(eng, opts, access); err != nil {
		t.Fatalf("NewRemote: %v", err)
	}
	nobody := access
	nobody.AllowedSubjects = nil
	if _, err := app.NewRemote(eng, opts, nobody); !errors.Is(err, oauth.ErrInvalidConfig) {
		t.Errorf("no allowed principal: %v, want oauth.ErrInvalidConfig", err)
	}
	bad := access
	bad.PublicURL = "https://mcp.example.test/team/agent/mcp/"
	if _, err := app.NewRemote(eng, opts, bad); !errors.Is(err, httpremote.ErrPublicURL) {
		t.Errorf("trailing slash: %v, want httpremote.ErrPublicURL", err)
	}
	bad = access
	bad.Issuer = "http://issuer.example.test"
	if _, err := app.NewRemote(eng, opts, bad); err == nil {
		t.Error("an http issuer was accepted")
	}
	given := opts
	given.Authorization.Verifier = fakeRemoteVerifier{}
	if _, err := app.NewRemote(eng, given, access); !errors.Is(err, app.ErrVerifierGiven) {
		t.Errorf("a given verifier: %v, want ErrVerifierGiven", err)
	}
}

type fakeRemoteVerifier struct{}

func (fakeRemoteVerifier) Verify(context.Context, string) ports.Verdict { return ports.Verdict{} }
func (fakeRemoteVerifier) Describe() ports.VerifierDescription          { return ports.VerifierDescription{} }

// TestRemoteWithRealVerifier drives the host built by NewRemote — the real
// adapters/oauth verifier fetching keys from a TLS issuer — through its
// refusal table with genuinely signed tokens.
func TestRemoteWithRealVerifier(t *testing.T) {
	iss := newTestIssuer(t)
	audit := &recordingAudit{}
	access := remoteAccess(iss.URL())
	access.HTTPClient = iss.Client()
	addr := startRemote(t, newEngine(t), audit, access)
	post := func(token string) (*http.Response, string) {
		t.Helper()
		return postMCP(t, addr, token, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil)
	}
	invalid := `Bearer error="invalid_token", resource_metadata="` + remoteMetadata + `"`
	tests := []struct {
		name      string
		token     string
		status    int
		challenge string
		refusal   ports.RefusalReason
	}{
		{"valid", iss.token(t, false, nil), 200, "", ""},
		{"no token", "", 401, `Bearer resource_metadata="` + remoteMetadata + `"`, ports.RefusalMissingToken},
		{"a loopback host's token", strings.Repeat("0123456789abcdef", 4), 401, invalid, ports.RefusalMalformed},
		{"another audience", iss.token(t, false, func(c map[string]any) { c["aud"] = "https://other.example.test/mcp" }), 401, invalid, ports.RefusalWrongAudience},
		{"expired", iss.token(t, false, func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() }), 401, invalid, ports.RefusalExpired},
		{"without the scope", iss.token(t, false, func(c map[string]any) { c["scope"] = "other" }), 403,
			`Bearer error="insufficient_scope", scope="mcp:tools", resource_metadata="` + remoteMetadata + `"`, ports.RefusalMissingScope},
		{"another subject", iss.token(t, false, func(c map[string]any) { c["sub"] = "mallory" }), 403, "", ports.RefusalPrincipalNotAllowed},
		{"signed by another key", iss.token(t, true, nil), 401, invalid, ports.RefusalBadSignature},
	}
	for _, tt := range tests {
		resp, body := post(tt.token)
		if resp.StatusCode != tt.status || resp.Header.Get("WWW-Authenticate") != tt.challenge {
			t.Errorf("%s: %d %q, want %d %q (body %s)", tt.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), tt.status, tt.challenge, body)
		}
		if tt.status == 200 && !strings.Contains(body, `"name":"agent_submit"`) {
			t.Errorf("%s: body %s", tt.name, body)
		}
	}
	var got []ports.RefusalReason
	for _, r := range audit.all() {
		got = append(got, r.Refusal)
	}
	var wantRefusals []ports.RefusalReason
	for _, tt := range tests[1:] {
		wantRefusals = append(wantRefusals, tt.refusal)
	}
	if strings.Join(toStrings(got), " ") != strings.Join(toStrings(wantRefusals), " ") {
		t.Errorf("audit %v, want %v", got, wantRefusals)
	}
}

// startRemote builds the remote host over eng (NewRemote with access),
// starts it, stops it when the test ends, and returns its address.
func startRemote(t *testing.T, eng *engine.Engine, audit ports.AuditSink, access app.RemoteAccess) string {
	t.Helper()
	host, err := app.NewRemote(eng, remoteOptions(audit), access)
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = host.Stop(ctx)
	})
	return host.Addr().String()
}

// postMCP posts body to the remote host at addr as its public host would
// forward it, with token as the bearer credential ("" sends none) and
// header's extra fields; it returns the response and its body.
func postMCP(t *testing.T, addr, token, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	return remoteDo(t, "POST", "http://"+addr+"/team/agent/mcp", token, body, header)
}

// remoteDo sends a method request with body to url as the remote host's
// public host would forward it (Host mcp.example.test), with token as the
// bearer credential ("" sends none) and header's extra fields; it returns
// the response and its body.
func remoteDo(t *testing.T, method, url, token, body string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	req.Host = "mcp.example.test"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func toStrings(rs []ports.RefusalReason) []string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r))
	}
	return out
}

var addrLine = regexp.MustCompile(`^127\.0\.0\.1:[0-9]+$`)

// TestServeRemoteCLI: the command prints the bound address once listening,
// serves the metadata, audits refusals on stderr in its one-line format, and
// ends with 0 on SIGINT (ctx).
func TestServeRemoteCLI(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	stderr := &syncbuf.Buffer{}
	code := make(chan int, 1)
	go func() {
		c := app.Main(ctx, []string{"serve", "remote",
			"--public-url", remotePublicURL, "--issuer", "https://issuer.example.test",
			"--scope", remoteScope, "--scope", "mcp:submit", "--allowed-subject", "alice",
			"--trusted-proxy", "127.0.0.1", "--root", root,
		}, strings.NewReader(""), pw, stderr)
		pw.Close()
		code <- c
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	line = strings.TrimSuffix(line, "\n")
	if err != nil || !addrLine.MatchString(line) {
		t.Fatalf("stdout %q (%v); stderr:\n%s", line, err, stderr)
	}
	go io.Copy(io.Discard, pr)
	do := func(method, target, token, xff string) (*http.Response, string) {
		var header map[string]string
		if xff != "" {
			header = map[string]string{"X-Forwarded-For": xff}
		}
		return remoteDo(t, method, "http://"+line+target, token, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, header)
	}
	resp, body := do("GET", "/.well-known/oauth-protected-resource/team/agent/mcp", "", "")
	wantDoc := `{"resource":"` + remotePublicURL + `","authorization_servers":["https://issuer.example.test"],"scopes_supported":["mcp:tools","mcp:submit"],"bearer_methods_supported":["header"]}`
	if resp.StatusCode != 200 || body != wantDoc {
		t.Errorf("metadata: %d %s", resp.StatusCode, body)
	}
	for range 21 {
		do("POST", "/team/agent/mcp", "", "198.51.100.9")
	}
	resp, _ = do("POST", "/team/agent/mcp", "", "10.0.0.9")
	if resp.StatusCode != 401 {
		t.Errorf("another client behind the proxy: %d, want 401", resp.StatusCode)
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit code %d, want 0; stderr:\n%s", c, stderr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve remote did not stop")
	}
	out := stderr.String()
	if n := strings.Count(out, "refused: missing-token (public)\n"); n != 20 {
		t.Errorf("%d public missing-token lines, want 20; stderr:\n%s", n, out)
	}
	for _, l := range []string{"refused: missing-token (public, throttled)\n", "refused: missing-token (private)\n"} {
		if strings.Count(out, l) != 1 {
			t.Errorf("stderr lacks %q once:\n%s", l, out)
		}
	}
	for _, s := range []string{"198.51.100.9", "10.0.0.9"} {
		if strings.Contains(out, s) {
			t.Errorf("stderr holds the client address %s", s)
		}
	}
}

// TestServeRemoteUsage: serve remote's bad flags are usage errors (exit
// 2), its identity and admission included: they are checked before
// anything is opened.
func TestServeRemoteUsage(t *testing.T) {
	base := []string{"serve", "remote", "--public-url", remotePublicURL, "--issuer", "https://issuer.example.test",
		"--scope", remoteScope, "--allowed-subject", "alice"}
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no public URL", []string{"serve", "remote", "--issuer", "https://i.example", "--scope", "s", "--allowed-subject", "a"}, 2, "--public-url is required"},
		{"no issuer", []string{"serve", "remote", "--public-url", remotePublicURL, "--scope", "s", "--allowed-subject", "a"}, 2, "--issuer is required"},
		{"no scope", []string{"serve", "remote", "--public-url", remotePublicURL, "--issuer", "https://i.example", "--allowed-subject", "a"}, 2, "--scope"},
		{"nobody allowed", []string{"serve", "remote", "--public-url", remotePublicURL, "--issuer", "https://i.example", "--scope", "s"}, 2, "--allowed-subject or --allowed-client"},
		{"listen by name", append(base, "--listen", "localhost:8080"), 2, "--listen"},
		{"extra argument", append(base, "extra"), 2, "unexpected argument"},
		{"non-canonical public URL", []string{"serve", "remote", "--public-url", remotePublicURL + "/", "--issuer", "https://i.example", "--scope", "s", "--allowed-subject", "a"}, 2, "canonical"},
		{"trusted proxy by name", append(base, "--trusted-proxy", "proxy.internal"), 2, "literal IP"},
	}
	for _, tt := range tests {
		stderr := &syncbuf.Buffer{}
		var stdout strings.Builder
		code := app.Main(t.Context(), tt.args, strings.NewReader(""), &stdout, stderr)
		if code != tt.code || !strings.Contains(stderr.String(), tt.msg) {
			t.Errorf("%s: exit %d, want %d; stderr %q should hold %q", tt.name, code, tt.code, stderr, tt.msg)
		}
		if stdout.Len() != 0 {
			t.Errorf("%s: stdout %q", tt.name, stdout.String())
		}
	}
}
