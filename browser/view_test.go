package browser

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/agentmcp/agentmcp/internal/chatscript"
)

// TestViewBuild: the committed view is exactly what a fresh build of web/
// writes (esbuild pinned by web/package-lock.json), so the file the binary
// embeds is the source's.
func TestViewBuild(t *testing.T) {
	out := filepath.Join(t.TempDir(), "turn.html")
	if err := run(t.Context(), filepath.Join(repo, "web"), "node", "build.mjs", "view", out); err != nil {
		t.Fatal(err)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(filepath.Join(repo, "adapters", "agent", "view", "turn.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Fatalf("adapters/agent/view/turn.html (%d bytes) is not what web/ builds (%d bytes): run node build.mjs view in web/ and commit it", len(committed), len(fresh))
	}
	if len(fresh) >= 1<<20 {
		t.Errorf("the view is %d bytes, want under 1 MiB", len(fresh))
	}
}

// toolMessages counts a model request's tool results: the step it asks for.
func toolMessages(r *chatscript.Request) int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "tool" {
			n++
		}
	}
	return n
}

// openHost opens the host page on prompt (or on query, when set) and
// returns the tab once the view's handshake is done.
func openHost(t *testing.T, endpoint, token, prompt string, extra map[string][]byte, query string) (*tab, *pathLog) {
	t.Helper()
	origin, paths := frontend(t, endpoint, token, extra)
	tb := newTab(t)
	u := origin + "/host.html?prompt=" + url.QueryEscape(prompt)
	if query != "" {
		u = origin + "/host.html?" + query
	}
	tb.do("opening the host page", chromedp.Navigate(u))
	tb.waitHost("the view's handshake", "window.host && window.host.ready")
	return tb, paths
}

// The text a person reads, as the view shows it.
const (
	stepsText = `Array.from(document.querySelectorAll("#steps > li")).map(li => li.innerText)`
	statusOf  = `document.getElementById("status").textContent`
)

