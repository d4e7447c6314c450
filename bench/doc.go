// Package bench holds the side-by-side benchmarks of agentmcp and its peer
// MCP SDKs (modelcontextprotocol/go-sdk and mark3labs/mcp-go) on one
// workload, tools/call echo {"text":"hello world"}: the in-process go test
// benchmarks of this package, and the separate-process harness of
// cmd/benchtable (with cmd/benchserver and cmd/benchload), which prints one
// table of every row and the ratios the project's performance goals are
// stated in.
//
// It is a separate module so that the peers never enter agentmcp's own
// go.mod. Its tests (go test ./..., run by scripts/test.sh) are the smoke
// mode: every server answers correctly, no timing. See README.md for the
// command, what each row measures, a run's table and the caveats.
package bench
