package interop

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// wantTSSDKVersion is the @modelcontextprotocol/sdk version ts/package.json pins.
const wantTSSDKVersion = "1.32.2"

// TestTypeScriptSDKClient runs ts/interop.mjs, which drives the binary with
// the official TypeScript SDK client and exits non-zero with a message on
// the first failed check, once per carrier: stdio (StdioClientTransport
// spawning "serve stdio") and http (StreamableHTTPClientTransport on
// "agentmcp serve http", the bearer token from --token-file sent through
// requestInit's headers; the script also checks that no response carried
// Mcp-Session-Id). It fails, never skips, when node or the npm packages are
// missing: scripts/test.sh installs them.
func TestTypeScriptSDKClient(t *testing.T) {
	t.Parallel()
	node := tsNode(t)
	for _, carrier := range []string{"stdio", "http"} {
		t.Run(carrier, func(t *testing.T) {
			t.Parallel()
			testTSClient(t, node, carrier)
		})
	}
}

func testTSClient(t *testing.T, node, carrier string) {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	ws := newWorkspace(t)

	var args []string
	var host *httpHost
	stderr := &lockedBuffer{}
	switch carrier {
	case "stdio":
		args = []string{"interop.mjs", binPath, ws.root, ws.file}
	case "http":
		logStderrOnFailure(t, stderr)
		host = startHTTPHost(ctx, t, ws, stderr)
		args = []string{"interop.mjs", "--http", host.url, host.tokenFile, ws.root, ws.file}
	default:
		t.Fatalf("unknown carrier %q", carrier)
	}
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = "ts"
	out, err := cmd.CombinedOutput()
	t.Logf("node interop.mjs output (on stdio, the server's stderr included):\n%s", out)
	if err != nil {
		t.Fatalf("TypeScript SDK client over %s: %v", carrier, err)
	}
	checkNoDataRace(t, out)
	if host != nil {
		if err := host.stop(); err != nil {
			t.Errorf("stopping serve http: %v", err)
		}
		checkNoDataRace(t, []byte(stderr.String()))
	}
}

// tsNode returns the node command after checking that interop/ts has the
// pinned TypeScript SDK installed. It fails t, never skips, when node or the
// npm packages are missing: scripts/test.sh installs them.
func tsNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not installed (%v): the TypeScript SDK client needs Node 20 or later", err)
	}
	sdkPackage := filepath.Join("ts", "node_modules", "@modelcontextprotocol", "sdk", "package.json")
	data, err := os.ReadFile(sdkPackage)
	if errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s is missing: run scripts/test.sh from the repository root (it runs npm ci in interop/ts)", sdkPackage)
	} else if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		t.Fatalf("%s: %v", sdkPackage, err)
	}
	if pkg.Version != wantTSSDKVersion {
		t.Fatalf("interop/ts has @modelcontextprotocol/sdk %s installed, want %s: run scripts/test.sh (npm ci in interop/ts)", pkg.Version, wantTSSDKVersion)
	}
	return node
}

// tsScenarioCmd writes scenario, as JSON, where the ts/ script (agent.mjs,
// elicit.mjs) reads it, and returns the command that runs the script with
// node under ctx, and the path of the report it writes.
func tsScenarioCmd(ctx context.Context, t *testing.T, node, script string, scenario any) (*exec.Cmd, string) {
	t.Helper()
	data, err := json.Marshal(scenario)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	scenarioPath, reportPath := filepath.Join(dir, "scenario.json"), filepath.Join(dir, "report.json")
	if err := os.WriteFile(scenarioPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, node, script, scenarioPath, reportPath)
	cmd.Dir = "ts"
	return cmd, reportPath
}

// readTSReport decodes the report a ts/ script wrote at path into report.
func readTSReport(t *testing.T, path string, report any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, report); err != nil {
		t.Fatalf("report: %v", err)
	}
}
