package httpremote_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
)

// keysVerifier is a fakeVerifier that fetches keys: ready says whether it
// holds them.
type keysVerifier struct {
	*fakeVerifier
	ready atomic.Bool
}

func (k *keysVerifier) KeysReady(context.Context) bool { return k.ready.Load() }

func TestHealthProbes(t *testing.T) {
	v := &keysVerifier{fakeVerifier: newFakeVerifier(publicURL, newFakeClock())}
	e := start(t, config{verifier: v})
	check := func(target string, extra []string, status int, body string) {
		t.Helper()
		resp, got := e.do(t, "GET", target, "", extra...)
		if resp.StatusCode != status || got != body {
			t.Errorf("GET %s %v = %d %q, want %d %q", target, extra, resp.StatusCode, got, status, body)
		}
	}
	// The issuer's keys are not fetched yet: live, not ready.
	check("/healthz", nil, 200, `{"status":"ok","reason":"serving"}`+"\n")
	check("/readyz", nil, 503, `{"status":"unavailable","reason":"keys"}`+"\n")
	v.ready.Store(true)
	check("/readyz", nil, 200, `{"status":"ok","reason":"ready"}`+"\n")
	// Any Host (an orchestrator probes the pod's address), no token; never
	// from a web page.
	check("/readyz", []string{"Host", "10.0.0.7:8080"}, 200, `{"status":"ok","reason":"ready"}`+"\n")
	check("/healthz", []string{"Origin", "https://" + e.res.host}, 403, "")
	if resp, _ := e.do(t, "POST", "/healthz", ""); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /healthz = %d Allow %q, want 405 GET, HEAD", resp.StatusCode, resp.Header.Get("Allow"))
	}
	if got := e.audit.Records(); len(got) != 0 {
		t.Errorf("probes were audited as refusals: %v", got)
	}
}

// TestHealthLeavesMCPAdmissionUnchanged: with the probes on, /mcp and a
// probe-like target refuse what they refused before.
func TestHealthLeavesMCPAdmissionUnchanged(t *testing.T) {
	e := start(t, config{})
	resp, _ := e.post(t, "")
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Errorf("/mcp without a token = %d %q, want 401 with a challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if resp, _ := e.post(t, validToken); resp.StatusCode != http.StatusOK {
		t.Errorf("/mcp with a valid token = %d, want 200", resp.StatusCode)
	}
	if resp, _ := e.post(t, validToken, "Host", "evil.example"); resp.StatusCode == http.StatusOK {
		t.Errorf("/mcp with another Host = %d, want a refusal", resp.StatusCode)
	}
	for _, target := range []string{"/healthz?verbose", "/readyz/", "/mcp/healthz"} {
		if resp, _ := e.do(t, "GET", target, ""); resp.StatusCode == http.StatusOK {
			t.Errorf("GET %s = 200, want a refusal", target)
		}
	}
}