// TestTurnView renders the view of a real turn, as a host that renders
// MCP Apps does, and checks what a person sees: the prompt; step 1's text
// growing while the model streams it; the steps in order with their tool
// calls and outcomes; the edit awaiting approval with its diff (approved
// in the host's own dialog, never the view); the changed file's diff and
// the final response. Along the way: no serious or critical axe-core
// violation, a keyboard-only pass, prefers-reduced-motion, screenshots at
// 320 and 800 px, and the view's requests through the bridge are only the
// ones docs/SPEC.md §2 "The turn view" names, with nothing loaded from the
// network.
func TestTurnView(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("Meeting notes\nWe agreed on teh plan.\nNext: ship it.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const (
		prompt = "Fix the typo in notes.txt"
		step1  = "I will read notes.txt to find the typo, then fix it."
		step2  = "Found it: teh should be the."
		answer = "Fixed the typo in notes.txt: teh is now the."
	)
	hold := make(chan struct{})
	model := chatscript.New(t, func(r *chatscript.Request) chatscript.Reply {
		switch toolMessages(r) {
		case 0: // step 1 holds after its first 12 bytes until the test has seen them
			return chatscript.Reply{Text: step1, MidAfterText: 3, Mid: func(ctx context.Context) {
				select {
				case <-hold:
				case <-ctx.Done():
				}
			}, Calls: []chatscript.Call{{ID: "c1", Name: "read_file", Arguments: `{"path":"notes.txt"}`}}}
		case 1:
			return chatscript.Reply{Text: step2, Calls: []chatscript.Call{{ID: "c2", Name: "edit_file",
				Arguments: `{"path":"notes.txt","old_text":"teh plan","new_text":"the plan"}`}}}
		}
		return chatscript.Reply{Text: answer, Usage: &chatscript.Usage{Prompt: 1200, Completion: 48}}
	})
	endpoint, token := startServer(t, root, model.URL)
	tb, paths := openHost(t, endpoint, token, prompt, nil, "")

	// The live text grows: the first 12 bytes while the model holds, then
	// the whole step.
	tb.waitView("step 1's first words", `(`+stepsText+`)[0] && (`+stepsText+`)[0].includes("I will read")`)
	held := view[[]string](tb, stepsText)
	if len(held) != 1 || !strings.Contains(held[0], "Step 1") || strings.Contains(held[0], "then fix it") {
		t.Fatalf("while the model holds, the steps read %q", held)
	}
	if p := view[string](tb, `document.getElementById("prompt").textContent`); p != prompt {
		t.Errorf("the prompt reads %q", p)
	}
	close(hold)
	tb.waitView("step 1's whole text", `(`+stepsText+`)[0].includes("then fix it.")`)

	// The edit waits for approval: the view shows it with its diff; the
	// host's dialog (its elicitation) has it too.
	tb.waitView("the edit awaiting approval", `!document.getElementById("pending-s").hidden`)
	pending := view[string](tb, `document.getElementById("pending").innerText`)
	for _, want := range []string{"edit_file", "notes.txt", "-We agreed on teh plan.", "+We agreed on the plan."} {
		if !strings.Contains(pending, want) {
			t.Errorf("the pending request reads %q, without %q", pending, want)
		}
	}
	steps := view[[]string](tb, stepsText)
	if len(steps) != 2 || !strings.Contains(steps[0], "read_file — done") || !strings.Contains(steps[1], step2) ||
		!strings.Contains(steps[1], "edit_file — running") {
		t.Errorf("awaiting approval, the steps read %q", steps)
	}
	if n := host[int](tb, "window.host.elicitations.length"); n != 1 {
		t.Errorf("the host's dialog got %d requests, want 1", n)
	}
	if st := view[string](tb, statusOf); !strings.Contains(st, "Waiting for your approval of edit_file") {
		t.Errorf("the status reads %q", st)
	}
	motion(t, tb)
	axe(t, tb, "awaiting-approval")
	screenshot(t, tb, 800, "turn-view-approval-800.png")

	// Approved in the host: the turn finishes.
	if !host[bool](tb, "window.host.approve()") {
		t.Fatal("no approval was waiting in the host")
	}
	tb.waitView("the answer and the last step", `!document.getElementById("answer-s").hidden && document.querySelector("#files pre.diff") &&
		document.querySelectorAll("#steps > li").length === 3`)
	if got := view[string](tb, `document.getElementById("answer").textContent`); got != answer {
		t.Errorf("the answer reads %q, want %q", got, answer)
	}
	files := view[string](tb, `document.getElementById("files").innerText`)
	for _, want := range []string{"notes.txt", "+1 −1", "@@", "-We agreed on teh plan.", "+We agreed on the plan.", " Meeting notes"} {
		if !strings.Contains(files, want) {
			t.Errorf("the changed files read %q, without %q", files, want)
		}
	}
	steps = view[[]string](tb, stepsText)
	if len(steps) != 3 || !strings.Contains(steps[0], step1) || !strings.Contains(steps[1], "edit_file — done") || !strings.Contains(steps[2], answer) {
		t.Errorf("finished, the steps read %q", steps)
	}
	if st := view[string](tb, statusOf); st != "Turn 1 finished." {
		t.Errorf("the status reads %q", st)
	}
	if u := view[string](tb, `document.getElementById("usage").textContent`); !strings.Contains(u, "1200 in, 48 out") {
		t.Errorf("the usage reads %q", u)
	}
	if pulse := view[bool](tb, `document.body.classList.contains("live")`); pulse {
		t.Error("the finished view still shows itself live")
	}
	sc := host[map[string]any](tb, "window.host.result && window.host.result.structuredContent")
	if sc["turn"] != float64(1) || sc["response"] != answer {
		t.Errorf("agent_submit's structuredContent = %v", sc)
	}

	axe(t, tb, "finished")
	for _, width := range []int64{320, 800} {
		screenshot(t, tb, width, fmt.Sprintf("turn-view-%d.png", width))
	}
	keyboard(t, tb)
	requestsNamed(t, tb, paths, "default", 1)
}

// requestsNamed checks the view's messages through the bridge: the
// extension's lifecycle and resources/read of the running resource and of
// turn n's changes, nothing else (docs/SPEC.md §2 "What the view
// requests"); and that the browser fetched nothing but the host page's
// own files and /mcp.
func requestsNamed(t *testing.T, tb *tab, paths *pathLog, conv string, turn int) {
	t.Helper()
	type msg struct{ Method, URI string }
	msgs := host[[]msg](tb, "window.host.viewMessages")
	allowed := map[string]bool{"ui/initialize": true, "ui/notifications/initialized": true, "ui/notifications/size-changed": true, "resources/read": true}
	running := "agentmcp://conversations/" + conv + "/running"
	changes := fmt.Sprintf("agentmcp://conversations/%s/turns/%d/changes", conv, turn)
	reads := map[string]int{}
	for _, m := range msgs {
		if !allowed[m.Method] {
			t.Errorf("the view sent %s through the bridge", m.Method)
		}
		if m.Method == "resources/read" {
			reads[m.URI]++
			if m.URI != running && m.URI != changes {
				t.Errorf("the view read %s", m.URI)
			}
		}
	}
	if reads[running] == 0 || reads[changes] != 1 {
		t.Errorf("the view read %v, want the running resource polled and the changes once", reads)
	}
	for _, u := range tb.requests() {
		if p, err := url.Parse(u); err != nil || p.Scheme != "http" || p.Hostname() != "127.0.0.1" {
			t.Errorf("the browser fetched %s", u)
		}
	}
	for _, p := range paths.all() {
		if !slices.Contains([]string{"/host.html", "/host.js", "/mcp", "/favicon.ico", "/view.html", "/fixture.json"}, p) {
			t.Errorf("the browser asked the host's server for %s", p)
		}
	}
}

