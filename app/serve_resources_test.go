package app_test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestServeWorkspaceResources: every local serve command serves the
// workspace's files as resources through the file:// template under the
// resolved root (docs/SPEC.md §2), with the agent in front too (its
// decorator forwards the workspace's features, subscriptions included);
// server/discover declares resources with subscribe (subscriptions/listen
// serves it on every carrier) and never listChanged; a traversal is -32602.
func TestServeWorkspaceResources(t *testing.T) {
	model := writingModel(t)
	for _, carrier := range []string{"stdio", "unix", "http"} {
		for _, agent := range []bool{false, true} {
			root := t.TempDir()
			if err := os.WriteFile(filepath.Join(root, "notes.md"), []byte("# notes"), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"--root", root}
			if agent {
				args = append(args, "--model", "m", "--model-url", model.URL, "--ephemeral", "--no-model-probe")
			}
			c := serveOver(t, carrier, args...)
			resolved, _ := filepath.EvalSymlinks(root)
			uri := "file://" + resolved + "/notes.md"

			d := c.do(modernCall(1, "server/discover", `"x":0`, `{}`), 1, "server/discover", "")
			caps, _ := d["result"].(map[string]any)["capabilities"].(map[string]any)
			if r, ok := caps["resources"].(map[string]any); !ok || len(r) != 1 || r["subscribe"] != true {
				t.Fatalf("%s agent=%v: capabilities %v, want resources {subscribe: true}", carrier, agent, caps)
			}
			tl := c.do(modernCall(2, "resources/templates/list", `"x":0`, `{}`), 2, "resources/templates/list", "")
			tpl := tl["result"].(map[string]any)["resourceTemplates"].([]any)[0].(map[string]any)
			if tpl["uriTemplate"] != "file://"+resolved+"/{+path}" {
				t.Fatalf("%s agent=%v: template %v", carrier, agent, tpl)
			}
			rd := c.do(modernCall(3, "resources/read", `"uri":"`+uri+`"`, `{}`), 3, "resources/read", uri)
			got := rd["result"].(map[string]any)
			content := got["contents"].([]any)[0].(map[string]any)
			if content["text"] != "# notes" || content["uri"] != uri || got["ttlMs"] != float64(0) {
				t.Fatalf("%s agent=%v: read %v", carrier, agent, got)
			}
			bad := "file://" + resolved + "/%2e%2e/etc/passwd"
			e, _ := c.do(modernCall(4, "resources/read", `"uri":"`+bad+`"`, `{}`), 4, "resources/read", bad)["error"].(map[string]any)
			if e == nil || e["code"] != float64(-32602) || e["data"].(map[string]any)["uri"] != bad {
				t.Fatalf("%s agent=%v: traversal answered %v", carrier, agent, e)
			}
		}
	}
}
