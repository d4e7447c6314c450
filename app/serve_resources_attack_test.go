package app_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/agent"
	"github.com/agentmcp/agentmcp/engine"
)

// featureClient sends raw requests for the resource attack tests on one
// carrier: a stream connection (stdio, a Unix socket) or an HTTP endpoint
// (the loopback host, the remote host) through a transport of its own, so
// that the connections it opens are counted.
type featureClient struct {
	t      *testing.T
	prefix string // what the workspace's file URIs start with
	id     int
	// streams
	w  io.Writer
	sc *bufio.Scanner
	// HTTP
	url, host, token string
	hc               *http.Client
	dials            int // connections the HTTP client opened
	logs             fmt.Stringer
}

// answer is one request's outcome: the HTTP status (200 on a stream), the
// raw answer and, when it is JSON-RPC, its error.
type answer struct {
	status int
	raw    string
	code   float64
	msg    string
	data   map[string]any
	result map[string]any
}

// call sends method with params (JSON members) as a 2026-07-28 request, or
// over HTTP as a 2025-11-25 one when legacy; name is the Mcp-Name a modern
// HTTP request carries ("" for none).
func (c *featureClient) call(method, params, name string, legacy bool) answer {
	c.t.Helper()
	c.id++
	meta := `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	if legacy {
		meta = ""
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{%s%s}}`, c.id, method, params, meta)
	a := answer{status: 200}
	if c.hc == nil {
		if _, err := io.WriteString(c.w, body+"\n"); err != nil {
			c.t.Fatalf("write: %v", err)
		}
		for {
			if !c.sc.Scan() {
				c.t.Fatalf("no answer to %s %.100s", method, params)
			}
			var m struct{ ID json.RawMessage }
			if json.Unmarshal(c.sc.Bytes(), &m) == nil && string(m.ID) == fmt.Sprint(c.id) {
				a.raw = c.sc.Text()
				break
			}
		}
	} else {
		req, _ := http.NewRequest("POST", c.url, strings.NewReader(body))
		if c.host != "" {
			req.Host = c.host
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+c.token)
		if legacy {
			req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		} else {
			req.Header.Set("MCP-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", method)
			if name != "" {
				req.Header.Set("Mcp-Name", name)
			}
		}
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
			if !i.Reused {
				c.dials++
			}
		}}
		resp, err := c.hc.Do(req.WithContext(httptrace.WithClientTrace(c.t.Context(), trace)))
		if err != nil {
			c.t.Fatalf("%s: %v", method, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		a.status, a.raw = resp.StatusCode, string(b)
		if i := strings.LastIndex(a.raw, "data: "); strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") && i >= 0 {
			a.raw = strings.TrimSpace(a.raw[i+len("data: "):])
		}
	}
	var m struct {
		Error *struct {
			Code    float64
			Message string
			Data    map[string]any
		}
		Result map[string]any
	}
	if json.Unmarshal([]byte(a.raw), &m) == nil {
		a.result = m.Result
		if m.Error != nil {
			a.code, a.msg, a.data = m.Error.Code, m.Error.Message, m.Error.Data
		}
	}
	return a
}

// resourceAttackFixture is a root holding notes.md, a sparse 1 GiB
// huge.bin, and a secret beside it.
func resourceAttackFixture(t *testing.T) string {
	t.Helper()
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "notes.md"), []byte("# notes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(parent, "secret"), []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(root, "huge.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	return root
}