// motion: the one animation (the live marker) runs, and stops when the
// person asks for reduced motion.
func motion(t *testing.T, tb *tab) {
	t.Helper()
	const anim = `getComputedStyle(document.querySelector(".pulse")).animationName`
	if a := view[string](tb, anim); a != "pulse" {
		t.Errorf("the live marker's animation is %q, want pulse", a)
	}
	set := func(v string) {
		if _, err := chromedp.Call(tb.ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-reduced-motion", Value: v}}}); err != nil {
			t.Fatal(err)
		}
	}
	set("reduce")
	if a := view[string](tb, anim); a != "none" {
		t.Errorf("with prefers-reduced-motion: reduce, the live marker's animation is %q, want none", a)
	}
	set("")
}

// axe runs axe-core (web/'s pinned version) on the view's document: no
// serious or critical violation. The report goes to the artefacts.
func axe(t *testing.T, tb *tab, name string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(hostDir, "axe.min.js"))
	if err != nil {
		t.Fatal(err)
	}
	type violation struct {
		ID, Impact, Help string
		Nodes            []struct{ HTML string }
	}
	res := view[struct {
		Violations []violation
		Passes     int
	}](tb, string(src)+`;(async () => { const r = await axe.run(document, {resultTypes: ["violations"]});
		return {violations: r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map(n => ({html: n.html}))})), passes: r.passes.length}; })()`)
	report, _ := json.MarshalIndent(res, "", "  ")
	os.WriteFile(filepath.Join(artefacts, "axe-"+name+".json"), report, 0o644)
	for _, v := range res.Violations {
		if v.Impact == "serious" || v.Impact == "critical" {
			t.Errorf("axe (%s): %s %s: %s %v", name, v.Impact, v.ID, v.Help, v.Nodes)
		}
	}
	if res.Passes == 0 {
		t.Errorf("axe (%s) checked nothing", name)
	}
}

// keyboard: with the keyboard alone a person reaches the changed file's
// diff (its summary, then its scrolled region), sees where the focus is,
// and folds and unfolds it with Enter.
func keyboard(t *testing.T, tb *tab) {
	t.Helper()
	const focused = `(() => { const e = document.activeElement; if (!e || e === document.body) return "";
		const o = getComputedStyle(e); return e.tagName.toLowerCase() + (e.className ? "." + e.className : "") + "|" + (o.outlineStyle !== "none" && o.outlineWidth !== "0px") + "|" + (e.getAttribute("aria-label") || e.textContent.slice(0, 40)); })()`
	var seen []string
	for i := 0; i < 12; i++ {
		tb.do("pressing Tab", chromedp.KeyEvent(kb.Tab))
		f := view[string](tb, focused)
		seen = append(seen, f)
		if strings.HasPrefix(f, "summary") {
			break
		}
	}
	last := seen[len(seen)-1]
	if !strings.HasPrefix(last, "summary|true|notes.txt") {
		t.Fatalf("Tab reached %q, want the changed file's summary with a visible focus", seen)
	}
	tb.do("pressing Enter", chromedp.KeyEvent(kb.Enter))
	if open := view[bool](tb, `document.querySelector("#files details").open`); open {
		t.Error("Enter on the file's summary did not fold its diff")
	}
	tb.do("pressing Enter", chromedp.KeyEvent(kb.Enter))
	if open := view[bool](tb, `document.querySelector("#files details").open`); !open {
		t.Error("Enter again did not unfold it")
	}
	tb.do("pressing Tab", chromedp.KeyEvent(kb.Tab))
	if f := view[string](tb, focused); !strings.HasPrefix(f, "pre.diff|true|Diff of notes.txt") {
		t.Errorf("Tab after the summary reached %q, want the diff's scrolled region", f)
	}
}

