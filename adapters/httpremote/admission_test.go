package httpremote_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/ports"
)

func TestMetadata(t *testing.T) {
	e := start(t, config{})
	wantDoc := `{"resource":"https://mcp.example.test/mcp","authorization_servers":["https://issuer.example.test"],"scopes_supported":["mcp:tools","mcp:submit"],"bearer_methods_supported":["header"]}`
	for _, host := range []string{publicHost, publicHost + ":443", "MCP.Example.TEST", "mcp.example.test:443"} {
		resp, body := e.do(t, "GET", e.res.metadataPath, "", "Host", host, "Content-Type", "", "Accept", "")
		if resp.StatusCode != 200 || body != wantDoc {
			t.Errorf("Host %s: GET metadata = %d %s, want 200 %s", host, resp.StatusCode, body, wantDoc)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
	}
	for _, m := range []string{"POST", "PUT", "DELETE", "HEAD"} {
		resp, body := e.do(t, m, e.res.metadataPath, "")
		want(t, resp, body, http.StatusMethodNotAllowed, "", "", "")
		if a := resp.Header.Get("Allow"); a != "GET" {
			t.Errorf("%s metadata: Allow %q, want GET", m, a)
		}
	}
	if n := e.verifier.Calls(); n != 0 {
		t.Errorf("the metadata called the verifier %d times", n)
	}
	if r := e.audit.Records(); len(r) != 0 {
		t.Errorf("audit %v, want none", r)
	}
}

// TestPrefixedPublicURL: every path derives from the public URL's path, and
// the bare paths a host without prefix would use answer 404.
func TestPrefixedPublicURL(t *testing.T) {
	const public = "https://mcp.example.test/team/agent/mcp"
	const metadata = "https://mcp.example.test/.well-known/oauth-protected-resource/team/agent/mcp"
	e := start(t, config{publicURL: public})
	resp, body := e.do(t, "GET", "/.well-known/oauth-protected-resource/team/agent/mcp", "")
	if resp.StatusCode != 200 || !strings.HasPrefix(body, `{"resource":"`+public+`",`) {
		t.Errorf("metadata: %d %s", resp.StatusCode, body)
	}
	resp, body = e.post(t, "")
	want(t, resp, body, 401, `Bearer resource_metadata="`+metadata+`"`, "", "")
	resp, body = e.post(t, validToken)
	want(t, resp, body, 200, "", "", `"result":{}`)
	for _, target := range []string{
		"/mcp", "/", "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp",
		"/team/agent/mcp/", "/team/agent/mcp?x=1", "/team/agent", "/TEAM/agent/mcp",
		"/.well-known/oauth-protected-resource/team/agent/mcp?x",
	} {
		for _, m := range []string{"GET", "POST"} {
			resp, body := e.do(t, m, target, ping, "Authorization", "Bearer "+validToken)
			if resp.StatusCode != 404 || body != "" {
				t.Errorf("%s %s = %d %q, want 404 and an empty body", m, target, resp.StatusCode, body)
			}
		}
	}
	if n := len(e.audit.Records()); n != 1 {
		t.Errorf("%d audit records, want 1 (the missing token)", n)
	}
}

func TestRootPublicURL(t *testing.T) {
	e := start(t, config{publicURL: "https://mcp.example.test"})
	resp, body := e.do(t, "GET", "/.well-known/oauth-protected-resource", "")
	if resp.StatusCode != 200 || !strings.HasPrefix(body, `{"resource":"https://mcp.example.test",`) {
		t.Errorf("metadata: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do(t, "POST", "/", ping)
	want(t, resp, body, 401, `Bearer resource_metadata="https://mcp.example.test/.well-known/oauth-protected-resource"`, "", "")
	resp, body = e.do(t, "POST", "/", ping, "Authorization", "Bearer "+validToken)
	want(t, resp, body, 200, "", "", `"result":{}`)
}

// TestHostAndOrigin: a Host other than the public one — the listener's own
// 127.0.0.1:<port> included — or a foreign Origin gets 403 with an empty
// body, before the token is looked at: nothing is verified, counted or
// audited.
func TestHostAndOrigin(t *testing.T) {
	e := start(t, config{})
	refused := [][]string{
		{"Host", e.addr.String()},
		{"Host", "127.0.0.1"},
		{"Host", "localhost:" + fmt.Sprint(e.addr.Port())},
		{"Host", "mcp.example.test:8443"},
		{"Host", "evil.example"},
		{"Host", "mcp.example.test.evil.example"},
		{"Origin", "https://evil.example"},
		{"Origin", "http://mcp.example.test"},
		{"Origin", "https://mcp.example.test:443"},
		{"Origin", "null"},
	}
	for _, h := range refused {
		for _, token := range []string{validToken, "forged", ""} {
			resp, body := e.post(t, token, h...)
			want(t, resp, body, http.StatusForbidden, "", "", "")
		}
		resp, body := e.do(t, "GET", e.res.metadataPath, "", h...)
		want(t, resp, body, http.StatusForbidden, "", "", "")
	}
	// Two Origin headers, even if one is right.
	resp, body := e.post(t, validToken, "Origin", "https://mcp.example.test", "Origin", "https://evil.example")
	want(t, resp, body, http.StatusForbidden, "", "", "")
	if n := e.verifier.Calls(); n != 0 {
		t.Errorf("verifier called %d times, want 0", n)
	}
	if r := e.audit.Records(); len(r) != 0 {
		t.Errorf("audit %v, want none", r)
	}
	if n := e.host.ThrottledClients(); n != 0 {
		t.Errorf("%d clients counted, want 0", n)
	}
	// The public origin is fine; so is none.
	resp, body = e.post(t, validToken, "Origin", "https://mcp.example.test")
	want(t, resp, body, 200, "", "", `"result":{}`)
}

// TestRefusalTable: every row of docs/SPEC.md §5.3's table — status, exact
// challenge, empty body, audit record — and whether it counts: a counted
// refusal sent 21 times is answered 429 the 21st time (burst 20), an
// uncounted one never.
func TestRefusalTable(t *testing.T) {
	type row struct {
		token     string // "" sends no Authorization
		refusal   ports.RefusalReason
		status    int
		challenge string
		counted   bool
	}
	rows := []row{
		{"", ports.RefusalMissingToken, 401, challengeMissing, true},
		{"missing-scope", ports.RefusalMissingScope, 403, challengeScope, false},
		{"principal-not-allowed", ports.RefusalPrincipalNotAllowed, 403, "", false},
		{"expired", ports.RefusalExpired, 401, challengeInvalid, false},
		{"not-yet-valid", ports.RefusalNotYetValid, 401, challengeInvalid, false},
		{"wrong-audience", ports.RefusalWrongAudience, 401, challengeInvalid, false},
		{"keys-unavailable", ports.RefusalKeysUnavailable, 503, "", false},
	}
	for _, w := range []ports.RefusalReason{
		ports.RefusalOversize, ports.RefusalMalformed, ports.RefusalWrongType, ports.RefusalUnsupportedAlg,
		ports.RefusalAmbiguousKey, ports.RefusalUnknownKey, ports.RefusalKeyMismatch, ports.RefusalBadSignature,
		ports.RefusalWrongIssuer,
	} {
		rows = append(rows, row{string(w), w, 401, challengeInvalid, true})
	}
	for _, r := range rows {
		t.Run(string(r.refusal), func(t *testing.T) {
			e := start(t, config{})
			for i := range 20 {
				resp, body := e.post(t, r.token)
				if resp.StatusCode != r.status {
					t.Fatalf("request %d: status %d, want %d", i+1, resp.StatusCode, r.status)
				}
				want(t, resp, body, r.status, r.challenge, "", "")
			}
			resp, body := e.post(t, r.token)
			if r.counted {
				want(t, resp, body, http.StatusTooManyRequests, "", "3", "")
			} else {
				want(t, resp, body, r.status, r.challenge, "", "")
			}
			recs := e.audit.Records()
			if len(recs) != 21 {
				t.Fatalf("%d audit records, want 21", len(recs))
			}
			for i, rec := range recs {
				want := ports.AuditRecord{Refusal: r.refusal, Remote: ports.AddressLoopback, Throttled: r.counted && i == 20}
				if rec != want {
					t.Errorf("audit record %d = %+v, want %+v", i+1, rec, want)
				}
			}
			wantCalls := 21
			if r.token == "" {
				wantCalls = 0
			}
			if n := e.verifier.Calls(); n != wantCalls {
				t.Errorf("verifier called %d times, want %d (every token is verified before counting)", n, wantCalls)
			}
		})
	}
}

// TestBearer: what counts as a bearer token (RFC 6750 §2.1).
func TestBearer(t *testing.T) {
	e := start(t, config{})
	admitted := []string{"Bearer " + validToken, "bearer " + validToken, "BEARER \t " + validToken}
	for _, a := range admitted {
		resp, body := e.do(t, "POST", e.res.path, ping, "Authorization", a)
		want(t, resp, body, 200, "", "", `"result":{}`)
	}
	missing := [][]string{
		{},
		{"Authorization", "Basic dXNlcjpwYXNz"},
		{"Authorization", "Bearer"},
		{"Authorization", "Bearer   "},
		{"Authorization", "Bearer" + validToken},
		{"Authorization", "Token " + validToken},
		{"Authorization", "Bearer " + validToken, "Authorization", "Bearer " + validToken},
	}
	for _, h := range missing {
		resp, body := e.do(t, "POST", e.res.path, ping, h...)
		want(t, resp, body, 401, challengeMissing, "", "")
	}
	for _, r := range e.audit.Records() {
		if r.Refusal != ports.RefusalMissingToken {
			t.Errorf("audit %+v, want missing-token", r)
		}
	}
	// A query parameter is no bearer method here (RFC 6750 §2.3 is not
	// supported: bearer_methods_supported is ["header"]).
	resp, body := e.do(t, "POST", e.res.path+"?access_token="+validToken, ping)
	want(t, resp, body, 404, "", "", "")
}

// TestLoopbackTokenIsJustAToken: the loopback host's kind of token (64
// lowercase hex characters) is handed to the verifier like any other and
// refused by it; no code path accepts it here.
func TestLoopbackTokenIsJustAToken(t *testing.T) {
	e := start(t, config{})
	resp, body := e.post(t, strings.Repeat("0123456789abcdef", 4))
	want(t, resp, body, 401, challengeInvalid, "", "")
	if n := e.verifier.Calls(); n != 1 {
		t.Errorf("verifier called %d times, want 1", n)
	}
}

func TestHeaderLimit(t *testing.T) {
	e := start(t, config{})
	resp, body := e.post(t, validToken, "X-Pad", strings.Repeat("a", 16<<10))
	want(t, resp, body, http.StatusRequestHeaderFieldsTooLarge, "", "", "")
	resp, body = e.post(t, validToken, "X-Pad", strings.Repeat("a", 15<<10))
	want(t, resp, body, 200, "", "", `"result":{}`)
	if r := e.audit.Records(); len(r) != 0 {
		t.Errorf("audit %v, want none", r)
	}
}

// TestServedStateless: an admitted request goes on to the framing (docs/SPEC.md
// §4), in both eras, and no response ever carries Mcp-Session-Id, even
// when the client sends one.
func TestServedStateless(t *testing.T) {
	e := start(t, config{})
	auth := []string{"Authorization", "Bearer " + validToken}
	steps := []struct {
		body     string
		extra    []string
		status   int
		contains string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, nil, 200, `"protocolVersion":"2025-06-18"`},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, []string{"MCP-Protocol-Version", "2025-06-18"}, 202, ""},
		{`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, []string{"MCP-Protocol-Version", "2025-06-18", "Mcp-Session-Id", "made-up"}, 200, `"name":"agent_submit"`},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, []string{"MCP-Protocol-Version", "2025-06-18"}, 200, `\"text\":\"hi\"`},
		{`{"jsonrpc":"2.0","id":4,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			[]string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "server/discover"}, 200, `"supportedVersions"`},
	}
	for i, s := range steps {
		resp, body := e.do(t, "POST", e.res.path, s.body, append(append([]string{}, auth...), s.extra...)...)
		if resp.StatusCode != s.status || !strings.Contains(body, s.contains) {
			t.Errorf("step %d: %d %s, want %d containing %s", i+1, resp.StatusCode, body, s.status, s.contains)
		}
		if v := resp.Header.Values("Mcp-Session-Id"); len(v) > 0 {
			t.Errorf("step %d: Mcp-Session-Id %q", i+1, v)
		}
	}
	// After admission the framing answers: GET is 405 Allow: POST; without
	// a token the same GET is a missing token.
	resp, body := e.do(t, "GET", e.res.path, "", auth...)
	want(t, resp, body, 405, "", "", "")
	if a := resp.Header.Get("Allow"); a != "POST" {
		t.Errorf("GET endpoint: Allow %q", a)
	}
	resp, body = e.do(t, "GET", e.res.path, "")
	want(t, resp, body, 401, challengeMissing, "", "")
}
