package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
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

	run := startAgentScript(ctx, t, node, map[string]any{
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
	sawCancel := abortWhenStreaming(ctx, ep, run)
	report := run.wait(t)
	checkNoDataRace(t, run.out.Bytes())
	waitFor(t, sawCancel, "the model endpoint to see the aborted turn's request cancelled")

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
	if cancelled := checkCancelledUnanswered(t, report); len(cancelled) != 1 {
		t.Errorf("the client sent notifications/cancelled for %d requests, want 1", len(cancelled))
	}

	// 3. The next turn.
	if got := answer(2); got != "still here: after" {
		t.Errorf("agent_submit after the aborted turn = %q", got)
	}
	checkAgentRequests(t, ep)
}

// agentRun is ts/agent.mjs running one scenario.
type agentRun struct {
	cmd        *exec.Cmd
	reportPath string
	stdin      io.Writer // a line aborts the call marked "cancel"
	out        *bytes.Buffer
}

// startAgentScript starts ts/agent.mjs on scenario; its output (on stdio,
// the server's stderr included) is logged if t fails.
func startAgentScript(ctx context.Context, t *testing.T, node string, scenario any) *agentRun {
	t.Helper()
	cmd, reportPath := tsScenarioCmd(ctx, t, node, "agent.mjs", scenario)
	r := &agentRun{cmd: cmd, reportPath: reportPath, out: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = r.out, r.out
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.stdin = stdin
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node agent.mjs output:\n%s", r.out.String())
		}
	})
	return r
}

// abortWhenStreaming tells run to abort its call marked "cancel" once the
// model is answering the "slow" prompt; the channel it returns is closed
// once the endpoint has seen that request cancelled.
func abortWhenStreaming(ctx context.Context, ep *chatEndpoint, run *agentRun) <-chan struct{} {
	sawCancel := make(chan struct{})
	go func() {
		select {
		case <-ep.streaming:
			io.WriteString(run.stdin, "cancel\n")
			select {
			case <-ep.cancelled:
				close(sawCancel)
			case <-ctx.Done():
			}
		case <-ctx.Done():
		}
	}()
	return sawCancel
}

// wait waits for the script to exit and returns its report.
func (r *agentRun) wait(t *testing.T) agentReport {
	t.Helper()
	if err := r.cmd.Wait(); err != nil {
		t.Fatalf("TypeScript SDK client: %v", err)
	}
	var report agentReport
	readTSReport(t, r.reportPath, &report)
	return report
}

// agentReport is what ts/agent.mjs reports.
type agentReport struct {
	Calls []struct {
		Result *struct {
			Content           []struct{ Text string } `json:"content"`
			IsError           bool                    `json:"isError"`
			StructuredContent map[string]any          `json:"structuredContent"`
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

// checkCancelledUnanswered returns the ids the client's
// notifications/cancelled named, and fails t for each the server answered
// (docs/SPEC.md §3: no response for a cancelled request).
func checkCancelledUnanswered(t *testing.T, report agentReport) map[string]bool {
	t.Helper()
	cancelled := map[string]bool{}
	for _, raw := range report.Wire.Sent {
		var m wireMessage
		if json.Unmarshal(raw, &m) == nil && m.Method == "notifications/cancelled" {
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			json.Unmarshal(m.Params, &p)
			cancelled[string(p.RequestID)] = true
		}
	}
	for _, raw := range report.Wire.Received {
		var m wireMessage
		if json.Unmarshal(raw, &m) == nil && m.Method == "" && cancelled[string(m.ID)] {
			t.Errorf("the server answered the cancelled request %s: %s", m.ID, raw)
		}
	}
	return cancelled
}