// screenshot shows the view at width px (the iframe as wide as the page,
// as tall as the view says it is) and keeps it in the artefacts; nothing
// in the view may be wider than the frame.
func screenshot(t *testing.T, tb *tab, width int64, name string) {
	t.Helper()
	tb.do("setting the width", chromedp.EmulateViewport(width, 900))
	tb.waitView(fmt.Sprintf("its layout at %d px", width), fmt.Sprintf("document.documentElement.clientWidth === %d", width))
	// The host follows the view's size-changed notification.
	tb.waitHost("the view's height", `(() => { const f = document.getElementById("view"); return f && Math.abs(f.getBoundingClientRect().height - parseFloat(f.style.height || "0")) < 1 && parseFloat(f.style.height || "0") > 200; })()`)
	if over := view[int](tb, `document.documentElement.scrollWidth - document.documentElement.clientWidth`); over > 0 {
		t.Errorf("at %d px the view is %d px wider than its frame", width, over)
	}
	png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(artefacts, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot at %d px: %s", width, path)
}

// TestTurnViewHostile: a turn whose model writes markup and script, whose
// tool writes a file named with markup, and whose edit makes a diff of
// 1.2 MB: the view shows all of it as text (no element but its own, no
// script of theirs run), and the diff bounded with a visible note.
func TestTurnViewHostile(t *testing.T) {
	root := t.TempDir()
	big := strings.Repeat("a", 600<<10) + "X\n"
	if err := os.WriteFile(filepath.Join(root, "big.txt"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	const (
		script = `<script>document.body.dataset.pwned = "1"</script><img src=x onerror="document.body.dataset.pwned='2'">`
		name   = `<img src=x onerror=alert(1)>.txt`
	)
	model := chatscript.New(t, func(r *chatscript.Request) chatscript.Reply {
		switch toolMessages(r) {
		case 0:
			args, _ := json.Marshal(map[string]string{"path": name, "content": "<b>bold</b>\n"})
			return chatscript.Reply{Text: "Step one " + script, Calls: []chatscript.Call{{ID: "c1", Name: "write_file", Arguments: string(args)}}}
		case 1:
			return chatscript.Reply{Text: "</pre></div><b>bold</b>", Calls: []chatscript.Call{{ID: "c2", Name: "edit_file",
				Arguments: `{"path":"big.txt","old_text":"X","new_text":"Y"}`}}}
		}
		return chatscript.Reply{Text: "Done " + script}
	})
	endpoint, token := startServer(t, root, model.URL)
	const prompt = `<svg onload="document.body.dataset.pwned='3'"> fix it`
	tb, _ := openHost(t, endpoint, token, prompt, nil, "")

	tb.waitView("the write awaiting approval", `document.getElementById("pending").innerText.includes("write_file")`)
	if p := view[string](tb, `document.getElementById("pending").innerText`); !strings.Contains(p, name) {
		t.Errorf("the pending write reads %q, without its path as text", p)
	}
	host[bool](tb, "window.host.approve()")
	tb.waitView("the big edit awaiting approval", `document.getElementById("pending").innerText.includes("edit_file")`)
	pending := view[string](tb, `document.getElementById("pending").innerText`)
	if !strings.Contains(pending, "Cut by the server: the start of") {
		t.Errorf("the 1.2 MB pending diff shows no cut note: %.300q", pending)
	}
	if n := view[int](tb, `document.getElementById("pending").textContent.length`); n > 70000 {
		t.Errorf("the pending diff shows %d characters", n)
	}
	host[bool](tb, "window.host.approve()")
	tb.waitView("the answer", `!document.getElementById("answer-s").hidden && document.querySelectorAll("#files details").length === 2 && document.querySelector("#files pre.diff")`)

	doc := view[struct {
		Scripts, Images, Bold, Svg int
		Pwned                      *string
		Prompt, Steps, Files, Ans  string
	}](tb, `({scripts: document.scripts.length, images: document.images.length, bold: document.querySelectorAll("b").length,
		svg: document.querySelectorAll("svg").length, pwned: document.body.dataset.pwned ?? null,
		prompt: document.getElementById("prompt").textContent, steps: document.getElementById("steps").textContent,
		files: document.getElementById("files").textContent, ans: document.getElementById("answer").textContent})`)
	if doc.Scripts != 1 || doc.Images != 0 || doc.Bold != 0 || doc.Svg != 0 || doc.Pwned != nil {
		t.Errorf("hostile text became markup: %d scripts (want the view's 1), %d images, %d b, %d svg, pwned %v", doc.Scripts, doc.Images, doc.Bold, doc.Svg, doc.Pwned)
	}
	if doc.Prompt != prompt || !strings.Contains(doc.Steps, script) || !strings.Contains(doc.Steps, "</pre></div><b>bold</b>") || doc.Ans != "Done "+script {
		t.Errorf("the hostile texts do not read as written: prompt %q, steps %.200q, answer %q", doc.Prompt, doc.Steps, doc.Ans)
	}
	if !strings.Contains(doc.Files, name) || !strings.Contains(doc.Files, "+<b>bold</b>") || !regexp.MustCompile(`\[agentmcp: diff cut at \d+ of \d+ bytes`).MatchString(doc.Files) {
		t.Errorf("the changed files read %.400q", doc.Files)
	}
	if n := view[int](tb, `document.querySelector("main").textContent.length`); n > 400000 {
		t.Errorf("the view holds %d characters of text", n)
	}
}

// TestViewBounds: the view bounds what it is given, whatever the server
// sends (a host's passthrough is not ours): a step text of 1 MB, a diff of
// 1 MB awaiting approval and a changes diff of 1 MB of 20 000 lines each
// show their start with a note saying how much there was.
func TestViewBounds(t *testing.T) {
	mb := strings.Repeat("x", 1<<20)
	var diff strings.Builder
	diff.WriteString("--- a/f.txt\n+++ b/f.txt\n@@ -1,20000 +1,20000 @@\n")
	for diff.Len() < 1<<20 {
		diff.WriteString("+line of the diff <b>\n")
	}
	running := map[string]any{"id": "t1", "conversation": "default", "state": "finished", "prompt": "p", "turn": 1,
		"steps":         []any{map[string]any{"step": 1, "text": mb, "text_bytes": 1 << 20, "tool_calls": []any{}}},
		"changed_paths": []string{"f.txt"}, "usage": map[string]int{"input_tokens": 1, "output_tokens": 1},
		"response": "ok", "changed_files": []any{map[string]any{"path": "f.txt", "added": 20000, "removed": 0}}}
	waiting := map[string]any{"id": "t1", "conversation": "default", "state": "waiting", "prompt": "p", "steps": []any{},
		"changed_paths": []string{}, "usage": map[string]int{},
		"pending": map[string]any{"tool": "edit_file", "summary": "Edit", "arguments": []any{map[string]any{"name": "diff", "kind": "lines", "value": diff.String()}}}}
	for _, tc := range []struct {
		name    string
		running map[string]any
		wait    string
		check   string
		want    string
	}{
		{"pending diff", waiting, `!document.getElementById("pending-s").hidden`, `document.getElementById("pending").innerText`,
			"characters of this diff shown."},
		{"step text and changes", running, `document.querySelector("#files pre.diff")`, `document.body.innerText`, "Cut: 65,536 of 1,048,576 characters shown."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := map[string]any{"input": map[string]string{"prompt": "p"}, "running": tc.running, "changes": diff.String(),
				"meta": map[string]any{"ui": map[string]any{"csp": map[string]any{}}}}
			if tc.running["state"] == "finished" { // the host's tool result names the turn
				f["result"] = map[string]any{"content": []any{map[string]string{"type": "text", "text": "ok"}},
					"structuredContent": map[string]any{"response": "ok", "conversation": "default", "turn": 1,
						"changed_files": tc.running["changed_files"], "tool_calls": []any{}, "usage": map[string]int{"input_tokens": 1, "output_tokens": 1}}}
			}
			fixture, _ := json.Marshal(f)
			committed, err := os.ReadFile(filepath.Join(repo, "adapters", "agent", "view", "turn.html"))
			if err != nil {
				t.Fatal(err)
			}
			tb, _ := openHost(t, "", "", "", map[string][]byte{"/fixture.json": fixture, "/view.html": committed}, "fixture=1")
			tb.waitView(tc.name, tc.wait)
			text := view[string](tb, tc.check)
			if !strings.Contains(text, tc.want) || !strings.Contains(text, "Cut: 65,536 of ") {
				t.Errorf("no cut note %q in %.300q", tc.want, text)
			}
			if n := view[int](tb, `document.querySelector("main").textContent.length`); n > 300000 {
				t.Errorf("the view holds %d characters", n)
			}
			if n := view[int](tb, `document.querySelectorAll("pre.diff span").length`); n > 4000 {
				t.Errorf("the view holds %d diff lines", n)
			}
			if n := view[int](tb, `document.querySelectorAll("b").length`); n != 0 {
				t.Errorf("%d <b> elements: a diff line became markup", n)
			}
		})
	}
}
