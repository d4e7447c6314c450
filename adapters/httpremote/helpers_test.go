package httpremote_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/httpremote"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/enginetest"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
	"github.com/agentmcp/agentmcp/ports"
)

const (
	publicHost  = "mcp.example.test"
	publicURL   = "https://" + publicHost + "/mcp"
	issuer      = "https://issuer.example.test"
	metadataURL = "https://" + publicHost + "/.well-known/oauth-protected-resource/mcp"
	jsonSSE     = "application/json, text/event-stream"
	ping        = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	// Tokens the fake verifier knows.
	validToken = "valid-token-0123456789"
	// guard bounds every wait of a test on the host.
	guard = 5 * time.Second
)

var scopes = []string{"mcp:tools", "mcp:submit"}

// Challenges expected for publicURL (docs/SPEC.md §5.3).
const (
	challengeMissing = `Bearer resource_metadata="` + metadataURL + `"`
	challengeInvalid = `Bearer error="invalid_token", resource_metadata="` + metadataURL + `"`
	challengeScope   = `Bearer error="insufficient_scope", scope="mcp:tools mcp:submit", resource_metadata="` + metadataURL + `"`
)

// fakeVerifier implements the port: a token named after a refusal word
// ("expired", "missing-scope", ...) is refused with it, validToken (and
// any token added with admit) is admitted, anything else is bad-signature.
type fakeVerifier struct {
	desc ports.VerifierDescription

	mu       sync.Mutex
	admitted map[string]ports.Verdict
	calls    int
	// gate, when set, makes Verify report on entered and wait for a value
	// on gate (or the context's end) before deciding.
	gate    chan struct{}
	entered chan struct{}
}

func newFakeVerifier(resource string, clock *fakeClock) *fakeVerifier {
	v := &fakeVerifier{
		desc:     ports.VerifierDescription{Issuer: issuer, Resource: resource, Scopes: scopes},
		admitted: map[string]ports.Verdict{},
	}
	v.admit(validToken, "alice", "cli", clock.Now().Add(time.Hour))
	return v
}

func (v *fakeVerifier) admit(token, sub, client string, exp time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.admitted[token] = ports.Verdict{
		Principal: ports.Principal{Issuer: issuer, Subject: sub, Client: client},
		Expiry:    exp.Unix(),
	}
}

var refusalWords = []ports.RefusalReason{
	ports.RefusalOversize, ports.RefusalMalformed, ports.RefusalWrongType, ports.RefusalUnsupportedAlg,
	ports.RefusalAmbiguousKey, ports.RefusalUnknownKey, ports.RefusalKeyMismatch, ports.RefusalBadSignature,
	ports.RefusalWrongIssuer, ports.RefusalWrongAudience, ports.RefusalExpired, ports.RefusalNotYetValid,
	ports.RefusalMissingScope, ports.RefusalPrincipalNotAllowed, ports.RefusalKeysUnavailable,
}

func (v *fakeVerifier) Verify(ctx context.Context, token string) ports.Verdict {
	v.mu.Lock()
	v.calls++
	gate, entered := v.gate, v.entered
	verdict, ok := v.admitted[token]
	v.mu.Unlock()
	if gate != nil {
		entered <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
			return ports.Verdict{Refusal: ports.RefusalKeysUnavailable}
		}
	}
	if ok {
		return verdict
	}
	for _, w := range refusalWords {
		if token == string(w) {
			return ports.Verdict{Refusal: w}
		}
	}
	return ports.Verdict{Refusal: ports.RefusalBadSignature}
}

func (v *fakeVerifier) Describe() ports.VerifierDescription { return v.desc }

func (v *fakeVerifier) Calls() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.calls
}

// newEngine builds the engine for s, shut down within guard when the test
// ends (after the host's Stop: cleanups run last-registered first).
func newEngine(t testing.TB, s ports.Session, opts engine.Options) *engine.Engine {
	t.Helper()
	return enginetest.New(t, s, opts, guard)
}

// fakeClock is the throttle's and the cache's clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_800_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// auditLog collects audit records.
type auditLog struct {
	mu      sync.Mutex
	records []ports.AuditRecord
}

func (a *auditLog) Audit(r ports.AuditRecord) {
	a.mu.Lock()
	a.records = append(a.records, r)
	a.mu.Unlock()
}

func (a *auditLog) Records() []ports.AuditRecord {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]ports.AuditRecord(nil), a.records...)
}

// config is what a test varies about a host.
type config struct {
	publicURL string
	proxies   []string
	limits    httpremote.Limits
	verifier  ports.AccessTokenVerifier // default: a fakeVerifier for publicURL
	logger    *slog.Logger
	askClient bool
	held      *fake.Held // when set, the session served (and env.session its scripted part)
}

// env is one started host and what the test needs to talk to it.
type env struct {
	host     *httpremote.Host
	addr     netip.AddrPort
	res      publicRes
	verifier *fakeVerifier // nil when config.verifier was set
	clock    *fakeClock
	audit    *auditLog
	session  *fake.Session
	client   *http.Client
}

type publicRes struct{ host, path, metadataPath string }

