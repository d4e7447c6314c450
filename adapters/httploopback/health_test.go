package httploopback_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/httploopback"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/ports"
)

// brokenCatalog is a session whose catalog read fails once broken is set.
type brokenCatalog struct {
	*fake.Session
	broken atomic.Bool
}

func (b *brokenCatalog) RuntimeTools(ctx context.Context) ([]domain.Tool, error) {
	if b.broken.Load() {
		return nil, errors.New("catalog unavailable")
	}
	return b.Session.RuntimeTools(ctx)
}

// probe sends method target with Host host (and the header pairs extra),
// no token, and returns the status and body.
func (e *env) probe(t *testing.T, method, target, host string, extra ...string) (int, string) {
	t.Helper()
	c := dial(t, e.addr)
	head := method + " " + target + " HTTP/1.1\nHost: " + host + "\nConnection: close"
	for i := 0; i+1 < len(extra); i += 2 {
		head += "\n" + extra[i] + ": " + extra[i+1]
	}
	c.send(t, head, nil)
	resp, body := c.response(t)
	return resp.StatusCode, string(body)
}

func TestHealthProbes(t *testing.T) {
	s := &brokenCatalog{Session: fake.New()}
	e := start(t, s, httploopback.Limits{})
	otherPath := "agentmcp: refused (request-target, other-path): the endpoint is http://" + e.addr + "/mcp exactly (no other path, no query)\n"
	for _, c := range []struct {
		name, method, target, host string
		extra                      []string
		status                     int
		body                       string
	}{
		{"live", "GET", "/healthz", e.addr, nil, 200, `{"status":"ok","reason":"serving"}` + "\n"},
		{"ready", "GET", "/readyz", e.addr, nil, 200, `{"status":"ok","reason":"ready"}` + "\n"},
		{"HEAD", "HEAD", "/readyz", e.addr, nil, 200, ""},
		{"other Host", "GET", "/healthz", "evil.example:80", nil, 403, ""},
		{"localhost", "GET", "/healthz", "localhost:" + strings.Split(e.addr, ":")[1], nil, 403, ""},
		{"Origin", "GET", "/readyz", e.addr, []string{"Origin", "http://" + e.addr}, 403, ""},
		{"POST", "POST", "/healthz", e.addr, []string{"Content-Length", "0"}, 405, ""},
		// Not exactly the probe's target: the /mcp admission refuses it,
		// with its hint.
		{"query", "GET", "/healthz?verbose", e.addr, nil, 403, otherPath},
		{"slash", "GET", "/readyz/", e.addr, nil, 403, otherPath},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, body := e.probe(t, c.method, c.target, c.host, c.extra...)
			if status != c.status || body != c.body {
				t.Errorf("%s %s = %d %q, want %d %q", c.method, c.target, status, body, c.status, c.body)
			}
		})
	}
	s.broken.Store(true)
	if status, body := e.probe(t, "GET", "/readyz", e.addr); status != 503 || body != `{"status":"unavailable","reason":"catalog"}`+"\n" {
		t.Errorf("readyz with a failing catalog = %d %q", status, body)
	}
	if status, _ := e.probe(t, "GET", "/healthz", e.addr); status != 200 {
		t.Errorf("healthz with a failing catalog = %d, want 200 (the process serves)", status)
	}
}

// TestHealthLeavesMCPAdmissionUnchanged: with the probes on, /mcp refuses
// exactly what it refused before (no token, another Host, an Origin, another
// target), and a probe's lack of a token admits nothing else.
func TestHealthLeavesMCPAdmissionUnchanged(t *testing.T) {
	e := start(t, fake.New(), httploopback.Limits{})
	port := strings.Split(e.addr, ":")[1]
	for _, c := range []struct {
		name  string
		lines []string
		want  int
	}{
		{"admitted", nil, 200},
		{"no token", []string{"Authorization:"}, 401},
		{"other Host", []string{"Host: localhost:" + port}, 403},
		{"Origin", []string{"+Origin: http://evil.example"}, 403},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
			conn := dial(t, e.addr)
			conn.send(t, e.head(len(body), c.lines...), []byte(body))
			resp, _ := conn.response(t)
			if resp.StatusCode != c.want {
				t.Errorf("/mcp %s = %d, want %d", c.name, resp.StatusCode, c.want)
			}
		})
	}
	conn := dial(t, e.addr)
	conn.send(t, e.headFor("/healthz/../mcp", 2, "Authorization:"), []byte("{}"))
	if resp, _ := conn.response(t); resp.StatusCode != 403 {
		t.Errorf("a probe-like target reaching /mcp without a token = %d, want 403", resp.StatusCode)
	}
}

var _ ports.Session = (*brokenCatalog)(nil)
