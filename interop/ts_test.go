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
// the official TypeScript SDK client (Client + StdioClientTransport) and
// exits non-zero with a message on the first failed check. It fails, never
// skips, when node or the npm packages are missing: scripts/test.sh installs
// them.
func TestTypeScriptSDKClient(t *testing.T) {
	t.Parallel()
	node := tsNode(t)

	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	ws := newWorkspace(t)
	cmd := exec.CommandContext(ctx, node, "interop.mjs", binPath, ws.root, ws.file)
	cmd.Dir = "ts"
	out, err := cmd.CombinedOutput()
	t.Logf("node interop.mjs output (the server's stderr included):\n%s", out)
	if err != nil {
		t.Fatalf("TypeScript SDK client: %v", err)
	}
	checkNoDataRace(t, out)
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
