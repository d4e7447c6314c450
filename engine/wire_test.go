package engine_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
)

// TestInvalidUTF8IDIsRefused: an id whose bytes are not UTF-8 cannot be
// echoed as JSON text, so the request is -32600 with no id, and nothing
// written is invalid UTF-8.
func TestInvalidUTF8IDIsRefused(t *testing.T) {
	e, _ := engine.New(fake.New(), engine.Options{})
	c := newClient(t, e)
	c.send("{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":\"ping\"}")
	b := <-c.out
	if !utf8.Valid(b) || !strings.Contains(string(b), `"code":-32600`) || strings.Contains(string(b), `"id"`) {
		t.Errorf("answer %q, want -32600 without an id, valid UTF-8", b)
	}
}

// TestInstructions: the Instructions option is the instructions member of
// the initialize result and of the server/discover result (docs/SPEC.md
// §2), and absent from both without it.
func TestInstructions(t *testing.T) {
	const text = "Use agent_submit to hand the agent a task."
	for _, instr := range []string{text, ""} {
		e, err := engine.New(fake.New(), engine.Options{Instructions: instr})
		if err != nil {
			t.Fatal(err)
		}
		c := newClient(t, e)
		c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		c.send(`{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
		for range 2 {
			m := c.recv()
			got, has := result(t, m)["instructions"]
			if instr == "" && has {
				t.Errorf("id %v: instructions %v without the option", m["id"], got)
			}
			if instr != "" && got != instr {
				t.Errorf("id %v: instructions %v, want %q", m["id"], got, instr)
			}
		}
	}
}

// TestHeadersComparedAsGiven: the engine compares the headers it is handed
// with the body byte for byte; normalising them (Streamable HTTP's
// =?base64?…?= encoding, surrounding whitespace) is the carrier's. An
// encoded or padded name the carrier did not decode is a mismatch (-32020).
func TestHeadersComparedAsGiven(t *testing.T) {
	e, err := engine.New(fake.New(), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(t, e)
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	for _, tc := range []struct {
		name, version string
		want          string
	}{
		{"echo", "2026-07-28", `"result"`},
		{"=?base64?ZWNobw==?=", "2026-07-28", `"code":-32020`},
		{" echo ", "2026-07-28", `"code":-32020`},
		{"echo", " 2026-07-28", `"code":-32020`},
	} {
		h := engine.Headers{ProtocolVersion: tc.version, HasProtocolVersion: true, Method: "tools/call", HasMethod: true, Name: tc.name, HasName: true}
		r := e.Exchange(t.Context(), body, engine.ExchangeOptions{Headers: h})
		if !strings.Contains(string(r.Body), tc.want) {
			t.Errorf("Mcp-Name %q, version %q: %v %s, want %s", tc.name, tc.version, r.Kind, r.Body, tc.want)
		}
	}
}

// TestBatchSizeAgreesWithExchange: BatchSize counts a body's elements
// exactly when Exchange runs it as a batch, and is 0 for every body
// Exchange answers without running one (docs/SPEC.md §4), so a framing that
// takes per-element slots on its word never refuses (503) a body the engine
// would answer 400.
func TestBatchSizeAgreesWithExchange(t *testing.T) {
	e, err := engine.New(fake.New(), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(t, e)
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	const note = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	legacy := engine.Headers{}
	v0618 := engine.Headers{ProtocolVersion: "2025-06-18", HasProtocolVersion: true}
	v0326 := engine.Headers{ProtocolVersion: "2025-03-26", HasProtocolVersion: true}
	for _, tc := range []struct {
		body string
		h    engine.Headers
		max  int
		want int
	}{
		{ping, legacy, 0, 0},
		{" [" + ping + ", " + ping + "] ", legacy, 0, 2},
		{"[" + ping + "," + note + ",1]", v0326, 0, 3},
		{"[" + note + "]", legacy, 0, 1},
		{"[" + ping + "]", v0618, 0, 0},
		{"[]", legacy, 0, 0},
		{"[" + ping + "," + ping + "," + ping + "]", legacy, 2, 0},
		{"[" + ping + "," + ping + "]", legacy, 2, 2},
		{"[" + strings.Repeat(ping+",", 16) + ping + "]", legacy, 0, 0},
		{"[" + strings.Repeat(ping+",", 15) + ping + "]", legacy, 0, 16},
		{"[" + ping + ",", legacy, 0, 0},
		{"[" + ping + "] x", legacy, 0, 0},
		{`"x"`, legacy, 0, 0},
	} {
		n := engine.BatchSize([]byte(tc.body), tc.h, tc.max)
		if n != tc.want {
			t.Errorf("BatchSize(%.40q, max %d) = %d, want %d", tc.body, tc.max, n, tc.want)
		}
		r := e.Exchange(t.Context(), []byte(tc.body), engine.ExchangeOptions{Headers: tc.h, MaxBatch: tc.max})
		if ran := r.Kind != engine.Invalid; ran != (n > 0) && tc.body[0] != '{' {
			t.Errorf("%.40q, max %d: Exchange answered %v %s, BatchSize %d", tc.body, tc.max, r.Kind, r.Body, n)
		}
	}
}

// TestMissingHeaderSaysMissing: a 2026-07-28 HTTP request without a
// standard header it must carry is -32020 (HTTP 400) naming the header as
// missing, not as a value that does not match (docs/SPEC.md §4).
func TestMissingHeaderSaysMissing(t *testing.T) {
	e, err := engine.New(fake.New(), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{},` + modernNoElicit + `}}`)
	full := engine.Headers{ProtocolVersion: "2026-07-28", HasProtocolVersion: true, Method: "tools/call", HasMethod: true, Name: "echo", HasName: true}
	for _, c := range []struct {
		name string
		h    engine.Headers
		want string
	}{
		{"Mcp-Name", engine.Headers{ProtocolVersion: "2026-07-28", HasProtocolVersion: true, Method: "tools/call", HasMethod: true}, "Header mismatch: Mcp-Name is missing; it must equal params.name"},
		{"Mcp-Method", engine.Headers{ProtocolVersion: "2026-07-28", HasProtocolVersion: true, Name: "echo", HasName: true}, "Header mismatch: Mcp-Method is missing; it must equal the method"},
		{"MCP-Protocol-Version", engine.Headers{Method: "tools/call", HasMethod: true, Name: "echo", HasName: true}, "Header mismatch: MCP-Protocol-Version is missing; it must equal params._meta protocolVersion"},
		{"a wrong Mcp-Name", func() engine.Headers { h := full; h.Name = "fail"; return h }(), "Header mismatch: Mcp-Name must equal params.name"},
	} {
		r := e.Exchange(t.Context(), body, engine.ExchangeOptions{Headers: c.h})
		var m struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.Body, &m); err != nil || r.Kind != engine.Invalid || m.Error.Code != -32020 || m.Error.Message != c.want {
			t.Errorf("%s: kind %d, %s; want 400 with -32020 %q", c.name, r.Kind, r.Body, c.want)
		}
	}
	if r := e.Exchange(t.Context(), body, engine.ExchangeOptions{Headers: full}); r.Kind != engine.Answered {
		t.Errorf("with every header: %d %s", r.Kind, r.Body)
	}
}
