package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestTypeScriptSDKSubscribe: the official TypeScript SDK client (its own
// revision, 2025-11-25) over stdio, through ts/subscribe.mjs: the server
// declares resources.subscribe (the SDK refuses to subscribe otherwise);
// subscribed to a workspace file, the client is told
// (notifications/resources/updated, validated by the SDK's schema) when an
// editor saves it (a new file renamed over it), when it is written in
// place, when the agent's approved turn writes it, and when it is
// removed, each read after an update fresh; subscribed to a conversation,
// when a turn of it is stored; once unsubscribed from the file, not of a
// later write, while another file of its directory written twice after it
// is told each time (an update of the first, were it still held, would
// have come a whole coalescing period before the second).
func TestTypeScriptSDKSubscribe(t *testing.T) {
	t.Parallel()
	node := tsNode(t)
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	f := newResourceFixture(t)
	hello, helloPath := f.prefix+"hello.txt", filepath.Join(f.root, "hello.txt")
	greeting, greetingPath := f.prefix+f.ws.file, filepath.Join(f.root, f.ws.file)
	pixel, pixelPath := f.prefix+"pixel.png", filepath.Join(f.root, "pixel.png")
	const conv = "agentmcp://conversations/docs"

	var steps []tsStep
	at := map[string]int{}
	add := func(label, op string, params any, answers ...promptAnswer) {
		at[label] = len(steps)
		steps = append(steps, tsStep{Op: op, Params: params, Answers: answers})
	}
	uri := func(u string) map[string]string { return map[string]string{"uri": u} }
	file := func(path, content string) map[string]string {
		return map[string]string{"path": path, "content": content}
	}
	add("subscribe hello", "subscribe", uri(hello))
	add("save", "save", file(helloPath, "saved by an editor\n"))
	add("updated by the save", "updated", uri(hello))
	add("read after the save", "read", uri(hello))
	add("write", "write", file(helloPath, "written in place\n"))
	add("updated by the write", "updated", uri(hello))
	add("write turn", "submit", map[string]string{"prompt": "Write hello.txt with a greeting.", "conversation": "docs"}, allowOnce, overwriteFile)
	add("updated by the agent", "updated", uri(hello))
	add("read after the agent", "read", uri(hello))
	add("subscribe conversation", "subscribe", uri(conv))
	add("turn", "submit", map[string]string{"prompt": "hello", "conversation": "docs"})
	add("updated by the turn", "updated", uri(conv))
	add("subscribe greeting", "subscribe", uri(greeting))
	add("remove greeting", "remove", map[string]string{"path": greetingPath})
	add("updated by the removal", "updated", uri(greeting))
	add("subscribe pixel", "subscribe", uri(pixel))
	add("unsubscribe hello", "unsubscribe", uri(hello))
	add("write after the unsubscribe", "write", file(helloPath, "after the unsubscribe\n"))
	add("write pixel", "write", file(pixelPath, "0"))
	add("updated pixel", "updated", uri(pixel))
	add("write pixel again", "write", file(pixelPath, "1"))
	add("updated pixel again", "updated", uri(pixel))

	scenario := map[string]any{
		"steps":   steps,
		"command": binPath,
		"args":    append([]string{"serve", "stdio", "--root", f.ws.root}, f.flags...),
	}
	cmd, reportPath := tsScenarioCmd(ctx, t, node, "subscribe.mjs", scenario)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("node subscribe.mjs: %v\n%s", err, out.String())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node subscribe.mjs output (the server's stderr included):\n%s", out.String())
		}
	})
	checkNoDataRace(t, out.Bytes())
	var report struct {
		Capabilities struct {
			Resources *struct {
				Subscribe   bool `json:"subscribe"`
				ListChanged bool `json:"listChanged"`
			} `json:"resources"`
		} `json:"capabilities"`
		Steps   []tsStepReport `json:"steps"`
		Updates []struct {
			URI  string `json:"uri"`
			Step int    `json:"step"`
		} `json:"updates"`
		TransportErrors []string `json:"transportErrors"`
	}
	readTSReport(t, reportPath, &report)
	if len(report.Steps) != len(steps) || len(report.TransportErrors) > 0 {
		t.Fatalf("report: %d steps of %d, transport errors %q", len(report.Steps), len(steps), report.TransportErrors)
	}
	if r := report.Capabilities.Resources; r == nil || !r.Subscribe || r.ListChanged {
		t.Errorf("capabilities.resources %+v, want subscribe and no listChanged", r)
	}
	for i, s := range report.Steps {
		if s.Error != nil {
			t.Errorf("step %d (%s %v): %+v", i, steps[i].Op, steps[i].Params, s.Error)
		}
	}
	text := func(label string) string {
		var c struct{ Contents []struct{ URI, Text string } }
		if json.Unmarshal(report.Steps[at[label]].Result, &c) != nil || len(c.Contents) != 1 {
			t.Errorf("%s: %s", label, report.Steps[at[label]].Result)
			return ""
		}
		return c.Contents[0].Text
	}
	if got := text("read after the save"); got != "saved by an editor\n" {
		t.Errorf("hello.txt after the save: %q", got)
	}
	if got := text("read after the agent"); got != wroteContent {
		t.Errorf("hello.txt after the agent's write: %q, want %q", got, wroteContent)
	}
	var turn struct {
		Content []struct{ Text string }
		IsError bool
	}
	if json.Unmarshal(report.Steps[at["write turn"]].Result, &turn) != nil || turn.IsError || len(turn.Content) != 1 || turn.Content[0].Text != "I wrote hello.txt." {
		t.Errorf("the write turn: %s", report.Steps[at["write turn"]].Result)
	}
	if n := len(report.Steps[at["write turn"]].Prompts); n != 2 {
		t.Errorf("the write turn asked the client %d times, want 2 (the write, the overwrite)", n)
	}
	for _, u := range report.Updates {
		if u.URI == hello && u.Step >= at["unsubscribe hello"] {
			t.Errorf("told %s at step %d (%s), after unsubscribing from it (step %d); every update: %+v",
				hello, u.Step, steps[u.Step].Op, at["unsubscribe hello"], report.Updates)
		}
	}
}
