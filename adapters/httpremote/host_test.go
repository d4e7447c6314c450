package httpremote_test

import (
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/internal/syncbuf"

	"github.com/agentmcp/agentmcp/adapters/httpremote"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/ports"
)

func validOptions() httpremote.Options {
	return httpremote.Options{
		Authorization: httpremote.Authorization{Verifier: newFakeVerifier(publicURL, newFakeClock())},
	}
}

// describe changes what the options' verifier describes: the one source of
// the resource's identity (docs/SPEC.md §5.3).
func describe(o *httpremote.Options, change func(*ports.VerifierDescription)) {
	d := o.Authorization.Verifier.Describe()
	change(&d)
	o.Authorization.Verifier = &fakeVerifier{desc: d}
}

func TestNewChecks(t *testing.T) {
	tests := []struct {
		name   string
		change func(*httpremote.Options)
		want   error // nil: New succeeds
	}{
		{"defaults", func(*httpremote.Options) {}, nil},
		{"IPv6 loopback", func(o *httpremote.Options) { o.Host = "::1" }, nil},
		{"all IPv4 addresses", func(o *httpremote.Options) { o.Host = "0.0.0.0" }, nil},
		{"a name", func(o *httpremote.Options) { o.Host = "localhost" }, httpremote.ErrHost},
		{"a host and port", func(o *httpremote.Options) { o.Host = "127.0.0.1:80" }, httpremote.ErrHost},
		{"port -1", func(o *httpremote.Options) { o.Port = -1 }, httpremote.ErrPort},
		{"port 65536", func(o *httpremote.Options) { o.Port = 65536 }, httpremote.ErrPort},
		{"public URL with explicit port", func(o *httpremote.Options) { setURL(o, "https://mcp.example.test:8443/mcp") }, nil},
		{"public URL at the root", func(o *httpremote.Options) { setURL(o, "https://mcp.example.test/") }, nil},
		{"public URL without a path", func(o *httpremote.Options) { setURL(o, "https://mcp.example.test") }, nil},
		{"public URL with an IPv6 host", func(o *httpremote.Options) { setURL(o, "https://[2001:db8::1]/mcp") }, nil},
		{"public URL over http", func(o *httpremote.Options) { setURL(o, "http://mcp.example.test/mcp") }, httpremote.ErrPublicURL},
		{"public URL in upper-case scheme", func(o *httpremote.Options) { setURL(o, "HTTPS://mcp.example.test/mcp") }, httpremote.ErrPublicURL},
		{"public URL relative", func(o *httpremote.Options) { setURL(o, "/mcp") }, httpremote.ErrPublicURL},
		{"public URL without host", func(o *httpremote.Options) { setURL(o, "https:///mcp") }, httpremote.ErrPublicURL},
		{"public URL with upper-case host", func(o *httpremote.Options) { setURL(o, "https://MCP.example.test/mcp") }, httpremote.ErrPublicURL},
		{"public URL with default port", func(o *httpremote.Options) { setURL(o, "https://mcp.example.test:443/mcp") }, httpremote.ErrPublicURL},
		{"public URL with empty port", func(o *httpremote.Options) { setURL(o, "https://mcp.example.test:/mcp") }, httpremote.ErrPublicURL},
		{"public URL with trailing slash", func(o *httpremote.Options) { setURL(o, "https://mcp.example.test/mcp/") }, httpremote.ErrPublicURL},
		{"public URL with credentials", func(o *httpremote.Options) { setURL(o, "https://user:secret@mcp.example.test/mcp") }, httpremote.ErrPublicURL},
		{"public URL with query", func(o *httpremote.Options) { setURL(o, "https://mcp.example.test/mcp?x=1") }, httpremote.ErrPublicURL},
		{"public URL with empty query", func(o *httpremote.Options) { setURL(o, "https://mcp.example.test/mcp?") }, httpremote.ErrPublicURL},
		{"public URL with fragment", func(o *httpremote.Options) { setURL(o, "https://mcp.example.test/mcp#f") }, httpremote.ErrPublicURL},
		{"public URL with dot segment", func(o *httpremote.Options) { setURL(o, "https://mcp.example.test/a/../mcp") }, httpremote.ErrPublicURL},
		{"public URL with empty segment", func(o *httpremote.Options) { setURL(o, "https://mcp.example.test/a//mcp") }, httpremote.ErrPublicURL},
		{"public URL over-escaped", func(o *httpremote.Options) { setURL(o, "https://mcp.example.test/m%63p") }, httpremote.ErrPublicURL},
		{"issuer over http", func(o *httpremote.Options) {
			describe(o, func(d *ports.VerifierDescription) { d.Issuer = "http://issuer.example.test" })
		}, httpremote.ErrIssuer},
		{"issuer relative", func(o *httpremote.Options) {
			describe(o, func(d *ports.VerifierDescription) { d.Issuer = "issuer.example.test" })
		}, httpremote.ErrIssuer},
		{"no scopes", func(o *httpremote.Options) { describe(o, func(d *ports.VerifierDescription) { d.Scopes = nil }) }, httpremote.ErrScopes},
		{"scope with a space", func(o *httpremote.Options) {
			describe(o, func(d *ports.VerifierDescription) { d.Scopes = []string{"a b"} })
		}, httpremote.ErrScopes},
		{"scope with a quote", func(o *httpremote.Options) {
			describe(o, func(d *ports.VerifierDescription) { d.Scopes = []string{`a"`} })
		}, httpremote.ErrScopes},
		{"scope with a backslash", func(o *httpremote.Options) {
			describe(o, func(d *ports.VerifierDescription) { d.Scopes = []string{`a\`} })
		}, httpremote.ErrScopes},
		{"empty scope", func(o *httpremote.Options) {
			describe(o, func(d *ports.VerifierDescription) { d.Scopes = []string{""} })
		}, httpremote.ErrScopes},
		{"trusted proxy by name", func(o *httpremote.Options) { o.Authorization.TrustedProxies = []string{"proxy.internal"} }, httpremote.ErrTrustedProxy},
		{"trusted proxy as a range", func(o *httpremote.Options) { o.Authorization.TrustedProxies = []string{"10.0.0.0/8"} }, httpremote.ErrTrustedProxy},
		{"trusted proxies as literals", func(o *httpremote.Options) {
			o.Authorization.TrustedProxies = []string{"127.0.0.1", "::1", "::ffff:10.0.0.1"}
		}, nil},
		{"no verifier", func(o *httpremote.Options) { o.Authorization.Verifier = nil }, httpremote.ErrVerifier},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := validOptions()
			tt.change(&o)
			h, err := httpremote.New(newEngine(t, fake.New(), engine.Options{}), o)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if s := h.String(); !strings.Contains(s, o.Authorization.Verifier.Describe().Resource) {
					t.Errorf("String() = %q", s)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("New: %v, want %v", err, tt.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q quotes the URL's credentials", err)
			}
		})
	}
}

// setURL changes the public URL the verifier describes.
func setURL(o *httpremote.Options, u string) {
	o.Authorization.Verifier = newFakeVerifier(u, newFakeClock())
}

func TestNewNeedsAnEngine(t *testing.T) {
	if _, err := httpremote.New(nil, validOptions()); err == nil {
		t.Error("New without an engine succeeded")
	}
}

func TestStartValidatesCatalog(t *testing.T) {
	o := validOptions()
	s := fake.New()
	s.SetTools([]domain.Tool{{Name: "bad name", InputSchema: json.RawMessage(`{"type":"object"}`)}})
	h, err := httpremote.New(newEngine(t, s, engine.Options{}), o)
	if err != nil {
		t.Fatal(err)
	}
	err = h.Start(t.Context())
	var ce *domain.CatalogError
	if !errors.As(err, &ce) {
		t.Fatalf("Start: %v, want a catalog error", err)
	}
	if err := h.Start(t.Context()); err == nil {
		t.Error("Start after a failed Start succeeded")
	}
}

// TestStartWarnings: bound to loopback without a trusted proxy, or to any
// other address, the host says why at start.
func TestStartWarnings(t *testing.T) {
	tests := []struct {
		host, proxy, want string
	}{
		{"127.0.0.1", "", "every client behind the proxy shares one throttle budget"},
		{"0.0.0.0", "", "terminate TLS in front of it"},
		{"127.0.0.1", "127.0.0.1", ""},
	}
	for _, tt := range tests {
		var logs syncbuf.Buffer
		o := validOptions()
		o.Host = tt.host
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		if tt.proxy != "" {
			o.Authorization.TrustedProxies = []string{tt.proxy}
		}
		h, err := httpremote.New(newEngine(t, fake.New(), engine.Options{}), o)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := h.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
		out := logs.String()
		if tt.want != "" && !strings.Contains(out, "level=WARN") || !strings.Contains(out, tt.want) {
			t.Errorf("Host %s, proxy %q: logs\n%s\nwant a warning %q", tt.host, tt.proxy, out, tt.want)
		}
		if tt.want == "" && strings.Contains(out, "level=WARN") {
			t.Errorf("Host %s, proxy %q: unexpected warning:\n%s", tt.host, tt.proxy, out)
		}
	}
}
