package httpremote_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/httpremote"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/fuzzhttp"
)

// FuzzRemoteHTTP feeds arbitrary bytes, parsed as an HTTP request the way
// the server would, through the remote host's composed handler (its
// Admission, with a trusted proxy, in front of the framing, asking on),
// the request arriving from that proxy so X-Forwarded-For is read. It must
// never panic or answer a status outside docs/SPEC.md §4/§5.3's tables;
// JSON bodies and event data must be JSON-RPC answers; a request without
// a valid token for the endpoint never reaches the session; a 401 always
// names the metadata URL, a 429 always says when to retry; and no answer
// header ever carries the token sent.
func FuzzRemoteHTTP(f *testing.F) {
	clock := newFakeClock()
	v := newFakeVerifier(publicURL, clock)
	s := fake.NewQuick(3)
	framing := fuzzhttp.Framing(f, s)
	door, err := httpremote.NewAdmissionWithClock(httpremote.Authorization{Verifier: v, TrustedProxies: []string{"127.0.0.1"}}, clock.Now)
	if err != nil {
		f.Fatal(err)
	}
	h := door.Wrap(framing)
	for _, seed := range remoteSeeds() {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, ok := fuzzhttp.Request(data)
		if !ok {
			return
		}
		r.RemoteAddr = "127.0.0.1:40000"
		clock.Advance(time.Hour) // every client's throttle budget is full again
		auth := r.Header.Values("Authorization")
		token := ""
		if len(auth) == 1 {
			if scheme, rest, ok := strings.Cut(auth[0], " "); ok && strings.EqualFold(scheme, "bearer") {
				token = strings.TrimLeft(rest, " \t")
			}
		}
		host := strings.ToLower(r.Host)
		mayAdmit := r.RequestURI == "/mcp" && (host == publicHost || host == publicHost+":443") && token == validToken
		before := s.Calls()
		rec := fuzzhttp.Serve(h, r)
		if rec.Code == 200 && r.RequestURI == "/.well-known/oauth-protected-resource/mcp" {
			// The protected-resource metadata, not JSON-RPC.
			var doc struct{ Resource string }
			if r.Method != "GET" || json.Unmarshal(rec.Body.Bytes(), &doc) != nil || doc.Resource != publicURL {
				t.Fatalf("metadata answer %q to %s\nrequest: %q", rec.Body.Bytes(), r.Method, data)
			}
			return
		}
		if err := fuzzhttp.Check(rec); err != nil {
			t.Fatalf("%v\nrequest: %q", err, data)
		}
		if !mayAdmit && s.Calls() != before {
			t.Fatalf("a request without a valid token for the endpoint reached the session (status %d)\nrequest: %q", rec.Code, data)
		}
		if rec.Code == 401 && !strings.Contains(rec.Header().Get("WWW-Authenticate"), `resource_metadata="`+metadataURL+`"`) {
			t.Fatalf("401 without the metadata URL: %q\nrequest: %q", rec.Header().Values("WWW-Authenticate"), data)
		}
		if rec.Code == 429 && rec.Header().Get("Retry-After") == "" {
			t.Fatalf("429 without Retry-After\nrequest: %q", data)
		}
		for k, vs := range rec.Header() {
			for _, v := range vs {
				if !fixedHeaderValues[v] && strings.Trim(v, "0123456789") != "" {
					t.Fatalf("header %s: %q is none of the values the host sends\nrequest: %q", k, v, data)
				}
			}
		}
	})
}

// fixedHeaderValues are every header value the host answers with but
// numbers (Content-Length, Retry-After): nothing a client sent, a token
// least of all, is ever echoed.
var fixedHeaderValues = map[string]bool{
	challengeMissing: true, challengeInvalid: true, challengeScope: true,
	"close": true, "POST": true, "GET": true, "application/json": true, "text/event-stream": true,
	"no-cache": true, "no": true,
}

// remoteSeeds are admitted and refused requests of every kind the host
// answers.
func remoteSeeds() []string {
	head := func(method, target, token string, extra ...string) string {
		h := []string{method + " " + target + " HTTP/1.1", "Host: " + publicHost, "Content-Type: application/json",
			"Accept: application/json, text/event-stream"}
		if token != "" {
			h = append(h, "Authorization: Bearer "+token)
		}
		return strings.Join(append(h, extra...), "\r\n")
	}
	req := func(token, body string, extra ...string) string {
		return head("POST", "/mcp", token, append(extra, fmt.Sprintf("Content-Length: %d", len(body)))...) + "\r\n\r\n" + body
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	seeds := []string{
		req(validToken, ping),
		req(validToken, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, "X-Forwarded-For: 203.0.113.7, 127.0.0.1"),
		req(validToken, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"progress","arguments":{"n":2},"_meta":{"progressToken":1}}}`),
		req(validToken, `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`),
		req(validToken, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write","arguments":{"text":"x"},`+meta+`}}`,
			"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", "Mcp-Name: write"),
		req(validToken, `{"jsonrpc":"2.0","id":5,"method":"server/discover","params":{`+meta+`}}`, "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: server/discover"),
		req("", ping),
		req("forged", ping, "X-Forwarded-For: 198.51.100.1"),
		req("expired", ping),
		req("missing-scope", ping),
		req("principal-not-allowed", ping),
		req("keys-unavailable", ping),
		req(validToken, ping, "Origin: https://evil.example"),
		head("GET", "/.well-known/oauth-protected-resource/mcp", "") + "\r\n\r\n",
		head("POST", "/.well-known/oauth-protected-resource/mcp", "", "Content-Length: 0") + "\r\n\r\n",
		head("GET", "/other", validToken) + "\r\n\r\n",
		strings.Replace(req(validToken, ping), "Host: "+publicHost, "Host: MCP.example.test:443", 1),
		strings.Replace(req(validToken, ping), "Host: "+publicHost, "Host: 127.0.0.1:8080", 1),
	}
	return seeds
}
