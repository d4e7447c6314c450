package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTypeScriptSDKCancelOverHTTP: the TypeScript SDK v1 client over the
// loopback host ("serve http --model scripted", ts/agent.mjs with "url")
// cancels a request by POSTing notifications/cancelled while it keeps the
// original request open — when the caller aborts it and when its own
// request timeout fires (docs/SPEC.md §3 "Cancellation"). Each time the
// model request of the turn sees its cancellation and the next
// agent_submit is served, not refused as busy; no response is written for
// a cancelled id and the client sees no transport error.
func TestTypeScriptSDKCancelOverHTTP(t *testing.T) {
	t.Parallel()
	node := tsNode(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	ws := newWorkspace(t)
	ep := newChatEndpoint(t)
	stderr := serverStderr(t)
	host := startHTTPHost(ctx, t, ws, stderr, "--model", "scripted", "--model-url", ep.url)

	run := startAgentScript(ctx, t, node, map[string]any{
		"url":       host.url,
		"tokenFile": host.tokenFile,
		"calls": []map[string]any{
			{"prompt": "slow", "cancel": true},
			{"prompt": "after the abort"},
			// The request timeout fires while the model holds its answer
			// (the endpoint holds "slow" until its request is cancelled).
			{"prompt": "slow", "timeoutMs": 3000},
			{"prompt": "after the timeout"},
		},
	})
	sawCancel := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	go func() {
		for i := range sawCancel {
			select {
			case <-ep.streaming:
			case <-ctx.Done():
				return
			}
			if i == 0 {
				io.WriteString(run.stdin, "cancel\n") // abort the first "slow" call
			}
			select {
			case <-ep.cancelled:
				close(sawCancel[i])
			case <-ctx.Done():
				return
			}
		}
	}()
	report := run.wait(t)
	waitFor(t, sawCancel[0], "the model endpoint to see the aborted turn's request cancelled")
	waitFor(t, sawCancel[1], "the model endpoint to see the timed-out turn's request cancelled")

	if len(report.Calls) != 4 {
		t.Fatalf("report: %d calls, want 4", len(report.Calls))
	}
	if len(report.TransportErrors) > 0 {
		t.Errorf("transport errors: %q", report.TransportErrors)
	}
	for _, i := range []int{0, 2} {
		if c := report.Calls[i]; c.Error == nil {
			t.Errorf("call %d (cancelled) returned %+v", i+1, c.Result)
		}
	}
	for i, want := range map[int]string{1: "still here: after the abort", 3: "still here: after the timeout"} {
		c := report.Calls[i]
		if c.Result == nil || c.Result.IsError || len(c.Result.Content) != 1 || c.Result.Content[0].Text != want {
			t.Errorf("call %d after a cancelled turn: result %+v, error %v; want %q", i+1, c.Result, c.Error, want)
		}
	}

	// Both cancellations went on the wire, and neither id was answered.
	if cancelled := checkCancelledUnanswered(t, report); len(cancelled) != 2 {
		t.Errorf("the client sent notifications/cancelled for %d requests, want 2", len(cancelled))
	}
	if err := host.stop(); err != nil {
		t.Errorf("stopping serve http: %v", err)
	}
	checkNoDataRace(t, []byte(stderr.String()))
}

// TestAbandonedApprovalOverHTTP: a 2026-07-28 client gets input_required
// for the agent's write_file and never retries (the person closed the
// dialog). Meanwhile its read_file is served at once; the prompt settles
// closed after --approval-timeout (docs/SPEC.md §9 "What ends a turn"), the
// turn stops and is logged with counts and reasons only, and the next
// agent_submit is served.
func TestAbandonedApprovalOverHTTP(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	ws := newWorkspace(t)
	ep := newChatEndpoint(t)
	stderr := serverStderr(t)
	stopped := stderr.watch(`msg="turn finished"`)
	host := startHTTPHost(ctx, t, ws, stderr, "--ask-client", "--model", "scripted", "--model-url", ep.url,
		"--approval-timeout", "1s")
	client := host.httpClient(t)

	r := modernCall(ctx, t, client, host.url, 1, "agent_submit", map[string]any{"prompt": "Write hello.txt with a greeting."})
	if r["resultType"] != "input_required" || r["requestState"] == nil {
		t.Fatalf("agent_submit = %v, want input_required for write_file's permission", r)
	}
	// The person walks away: no retry. Their own read is served at once.
	r = modernCall(ctx, t, client, host.url, 2, "read_file", map[string]any{"path": ws.file})
	if r["resultType"] != "complete" || r["isError"] == true || !strings.Contains(fmt.Sprint(r["content"]), "hello from the agentmcp interop tests") {
		t.Errorf("read_file while the approval waits = %v", r)
	}
	waitFor(t, stopped, `the turn to end ("turn finished" logged) once its approval timed out`)
	r = modernCall(ctx, t, client, host.url, 3, "agent_submit", map[string]any{"prompt": "after"})
	if r["resultType"] != "complete" || r["isError"] == true || !strings.Contains(fmt.Sprint(r["content"]), "still here: after") {
		t.Errorf("the next agent_submit = %v, want the model's answer", r)
	}
	if _, err := os.Stat(filepath.Join(ws.root, "hello.txt")); !os.IsNotExist(err) {
		t.Errorf("hello.txt exists (%v): the unanswered write must be denied", err)
	}
	log := stderr.String()
	for _, want := range []string{`msg="prompt unanswered" tool=write_file kind=permission`, `stopped=prompt_unanswered`} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %s", want)
		}
	}
	for _, secret := range []string{"Write hello.txt", wroteContent, host.token} {
		if strings.Contains(log, secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
	if err := host.stop(); err != nil {
		t.Errorf("stopping serve http: %v", err)
	}
}

// modernCall POSTs one 2026-07-28 tools/call (declaring form elicitation)
// and returns its result, read from JSON or from the event stream.
func modernCall(ctx context.Context, t *testing.T, client *http.Client, url string, id int, name string, args map[string]any) map[string]any {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "interop-raw", "version": "0"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{"form": map[string]any{}}},
		},
		"name": name, "arguments": args}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", name)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: status %d: %s", name, resp.StatusCode, b)
	}
	var answer []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(data, `"id":`) {
				answer = []byte(data)
			}
		}
	} else {
		answer, _ = io.ReadAll(resp.Body)
	}
	var m struct {
		Result map[string]any  `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(answer, &m); err != nil || m.Result == nil {
		t.Fatalf("%s: answer %s (%v), want a result", name, answer, err)
	}
	return m.Result
}
