package httploopback_test

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/httploopback"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/fuzzhttp"
)

const fuzzToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// FuzzLoopbackHTTP feeds arbitrary bytes, parsed as an HTTP request the way
// the server would (method, target, headers, body), through the loopback
// host's composed handler: its Admission in front of the framing, asking
// on. It must never panic or answer a status outside docs/SPEC.md §4's
// table; JSON bodies and event data must be JSON-RPC answers; and nothing
// without the exact Host, Origin and bearer token may reach the session.
func FuzzLoopbackHTTP(f *testing.F) {
	bound := netip.MustParseAddrPort("127.0.0.1:8123")
	s := fake.NewQuick(3)
	h := httploopback.Admission(bound, fuzzToken, nil)(fuzzhttp.Framing(f, s))
	for _, seed := range loopbackSeeds(bound.String()) {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, ok := fuzzhttp.Request(data)
		if !ok {
			return
		}
		admitted := mayAdmit(r, bound.String())
		before := s.Calls()
		rec := fuzzhttp.Serve(h, r)
		if err := fuzzhttp.CheckWithHints(rec); err != nil {
			t.Fatalf("%v\nrequest: %q", err, data)
		}
		if !admitted && (rec.Code != 401 && rec.Code != 403) {
			t.Fatalf("a request without the Host, Origin and token was answered %d\nrequest: %q", rec.Code, data)
		}
		if !admitted && s.Calls() != before {
			t.Fatalf("a request that was not admitted reached the session\nrequest: %q", data)
		}
	})
}

// mayAdmit is docs/SPEC.md §5.2's admission, written out on its own: the
// exact target, Host, Origin (none, or exactly the host's) and one
// Authorization of scheme Bearer (any case), spaces or tabs, the token.
func mayAdmit(r *http.Request, hostport string) bool {
	origins, auths := r.Header.Values("Origin"), r.Header.Values("Authorization")
	if r.RequestURI != "/mcp" || r.Host != hostport || len(auths) != 1 {
		return false
	}
	if len(origins) > 1 || (len(origins) == 1 && origins[0] != "http://"+hostport) {
		return false
	}
	const scheme = "bearer"
	a := auths[0]
	return len(a) > len(scheme) && strings.EqualFold(a[:len(scheme)], scheme) &&
		strings.ContainsAny(a[len(scheme):len(scheme)+1], " \t") &&
		strings.TrimLeft(a[len(scheme):], " \t") == fuzzToken
}

// loopbackSeeds are admitted and refused requests of every kind the host
// serves.
func loopbackSeeds(hostport string) []string {
	head := func(method, target string, extra ...string) string {
		h := []string{method + " " + target + " HTTP/1.1", "Host: " + hostport, "Authorization: Bearer " + fuzzToken,
			"Content-Type: application/json", "Accept: application/json, text/event-stream"}
		return strings.Join(append(h, extra...), "\r\n")
	}
	req := func(body string, extra ...string) string {
		return head("POST", "/mcp", append(extra, fmt.Sprintf("Content-Length: %d", len(body)))...) + "\r\n\r\n" + body
	}
	modern := func(method, name, params string) string {
		extra := []string{"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: " + method}
		if name != "" {
			extra = append(extra, "Mcp-Name: "+name)
		}
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
		if params != "" {
			meta += "," + params
		}
		return req(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{`+meta+`}}`, extra...)
	}
	return []string{
		req(`{"jsonrpc":"2.0","id":1,"method":"ping"}`),
		req(`{"jsonrpc":"2.0","id":"a","method":"tools/list"}`, "MCP-Protocol-Version: 2025-11-25"),
		req(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`),
		req(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"progress","arguments":{"n":2},"_meta":{"progressToken":"p"}}}`),
		req(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`),
		req(`{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}`),
		req(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`),
		req(`{"jsonrpc":"1.0","id":11,"method":"ping"}`),
		req(`{"jsonrpc":"2.0","method":42,"id":12}`),
		modern("tools/call", "write", `"name":"write","arguments":{"text":"x"}`),
		modern("tools/call", "write", `"name":"write","arguments":{"text":"x"},"requestState":"AAAA","inputResponses":{"prompt":{"action":"accept","content":{"decision":"allow_once"}}}`),
		modern("server/discover", "", ""),
		modern("tools/list", "", ""),
		head("GET", "/mcp") + "\r\n\r\n",
		head("POST", "/mcp?x=1", "Content-Length: 2") + "\r\n\r\n{}",
		head("POST", "/mcp", "Origin: http://evil.example", "Content-Length: 2") + "\r\n\r\n{}",
		head("POST", "/mcp", "Transfer-Encoding: chunked") + "\r\n\r\n5\r\n{\"a\":\r\n0\r\n\r\n",
		strings.Replace(req(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), "Bearer "+fuzzToken, "Bearer nope", 1),
		strings.Replace(req(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), "application/json, text/event-stream", "application/json", 1),
		strings.Replace(req(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), "Content-Type: application/json", "Content-Type: text/plain", 1),
	}
}
