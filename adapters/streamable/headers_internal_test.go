package streamable

import (
	"net/http"
	"testing"

	"github.com/agentmcp/agentmcp/engine"
)

// TestMCPHeadersNormalised: the framing hands the engine the MCP headers
// as their values mean them (MCP 2026-07-28 "Standard headers"): trimmed,
// =?base64?…?= decoded, repeats joined with commas (so they can only
// mismatch), a sentinel that does not decode kept as sent, and a header
// not sent marked absent.
func TestMCPHeadersNormalised(t *testing.T) {
	for _, tc := range []struct {
		in   http.Header
		want engine.Headers
	}{
		{http.Header{}, engine.Headers{}},
		{
			http.Header{"Mcp-Protocol-Version": {" 2026-07-28\t"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"=?base64?w6ljaG8=?="}},
			engine.Headers{ProtocolVersion: "2026-07-28", HasProtocolVersion: true, Method: "tools/call", HasMethod: true, Name: "écho", HasName: true},
		},
		{
			http.Header{"Mcp-Name": {" =?base64?ZWNobw==?= "}, "Mcp-Method": {""}},
			engine.Headers{Method: "", HasMethod: true, Name: "echo", HasName: true},
		},
		{
			http.Header{"Mcp-Name": {"=?base64?not base64!?="}},
			engine.Headers{Name: "=?base64?not base64!?=", HasName: true},
		},
		{
			http.Header{"Mcp-Name": {"=?base64??="}},
			engine.Headers{Name: "", HasName: true},
		},
		{
			http.Header{"Mcp-Method": {"tools/call", "tools/list"}},
			engine.Headers{Method: "tools/call,tools/list", HasMethod: true},
		},
	} {
		if got := mcpHeaders(tc.in); got != tc.want {
			t.Errorf("mcpHeaders(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}