func resOf(public string) publicRes {
	rest := strings.TrimPrefix(public, "https://")
	host, path, _ := strings.Cut(rest, "/")
	path = "/" + path
	mp := "/.well-known/oauth-protected-resource"
	if path != "/" {
		mp += path
	}
	return publicRes{host: host, path: path, metadataPath: mp}
}

// start serves a fake session behind a host configured by c on a free port
// of 127.0.0.1, and stops it at cleanup.
func start(t *testing.T, c config) *env {
	t.Helper()
	leakcheck.Check(t) // first: its cleanup runs after Stop and Shutdown
	if c.publicURL == "" {
		c.publicURL = publicURL
	}
	clock := newFakeClock()
	if c.limits.Now == nil {
		c.limits.Now = clock.Now
	}
	e := &env{res: resOf(c.publicURL), clock: clock, audit: &auditLog{}, session: fake.New()}
	var session ports.Session = e.session
	if c.held != nil {
		e.session, session = c.held.Session, c.held
	}
	verifier := c.verifier
	if verifier == nil {
		e.verifier = newFakeVerifier(c.publicURL, clock)
		verifier = e.verifier
	}
	h, err := httpremote.NewWithLimits(newEngine(t, session, engine.Options{Name: "t", Version: "1", AskClient: c.askClient}), httpremote.Options{
		Logger: c.logger,
		Authorization: httpremote.Authorization{
			Verifier: verifier, TrustedProxies: c.proxies, Audit: e.audit,
		},
	}, c.limits)
	if err != nil {
		t.Fatal(err)
	}
	err = h.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	addr := h.Addr()
	e.host, e.addr = h, addr
	tr := &http.Transport{}
	e.client = &http.Client{Transport: tr}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		if err := h.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return e
}

// request builds a POST of body to the endpoint with the public Host; extra
// are header name, value pairs (an empty value deletes the header).
func (e *env) request(ctx context.Context, method, target, body string, extra ...string) *http.Request {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+e.addr.String()+target, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	req.Host = e.res.host
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", jsonSSE)
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i] == "Host" {
			req.Host = extra[i+1]
			continue
		}
		if extra[i+1] == "" {
			req.Header.Del(extra[i])
			continue
		}
		req.Header.Add(extra[i], extra[i+1])
	}
	return req
}

// do sends a request and returns the response with its body read.
func (e *env) do(t *testing.T, method, target, body string, extra ...string) (*http.Response, string) {
	t.Helper()
	resp, err := e.client.Do(e.request(t.Context(), method, target, body, extra...))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// post sends ping to the endpoint with token as the bearer ("" for none).
func (e *env) post(t *testing.T, token string, extra ...string) (*http.Response, string) {
	t.Helper()
	if token != "" {
		extra = append([]string{"Authorization", "Bearer " + token}, extra...)
	}
	return e.do(t, "POST", e.res.path, ping, extra...)
}

// want checks a response's status, WWW-Authenticate, Retry-After and that
// its body is empty when wantBody is "".
func want(t *testing.T, resp *http.Response, body string, status int, challenge, retryAfter, wantBody string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("status %d, want %d (body %q)", resp.StatusCode, status, body)
	}
	if got := strings.Join(resp.Header.Values("WWW-Authenticate"), " | "); got != challenge {
		t.Errorf("WWW-Authenticate %q, want %q", got, challenge)
	}
	if got := resp.Header.Get("Retry-After"); got != retryAfter {
		t.Errorf("Retry-After %q, want %q", got, retryAfter)
	}
	if wantBody == "" && body != "" {
		t.Errorf("body %q, want it empty", body)
	}
	if wantBody != "" && !strings.Contains(body, wantBody) {
		t.Errorf("body %q, want it to contain %q", body, wantBody)
	}
	if v := resp.Header.Values("Mcp-Session-Id"); len(v) > 0 {
		t.Errorf("Mcp-Session-Id %q sent", v)
	}
}

// rawRequest sends one request over a new connection from local (a
// 127.x.y.z address; invalid means any) and returns the status code, or 0
// when the connection was closed without an answer.
func rawRequest(t *testing.T, to netip.AddrPort, local netip.Addr, head string) int {
	t.Helper()
	d := net.Dialer{Timeout: guard}
	if local.IsValid() {
		d.LocalAddr = &net.TCPAddr{IP: local.AsSlice()}
	}
	c, err := d.Dial("tcp", to.String())
	if err != nil {
		t.Error(err) // not Fatal: callers run it on goroutines too
		return 0
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(guard))
	if _, err := io.WriteString(c, head); err != nil {
		return 0
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// forgedHead is a request head carrying a forged token, and extra header
// lines, that closes its connection.
func (e *env) forgedHead(extra ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer forged\r\nContent-Type: application/json\r\nAccept: %s\r\nContent-Length: 0\r\nConnection: close\r\n", e.res.path, e.res.host, jsonSSE)
	for _, l := range extra {
		b.WriteString(l + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// loopbackAddr returns 127.0.x.y for i (1-based, up to 65534 distinct).
func loopbackAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, 1, byte(i >> 8), byte(i)})
}
