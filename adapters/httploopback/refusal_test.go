package httploopback_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentmcp/agentmcp/adapters/httploopback"
)

// TestRefusalsSayWhy: a refusal is neither silent for the person at the
// client (the body says what to do) nor in the host's log (one warning per
// refusal: status, check, coarse class and hint, never a header's value or
// the token).
func TestRefusalsSayWhy(t *testing.T) {
	bound := netip.MustParseAddrPort("127.0.0.1:8931")
	token := strings.Repeat("7", 64)
	stale := strings.Repeat("e", 64)
	var log bytes.Buffer
	admit := httploopback.Admission(bound, token, slog.New(slog.NewTextHandler(&log, nil)))
	h := admit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Errorf("admitted %v", r.Header) }))
	for _, c := range []struct {
		name         string
		host, target string
		auth         string
		status       int
		class, hint  string
	}{
		{"localhost", "localhost:8931", "/mcp", "Bearer " + token, 403, "host class=localhost", "use http://127.0.0.1:8931/mcp"},
		{"stale token", "127.0.0.1:8931", "/mcp", "Bearer " + stale, 401, "bearer-token class=wrong-token", "token in this host's token file"},
		{"no token", "127.0.0.1:8931", "/mcp", "", 401, "bearer-token class=missing", "with the token in this host's token file"},
		{"Basic", "127.0.0.1:8931", "/mcp", "Basic " + token, 401, "bearer-token class=not-bearer", "token file"},
		{"root path", "127.0.0.1:8931", "/", "Bearer " + token, 403, "request-target class=root", "the endpoint is http://127.0.0.1:8931/mcp exactly"},
		{"old port", "127.0.0.1:9999", "/mcp", "Bearer " + token, 403, "host class=other-port", "Host header must be 127.0.0.1:8931"},
	} {
		t.Run(c.name, func(t *testing.T) {
			log.Reset()
			r := httptest.NewRequest("POST", c.target, strings.NewReader(`{}`))
			r.Host = c.host
			if c.auth != "" {
				r.Header.Set("Authorization", c.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			body := w.Body.String()
			if w.Code != c.status || !strings.Contains(body, c.hint) {
				t.Errorf("%d %q, want %d with a body holding %q", w.Code, body, c.status, c.hint)
			}
			line := log.String()
			if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "reason="+c.class) || !strings.Contains(line, c.hint) {
				t.Errorf("log %q, want a warning with reason=%s and the hint", line, c.class)
			}
			if strings.Count(line, "\n") != 1 {
				t.Errorf("log %q, want one line", line)
			}
			for _, secret := range []string{token, stale, c.host} {
				if strings.Contains(body+line, secret) && secret != "127.0.0.1:8931" {
					t.Errorf("%q appears in the body or the log: %q %q", secret, body, line)
				}
			}
		})
	}
}

// TestRefusalLogBounded: a client refused in a loop cannot flood the log:
// at most 10 lines a minute (burst 10), and the next line logged counts
// the refusals left out.
func TestRefusalLogBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log bytes.Buffer
		admit := httploopback.Admission(netip.MustParseAddrPort("127.0.0.1:8931"), strings.Repeat("7", 64), slog.New(slog.NewTextHandler(&log, nil)))
		h := admit(http.NotFoundHandler())
		refuse := func() {
			r := httptest.NewRequest("POST", "/mcp", nil)
			r.Host = "127.0.0.1:8931"
			h.ServeHTTP(httptest.NewRecorder(), r)
		}
		for range 30 {
			refuse()
		}
		if n := strings.Count(log.String(), "\n"); n != 10 {
			t.Fatalf("%d lines for 30 refusals at once, want 10:\n%s", n, log.String())
		}
		time.Sleep(6 * time.Second) // one more line's worth of budget
		log.Reset()
		refuse()
		if !strings.Contains(log.String(), "suppressed=20") {
			t.Errorf("the next line does not count the 20 left out: %q", log.String())
		}
	})
}
