package interop

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoSDKConversationSurvivesRestart: over stdio and over the loopback
// host, the official Go SDK client tells the agent a word in turn 1, the
// server process is stopped, and a new process on the same root and
// --state-dir answers turn 2 with turn 1's messages in its model request
// (docs/SPEC.md §9: the conversation store).
func TestGoSDKConversationSurvivesRestart(t *testing.T) {
	t.Parallel()
	for _, carrier := range []string{"stdio", "http"} {
		t.Run(carrier, func(t *testing.T) {
			t.Parallel()
			ctx, ws, ep, flags := storeFixture(t)
			for i, prompt := range []string{"the word is heliotrope", "what was the word?"} {
				c := newGoSDKCarrier(ctx, t, carrier, ws, serverStderr(t), flags...)
				cs := c.connect(ctx, t, mcp.NewClient(&mcp.Implementation{Name: "agentmcp-interop-store", Version: "v1"}, nil), modernVersion)
				if text := submit(ctx, t, cs, prompt); text != "still here: "+prompt {
					t.Fatalf("process %d: agent_submit = %q", i+1, text)
				}
				c.close(t) // the process exits: stdin closed (stdio), SIGTERM (http)
			}
			reqs := ep.recorded()
			if got := conversationOf(reqs[len(reqs)-1]); got != "user:the word is heliotrope|assistant:still here: the word is heliotrope|user:what was the word?" {
				t.Errorf("the second process's model request holds %q, want turn 1 then the new prompt", got)
			}
		})
	}
}

// TestGoSDKTwoStdioProcessesShareARoot: two stdio server processes on one
// root and --state-dir (two clients each starting "serve stdio")
// interleave four turns; each turn starts from every turn committed before
// it, whichever process served it, and none is lost. Then the first
// process is killed with SIGKILL while a turn streams, and a new process
// still holds the four turns.
func TestGoSDKTwoStdioProcessesShareARoot(t *testing.T) {
	t.Parallel()
	ctx, ws, ep, flags := storeFixture(t)
	client := func() *mcp.Client {
		return mcp.NewClient(&mcp.Implementation{Name: "agentmcp-interop-store", Version: "v1"}, nil)
	}
	var cmds [2]*exec.Cmd
	var sessions [2]*mcp.ClientSession
	for i := range sessions {
		cmds[i] = serverCommand(ctx, ws, flags...)
		cmds[i].Stderr = serverStderr(t)
		cs, err := client().Connect(ctx, &mcp.CommandTransport{Command: cmds[i]}, nil)
		if err != nil {
			t.Fatalf("connect %d: %v", i, err)
		}
		t.Cleanup(func() { cs.Close() })
		sessions[i] = cs
	}
	var want []string
	for turn := range 4 {
		prompt := "turn " + string(rune('1'+turn))
		if text := submit(ctx, t, sessions[turn%2], prompt); text != "still here: "+prompt {
			t.Fatalf("%s: agent_submit = %q", prompt, text)
		}
		reqs := ep.recorded()
		if got, wantNow := conversationOf(reqs[len(reqs)-1]), strings.Join(append(want, "user:"+prompt), "|"); got != wantNow {
			t.Errorf("%s (process %d) started from %q, want %q", prompt, turn%2+1, got, wantNow)
		}
		want = append(want, "user:"+prompt, "assistant:still here: "+prompt)
	}

	// kill -9 during a turn: the endpoint holds its stream until killed.
	done := make(chan error, 1)
	go func() {
		_, err := sessions[0].CallTool(ctx, &mcp.CallToolParams{Name: "agent_submit", Arguments: map[string]any{"prompt": "slow"}})
		done <- err
	}()
	waitFor(t, ep.streaming, "the slow answer to start streaming")
	if err := cmds[0].Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-done
	cs, err := client().Connect(ctx, &mcp.CommandTransport{Command: func() *exec.Cmd {
		cmd := serverCommand(ctx, ws, flags...)
		cmd.Stderr = serverStderr(t)
		return cmd
	}()}, nil)
	if err != nil {
		t.Fatalf("a new process after kill -9: %v", err)
	}
	defer cs.Close()
	submit(ctx, t, cs, "after the kill")
	reqs := ep.recorded()
	if got, wantNow := conversationOf(reqs[len(reqs)-1]), strings.Join(append(want, "user:after the kill"), "|"); got != wantNow {
		t.Errorf("after kill -9 the conversation is %q, want %q", got, wantNow)
	}
}

// storeFixture is a store test's context (ended with the test, within
// testTimeout), workspace, chat endpoint, and the serve flags that turn
// the agent on with a --state-dir of the test's own.
func storeFixture(t *testing.T) (context.Context, workspace, *chatEndpoint, []string) {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	ep := newChatEndpoint(t)
	return ctx, newWorkspace(t), ep, []string{"--model", "scripted", "--model-url", ep.url, "--state-dir", t.TempDir()}
}

// submit calls agent_submit and returns its text.
func submit(ctx context.Context, t *testing.T, cs *mcp.ClientSession, prompt string) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "agent_submit", Arguments: map[string]any{"prompt": prompt}})
	if err != nil {
		t.Fatalf("agent_submit %q: %v", prompt, err)
	}
	return singleText(t, "agent_submit", res)
}

// conversationOf is a model request's messages after the system prompt,
// as "role:content" joined by "|".
func conversationOf(r chatRequest) string {
	var parts []string
	for _, m := range r.Messages[1:] {
		parts = append(parts, m.Role+":"+m.Content)
	}
	return strings.Join(parts, "|")
}

// TestGoSDKProgressCarriesText: over stdio, the official Go SDK client's
// progress handler reads the model's text while it streams (docs/SPEC.md
// §9 Progress); the endpoint holds the rest of its answer until the
// client has read the first part, and the result is the whole answer.
func TestGoSDKProgressCarriesText(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	ws := newWorkspace(t)
	ep := newChatEndpoint(t)
	c := newGoSDKCarrier(ctx, t, "stdio", ws, serverStderr(t), "--model", "scripted", "--model-url", ep.url, "--ephemeral")
	var once sync.Once
	client := mcp.NewClient(&mcp.Implementation{Name: "agentmcp-interop-progress", Version: "v1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if req.Params.Message == "model step 1: Reading along: part one." {
				once.Do(func() { close(ep.release) })
			}
		},
	})
	cs := c.connect(ctx, t, client, modernVersion)
	params := &mcp.CallToolParams{Name: "agent_submit", Arguments: map[string]any{"prompt": "read along"}}
	params.SetProgressToken("read-along")
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		t.Fatalf("agent_submit: %v", err)
	}
	if text := singleText(t, "agent_submit", res); text != "Reading along: part one. Part two." {
		t.Errorf("agent_submit = %q, want the whole answer", text)
	}
	c.close(t)
}
