package app_test

import (
	"strings"
	"testing"
)

const uiCaps = `{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}`

// TestServeTurnView: with --model, agent_submit links the turn view for a
// client that declares the UI extension (--ui auto, the default), for
// every client with --ui always and for none with --ui never; the view is
// listed and read with the app MIME type and an empty CSP allowance, and
// a client that renders no apps sees the tool as before (docs/SPEC.md §2
// "The turn view").
func TestServeTurnView(t *testing.T) {
	model := writingModel(t)
	agent := []string{"--model", "m", "--model-url", model.URL, "--ephemeral", "--no-model-probe"}
	submitMeta := func(c *mcpConn, id int, caps string) any {
		r := c.do(modernCall(id, "tools/list", `"x":0`, caps), id, "tools/list", "")
		tools := r["result"].(map[string]any)["tools"].([]any)
		return tools[len(tools)-1].(map[string]any)["_meta"]
	}
	for _, carrier := range []string{"stdio", "http"} {
		c := serveOver(t, carrier, agent...)
		meta, _ := submitMeta(c, 1, uiCaps).(map[string]any)
		ui, _ := meta["ui"].(map[string]any)
		if ui["resourceUri"] != "ui://agentmcp/turn" {
			t.Fatalf("%s: a client that renders apps sees agent_submit's _meta %v", carrier, meta)
		}
		d := c.do(modernCall(5, "server/discover", `"x":0`, `{}`), 5, "server/discover", "")
		ext, _ := d["result"].(map[string]any)["capabilities"].(map[string]any)["extensions"].(map[string]any)
		if _, ok := ext["io.modelcontextprotocol/ui"]; !ok {
			t.Errorf("%s: server/discover declares the extensions %v, without io.modelcontextprotocol/ui", carrier, ext)
		}
		if m := submitMeta(c, 2, `{}`); m != nil {
			t.Errorf("%s: a client that renders no apps sees _meta %v", carrier, m)
		}
		list := c.do(modernCall(3, "resources/list", `"x":0`, `{}`), 3, "resources/list", "")
		var listed map[string]any
		for _, r := range list["result"].(map[string]any)["resources"].([]any) {
			if r.(map[string]any)["uri"] == "ui://agentmcp/turn" {
				listed = r.(map[string]any)
			}
		}
		if listed == nil || listed["mimeType"] != "text/html;profile=mcp-app" {
			t.Errorf("%s: resources/list has the view as %v", carrier, listed)
		}
		rd := c.do(modernCall(4, "resources/read", `"uri":"ui://agentmcp/turn"`, uiCaps), 4, "resources/read", "ui://agentmcp/turn")
		content := rd["result"].(map[string]any)["contents"].([]any)[0].(map[string]any)
		csp, _ := content["_meta"].(map[string]any)["ui"].(map[string]any)["csp"].(map[string]any)
		text, _ := content["text"].(string)
		if content["mimeType"] != "text/html;profile=mcp-app" || !strings.HasPrefix(text, "<!doctype html>") || len(text) >= 1<<20 ||
			len(csp["connectDomains"].([]any)) != 0 || len(csp["resourceDomains"].([]any)) != 0 {
			t.Errorf("%s: the view read as %.300v", carrier, content)
		}
	}
	for _, tc := range []struct {
		ui   string
		caps string
		want bool
	}{
		{"never", uiCaps, false},
		{"always", `{}`, true},
	} {
		c := serveOver(t, "http", append([]string{"--ui", tc.ui}, agent...)...)
		if got := submitMeta(c, 1, tc.caps) != nil; got != tc.want {
			t.Errorf("--ui %s: linked %v, want %v", tc.ui, got, tc.want)
		}
	}
	c := serveOver(t, "stdio") // no agent: no turn to view
	if m := submitMeta(c, 1, uiCaps); m != nil {
		t.Errorf("without --model: _meta %v", m)
	}
}
