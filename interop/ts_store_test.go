package interop

import (
	"bufio"
	"context"
	"strings"
	"sync"
	"testing"
)

// TestTypeScriptSDKProgressText: the official TypeScript SDK client's
// onprogress reads the model's text while it streams, over stdio
// (docs/SPEC.md §9 Progress; ts/agent.mjs echoes each progress message).
// The endpoint holds the rest of its answer until the client has printed
// the first part; the result is the whole answer.
func TestTypeScriptSDKProgressText(t *testing.T) {
	t.Parallel()
	node := tsNode(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	ws := newWorkspace(t)
	ep := newChatEndpoint(t)
	cmd, reportPath := tsScenarioCmd(ctx, t, node, "agent.mjs", map[string]any{
		"command": binPath,
		"args":    []string{"serve", "stdio", "--root", ws.root, "--model", "scripted", "--model-url", ep.url, "--ephemeral"},
		"calls":   []map[string]any{{"prompt": "read along", "echoProgress": true}},
	})
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if strings.Contains(lines.Text(), `"model step 1: Reading along: part one."`) {
			once.Do(func() { close(ep.release) })
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("TypeScript SDK client: %v\n%s", err, stderr.String())
	}
	var report struct {
		Calls []struct {
			Result *struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
			Error *string `json:"error"`
		} `json:"calls"`
	}
	readTSReport(t, reportPath, &report)
	if len(report.Calls) != 1 || report.Calls[0].Result == nil || len(report.Calls[0].Result.Content) != 1 ||
		report.Calls[0].Result.Content[0].Text != "Reading along: part one. Part two." {
		t.Errorf("report %+v, want the whole answer", report)
	}
}
