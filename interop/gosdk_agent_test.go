package interop

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoSDKAgent drives the agent behind agent_submit (docs/SPEC.md §9)
// with the official Go SDK client at 2026-07-28 over the loopback host
// ("serve http --ask-client --model scripted --model-url <chatEndpoint>"):
//
//  1. agent_submit with a progressToken: the model asks for write_file, the
//     permission prompt reaches the client as an input-required round
//     (docs/SPEC.md §6), the client's handler allows it once, and the
//     final answer comes back; progress notifications arrived for the
//     model step and the tool call, and the file is on disk;
//  2. an agent_submit cancelled while the model streams: the endpoint
//     sees its request cancelled and the call ends;
//  3. the next agent_submit works and its conversation holds the first
//     turn but nothing of the cancelled one.
func TestGoSDKAgent(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	ws := newWorkspace(t)
	stderr := serverStderr(t)
	ep := newChatEndpoint(t)
	c := newGoSDKCarrier(ctx, t, "http", ws, stderr, "--ask-client", "--model", "scripted", "--model-url", ep.url)

	var mu sync.Mutex
	var progress []*mcp.ProgressNotificationParams
	script := &elicitScript{}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentmcp-interop-go-sdk-agent", Version: "v1.8.0"}, &mcp.ClientOptions{
		ElicitationHandler: script.handle,
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params)
			mu.Unlock()
		},
	})
	cs := c.connect(ctx, t, client, modernVersion)

	// 1. A turn whose write_file is approved through an input-required round.
	script.begin([]promptAnswer{allowOnce})
	params := &mcp.CallToolParams{Name: "agent_submit", Arguments: map[string]any{"prompt": "Write hello.txt with a greeting."}}
	params.SetProgressToken("agent-turn-1")
	res, err := cs.CallTool(ctx, params)
	prompts := script.end()
	if err != nil {
		t.Fatalf("agent_submit: %v", err)
	}
	if text := singleText(t, "agent_submit", res); res.IsError || text != "I wrote hello.txt." {
		t.Errorf("agent_submit = {isError:%v text:%q}, want the model's final answer", res.IsError, text)
	}
	if len(prompts) != 1 || !strings.Contains(string(prompts[0].Params), `\"write_file\"`) {
		t.Errorf("the client's handler saw %d prompts (%v), want write_file's permission prompt", len(prompts), prompts)
	}
	if got, err := os.ReadFile(filepath.Join(ws.root, "hello.txt")); err != nil || string(got) != wroteContent {
		t.Errorf("hello.txt = %q, %v; want the agent's approved write", got, err)
	}
	checkAgentRound(t, c.rec)
	mu.Lock()
	var messages []string
	for _, p := range progress {
		if p.ProgressToken != "agent-turn-1" {
			t.Errorf("progress for token %v, want agent-turn-1", p.ProgressToken)
		}
		messages = append(messages, p.Message)
	}
	mu.Unlock()
	for _, want := range []string{"model step 1", "calling write_file"} {
		if !slices.Contains(messages, want) {
			t.Errorf("progress messages %q lack %q", messages, want)
		}
	}

	// 2. A turn cancelled while the model streams.
	cancelSlowSubmit(ctx, t, cs, ep)

	// 3. The next turn works, without the cancelled one.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "agent_submit", Arguments: map[string]any{"prompt": "after"}})
	if err != nil {
		t.Fatalf("agent_submit after a cancelled turn: %v", err)
	}
	if text := singleText(t, "agent_submit", res); res.IsError || text != "still here: after" {
		t.Errorf("agent_submit after a cancelled turn = {isError:%v text:%q}", res.IsError, text)
	}
	checkAgentRequests(t, ep)
	c.close(t)
}

// cancelSlowSubmit calls agent_submit "slow" and cancels the call (the
// go-sdk sends notifications/cancelled) once the model is answering it;
// it returns once the endpoint has seen its request cancelled and the call
// has ended, which must be with an error.
func cancelSlowSubmit(ctx context.Context, t *testing.T, cs *mcp.ClientSession, ep *chatEndpoint) {
	t.Helper()
	cctx, ccancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "agent_submit", Arguments: map[string]any{"prompt": "slow"}})
		done <- err
	}()
	waitFor(t, ep.streaming, "the slow answer to start streaming")
	ccancel()
	waitFor(t, ep.cancelled, "the model endpoint to see its request cancelled")
	select {
	case err := <-done:
		if err == nil {
			t.Error("the cancelled agent_submit returned a result")
		}
	case <-time.After(testTimeout):
		t.Fatal("the cancelled agent_submit never returned")
	}
}

// checkAgentRound checks from the wire that the first agent_submit went
// through one input-required round: a tools/call answered
// input_required, then its retry with inputResponses and requestState,
// answered complete.
func checkAgentRound(t *testing.T, rec *wireRecorder) {
	t.Helper()
	var chain []toolsCallParams
	var results []roundResult
	for _, req := range rec.requests() {
		if req.Method != "tools/call" {
			continue
		}
		var p toolsCallParams
		if err := json.Unmarshal(req.Params, &p); err != nil || p.Name != "agent_submit" {
			continue
		}
		resp, ok := rec.responseTo(req)
		if !ok || resp.Error != nil {
			continue
		}
		var r roundResult
		json.Unmarshal(resp.Result, &r)
		chain = append(chain, p)
		results = append(results, r)
		if r.ResultType == "complete" {
			break
		}
	}
	if len(chain) != 2 || results[0].ResultType != "input_required" || chain[1].RequestState == nil ||
		*chain[1].RequestState != results[0].RequestState || chain[1].InputResponses["prompt"] == nil || results[1].ResultType != "complete" {
		t.Errorf("the first agent_submit was not one input-required round then complete: %d requests, results %+v", len(chain), results)
	}
}

// waitFor waits for ch or fails after the test timeout.
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testTimeout):
		t.Fatalf("gave up waiting for %s", what)
	}
}