// featureCarriers opens a client of the CLI's agent over root on each
// carrier: serve stdio, serve unix and serve http in this process, and the
// remote host (app.NewRemote over the agent on the workspace with
// agentmcp://workspace/ URIs, as serve remote builds it).
func featureCarriers(t *testing.T, root string) map[string]*featureClient {
	model := writingModel(t)
	resolved, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*featureClient{}
	for _, carrier := range []string{"stdio", "unix", "http"} {
		m := serveOver(t, carrier, "--root", root, "--model", "m", "--model-url", model.URL, "--ephemeral", "--no-model-probe")
		c := &featureClient{t: t, prefix: "file://" + resolved + "/", w: m.w, sc: m.sc, url: m.url, token: m.token, logs: m.stderr}
		if carrier == "http" {
			c.hc = &http.Client{Transport: &http.Transport{}}
			t.Cleanup(c.hc.CloseIdleConnections)
		}
		out[carrier] = c
	}
	addr, iss := startRemoteAgent(t, root, model, agent.Options{}, false, "alice")
	remote := &featureClient{t: t, prefix: "agentmcp://workspace/", url: "http://" + addr + "/team/agent/mcp", host: "mcp.example.test",
		token: iss.token(t, false, nil), hc: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(remote.hc.CloseIdleConnections)
	out["remote"] = remote
	return out
}

// TestResourceHugeURIEveryCarrier: a client's URI (or prompt name) of
// 1 MB, on every carrier, is a clear -32602 that never echoes it (the
// answer stays short, the server's log holds none of it) and reaches no
// session (engine.MaxURIBytes, docs/SPEC.md §2); the connection goes on
// serving: a stream answers the next request, an HTTP client keeps its
// connection. A 2026-07-28 HTTP request must mirror the URI in Mcp-Name
// (§4): a 1 MB header is 431 before any body is read, and the host serves
// the client's next connection.
func TestResourceHugeURIEveryCarrier(t *testing.T) {
	root := resourceAttackFixture(t)
	huge := strings.Repeat("a", 1_000_000)
	run := strings.Repeat("a", 64) // what an echo would carry
	for carrier, c := range featureCarriers(t, root) {
		t.Run(carrier, func(t *testing.T) {
			c.t = t
			uri := c.prefix + huge
			calls := []struct{ method, params, name string }{
				{"resources/read", `"uri":"` + uri + `"`, uri},
				{"prompts/get", `"name":"` + huge + `"`, huge},
				{"completion/complete", `"ref":{"type":"ref/resource","uri":"` + uri + `"},"argument":{"name":"name","value":""}`, ""},
				{"completion/complete", `"ref":{"type":"ref/prompt","name":"` + huge + `"},"argument":{"name":"conversation","value":""}`, ""},
			}
			served := func(legacy bool) {
				t.Helper()
				a := c.call("resources/read", `"uri":"`+c.prefix+`notes.md"`, c.prefix+"notes.md", legacy)
				if contents, _ := a.result["contents"].([]any); a.status != 200 || len(contents) != 1 {
					t.Fatalf("after the huge requests, resources/read notes.md: %d %.300s", a.status, a.raw)
				}
			}
			eras := []bool{false}
			if c.hc != nil {
				eras = []bool{true, false} // 2025-11-25 carries no Mcp-Name
			}
			for _, legacy := range eras {
				for _, k := range calls {
					a := c.call(k.method, k.params, k.name, legacy)
					if strings.Contains(a.raw, run) || len(a.raw) > 1024 {
						t.Errorf("%s (legacy %v) answered %d bytes, echoing the 1 MB value: %.200s", k.method, legacy, len(a.raw), a.raw)
					}
					if c.hc != nil && !legacy && k.name != "" {
						// The Mcp-Name header alone is over the host's 16 KiB.
						if a.status != http.StatusRequestHeaderFieldsTooLarge {
							t.Errorf("%s with a 1 MB Mcp-Name: %d %.200s, want 431", k.method, a.status, a.raw)
						}
						continue
					}
					if a.status != 200 || a.code != -32602 || !strings.Contains(a.msg, fmt.Sprintf("longer than %d bytes", engine.MaxURIBytes)) {
						t.Errorf("%s (legacy %v): %d %.300s, want -32602 saying the bound", k.method, legacy, a.status, a.raw)
					}
				}
				if c.hc != nil && legacy {
					dials := c.dials
					served(true)
					if c.dials != dials || dials != 1 {
						t.Errorf("the HTTP client opened %d connections for the legacy requests, want one kept throughout", c.dials)
					}
				}
			}
			served(false)
			if c.logs != nil && strings.Contains(c.logs.String(), run) {
				t.Error("the server's log holds the 1 MB value")
			}
		})
	}
}

// TestResourceAttacksEveryCarrier: on every carrier, a sparse 1 GiB file is
// refused from its size, and traversals out of the root are -32602 with
// data.uri and nothing of what lies outside (docs/SPEC.md §2).
func TestResourceAttacksEveryCarrier(t *testing.T) {
	root := resourceAttackFixture(t)
	for carrier, c := range featureCarriers(t, root) {
		t.Run(carrier, func(t *testing.T) {
			c.t = t
			for _, tc := range []struct{ path, want string }{
				{"huge.bin", `"huge.bin" is 1073741824 bytes: a resource read reads files of at most 1048576 bytes (1 MiB)`},
				{"../secret", "escapes the workspace root"},
				{"%2e%2e/secret", "escapes the workspace root"},
				{"x/..%2F..%2Fsecret", "escapes the workspace root"},
				{"%252e%252e/secret", "no such file"},
				{"..%5Csecret", "no such file"},
				{"/" + filepath.Dir(root) + "/secret", "absolute"},
				{"notes.md%00", "NUL"},
			} {
				uri := c.prefix + tc.path
				a := c.call("resources/read", `"uri":`+jsonString(uri), uri, false)
				if a.code != -32602 || !strings.Contains(a.msg, tc.want) || a.data["uri"] != uri || strings.Contains(a.raw, "SECRET") {
					t.Errorf("resources/read %s: %d %.300s, want -32602 saying %q with data.uri", tc.path, a.status, a.raw, tc.want)
				}
			}
		})
	}
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestServeDeprecatedFeaturesStayOut: what SEP-2577 deprecates stays out on
// every carrier (docs/SPEC.md §2): server/discover declares no logging
// capability, and logging/setLevel is -32601 (on HTTP in both eras).
func TestServeDeprecatedFeaturesStayOut(t *testing.T) {
	root := resourceAttackFixture(t)
	for carrier, c := range featureCarriers(t, root) {
		t.Run(carrier, func(t *testing.T) {
			c.t = t
			d := c.call("server/discover", `"x":0`, "", false)
			caps, _ := d.result["capabilities"].(map[string]any)
			if caps["resources"] == nil || caps["prompts"] == nil || caps["completions"] == nil {
				t.Fatalf("discover: %.300s, want resources, prompts and completions", d.raw)
			}
			for _, out := range []string{"logging", "sampling", "roots", "elicitation"} {
				if _, ok := caps[out]; ok {
					t.Errorf("discover declares %s: %.300s", out, d.raw)
				}
			}
			eras := []bool{false}
			if c.hc != nil {
				eras = append(eras, true)
			}
			for _, legacy := range eras {
				if a := c.call("logging/setLevel", `"level":"debug"`, "", legacy); a.code != -32601 {
					t.Errorf("logging/setLevel (legacy %v): %.300s, want -32601", legacy, a.raw)
				}
			}
		})
	}
}
