package engine

import (
	"testing"

	"github.com/agentmcp/agentmcp/internal/jsonrpc"
)

var unquoted string

// TestNamesUnquoteInPlace: every name the engine reads on each message
// comes back from jsonrpc.Unquote as a constant, without an allocation
// (jsonrpc keeps the list; a name added here and not there fails).
func TestNamesUnquoteInPlace(t *testing.T) {
	for _, name := range []string{
		"jsonrpc", "id", "method", "params", "result", "error", "name", "arguments", "_meta",
		"tools/call", "tools/list", "ping", "initialize", "server/discover", "cursor", "requestState", "inputResponses",
		metaProtocolVersion, metaClientCapabilities, metaClientInfo, metaProgressToken, ModernVersion,
	} {
		lit := []byte(`"` + name + `"`)
		if n := testing.AllocsPerRun(10, func() { unquoted = jsonrpc.Unquote(lit) }); n != 0 || unquoted != name {
			t.Errorf("Unquote(%s) = %q with %v allocations, want %q with none", lit, unquoted, n, name)
		}
	}
}
