// Package bench holds side-by-side Go benchmarks of agentmcp and its peer
// MCP SDKs (modelcontextprotocol/go-sdk and mark3labs/mcp-go) on one
// workload: tools/call echo {"text":"hello world"}.
//
// It is a separate module so that the peers never enter agentmcp's own
// go.mod, and nothing in CI runs it. See README.md for the command, the
// results and the caveats.
package bench
