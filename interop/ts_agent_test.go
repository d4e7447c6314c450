package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTypeScriptSDKAgent drives the agent behind agent_submit (docs/SPEC.md
// §9) with the official TypeScript SDK client over legacy stdio ("serve
// stdio --ask-client --model scripted --model-url <chatEndpoint>",
// ts/agent.mjs):
//
//  1. agent_submit with a progressToken: the model's write_file asks
//     permission through elicitation/create during the call (docs/SPEC.md
//     §6), the client allows it once, progress notifications arrive for
//     the model step and the tool call, and the final answer comes back;
//     the file is on disk;
//  2. an agent_submit aborted while the model streams (the SDK sends
//     notifications/cancelled): the endpoint sees its request cancelled
//     and no response is ever written for that id;
//  3. the next agent_submit works, without the cancelled turn.
func TestTypeScriptSDKAgent(t *testing.T) {
	t.Parallel()
	node := tsNode(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	ws := newWorkspace(t)
	ep := newChatEndpoint(t)

	cmd, reportPath := tsScenarioCmd(ctx, t, node, "agent.mjs", map[string]any{
		"command": binPath,
		// --ephemeral: the SDK gives the server a default environment
		// without XDG_STATE_HOME, and the store must not land in $HOME.
		"args": []string{"serve", "stdio", "--root", ws.root, "--ask-client", "--model", "scripted", "--model-url", ep.url, "--ephemeral"},
		"calls": []map[string]any{
			{"prompt": "Write hello.txt with a greeting.", "answers": []promptAnswer{allowOnce}},
			{"prompt": "slow", "cancel": true},
			{"prompt": "after"},
		},
	})
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node agent.mjs output (the server's stderr included):\n%s", out.String())
		}
	})
	sawCancel := make(chan struct{})
	go func() {
		// Abort the "slow" call once the model is answering it.
		select {
		case <-ep.streaming:
			io.WriteString(stdin, "cancel\n")
			select {
			case <-ep.cancelled:
				close(sawCancel)
			case <-ctx.Done():
			}
		case <-ctx.Done():
		}
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("TypeScript SDK client: %v", err)
	}
	checkNoDataRace(t, out.Bytes())
	waitFor(t, sawCancel, "the model endpoint to see the aborted turn's request cancelled")

	var report struct {
		Calls []struct {
			Result *struct {
				Content []struct{ Text string } `json:"content"`
				IsError bool                    `json:"isError"`
			} `json:"result"`
			Error    *string           `json:"error"`
			Prompts  []json.RawMessage `json:"prompts"`
			Progress []struct {
				Progress float64 `json:"progress"`
				Message  string  `json:"message"`
			} `json:"progress"`
		} `json:"calls"`
		Wire struct {
			Sent     []json.RawMessage `json:"sent"`
			Received []json.RawMessage `json:"received"`
		} `json:"wire"`
		TransportErrors []string `json:"transportErrors"`
	}
	readTSReport(t, reportPath, &report)
	if len(report.Calls) != 3 || len(report.TransportErrors) > 0 {
		t.Fatalf("report: %d calls, transport errors %q", len(report.Calls), report.TransportErrors)
	}
	answer := func(i int) string {
		c := report.Calls[i]
		if c.Result == nil || c.Result.IsError || len(c.Result.Content) != 1 {
			t.Errorf("call %d: result %+v, error %v", i+1, c.Result, c.Error)
			return ""
		}
		return c.Result.Content[0].Text
	}

	// 1. The approved write.
	if got := answer(0); got != "I wrote hello.txt." {
		t.Errorf("agent_submit = %q, want the model's final answer", got)
	}
	first := report.Calls[0]
	if len(first.Prompts) != 1 || !strings.Contains(string(first.Prompts[0]), `\"write_file\"`) {
		t.Errorf("elicitations during the turn: %s, want write_file's permission prompt", first.Prompts)
	}
	var messages []string
	for i, p := range first.Progress {
		messages = append(messages, p.Message)
		if i > 0 && p.Progress <= first.Progress[i-1].Progress {
			t.Errorf("progress %v after %v: not increasing", p.Progress, first.Progress[i-1].Progress)
		}
	}
	for _, want := range []string{"model step 1", "calling write_file", "model step 2"} {
		if !slices.Contains(messages, want) {
			t.Errorf("progress messages %q lack %q", messages, want)
		}
	}
	if got, err := os.ReadFile(filepath.Join(ws.root, "hello.txt")); err != nil || string(got) != wroteContent {
		t.Errorf("hello.txt = %q, %v; want the agent's approved write", got, err)
	}

	// 2. The aborted turn: cancelled on the wire, never answered.
	if report.Calls[1].Error == nil {
		t.Errorf("the aborted agent_submit returned %+v", report.Calls[1].Result)
	}
	var cancelledID json.RawMessage
	for _, raw := range report.Wire.Sent {
		var m wireMessage
		if json.Unmarshal(raw, &m) == nil && m.Method == "notifications/cancelled" {
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			json.Unmarshal(m.Params, &p)
			cancelledID = p.RequestID
		}
	}
	if cancelledID == nil {
		t.Error("the client sent no notifications/cancelled")
	}
	for _, raw := range report.Wire.Received {
		var m wireMessage
		if json.Unmarshal(raw, &m) == nil && m.Method == "" && cancelledID != nil && string(m.ID) == string(cancelledID) {
			t.Errorf("the server answered the cancelled request %s: %s", cancelledID, raw)
		}
	}

	// 3. The next turn.
	if got := answer(2); got != "still here: after" {
		t.Errorf("agent_submit after the aborted turn = %q", got)
	}
	checkAgentRequests(t, ep)
}
