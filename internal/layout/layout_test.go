package layout

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestModuleFollowsTheDependencyRule checks the real package graph, from
// `go list -deps`, against Rules.
func TestModuleFollowsTheDependencyRule(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Standard,Deps", Module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	type pkg struct {
		ImportPath string
		Standard   bool
		Deps       []string
	}
	std := map[string]bool{}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		std[p.ImportPath] = p.Standard
		pkgs = append(pkgs, p)
	}
	graph := map[string][]string{}
	for _, p := range pkgs {
		if _, ok := relative(p.ImportPath); !ok {
			continue
		}
		var deps []string
		for _, d := range p.Deps {
			if !std[d] && !strings.HasPrefix(d, "vendor/") && !strings.HasPrefix(d, "internal/") && d != "C" {
				deps = append(deps, d)
			}
		}
		graph[p.ImportPath] = deps
	}
	if len(graph) < 5 {
		t.Fatalf("go list found only %d module packages: %v", len(graph), graph)
	}
	for _, line := range Check(graph) {
		t.Error(line)
	}
}

// TestCheckCatchesViolations proves the rule bites: each graph below breaks
// it in one way.
func TestCheckCatchesViolations(t *testing.T) {
	m := func(rel string) string { return Module + "/" + rel }
	cases := []struct {
		name  string
		graph map[string][]string
		want  string
	}{
		{"domain imports a third party", map[string][]string{m("domain"): {"github.com/google/go-cmp/cmp"}}, "domain imports github.com/google/go-cmp/cmp"},
		{"domain imports ports", map[string][]string{m("domain"): {m("ports")}}, "domain imports " + m("ports")},
		{"the JSON wire layer imports the domain", map[string][]string{m("internal/jsonrpc"): {m("domain")}}, "internal/jsonrpc imports " + m("domain")},
		{"a carrier imports another", map[string][]string{m("adapters/httploopback"): {m("adapters/stdio")}}, "adapters/httploopback imports " + m("adapters/stdio")},
		{"the remote host imports the verifier adapter", map[string][]string{m("adapters/httpremote"): {m("adapters/oauth")}}, "adapters/httpremote imports " + m("adapters/oauth")},
		{"the engine imports a carrier", map[string][]string{m("engine"): {m("adapters/stdio")}}, "engine imports"},
		{"oauth imports x/time", map[string][]string{m("adapters/oauth"): {"golang.org/x/time/rate"}}, "adapters/oauth imports golang.org/x/time/rate"},
		{"the agent imports the model adapter", map[string][]string{m("adapters/agent"): {m("adapters/openai")}}, "adapters/agent imports " + m("adapters/openai")},
		{"the agent imports the workspace", map[string][]string{m("adapters/agent"): {m("adapters/workspace")}}, "adapters/agent imports " + m("adapters/workspace")},
		{"the agent imports the client library", map[string][]string{m("adapters/agent"): {"github.com/sashabaranov/go-openai"}}, "adapters/agent imports github.com/sashabaranov/go-openai"},
		{"the model adapter imports the workspace", map[string][]string{m("adapters/openai"): {m("adapters/workspace")}}, "adapters/openai imports " + m("adapters/workspace")},
		{"the workspace imports the sandbox", map[string][]string{m("adapters/workspace"): {m("adapters/bubblewrap")}}, "adapters/workspace imports " + m("adapters/bubblewrap")},
		{"the namespaces sandbox imports Landlock", map[string][]string{m("adapters/bubblewrap"): {m("adapters/landlock")}}, "adapters/bubblewrap imports " + m("adapters/landlock")},
		{"an unnamed package", map[string][]string{m("adapters/websocket"): nil}, "adapters/websocket: no dependency rule"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Check(c.graph)
			if len(got) != 1 || !strings.Contains(got[0], c.want) {
				t.Errorf("Check = %q, want one violation containing %q", got, c.want)
			}
		})
	}
	ok := map[string][]string{
		m("domain"):          nil,
		m("ports"):           {m("domain")},
		m("adapters/oauth"):  {m("ports"), m("domain"), "github.com/go-jose/go-jose/v4/jwt"},
		m("app"):             {m("adapters/stdio"), m("adapters/oauth")},
		m("adapters/agent"):  {m("ports"), m("domain")},
		m("adapters/openai"): {m("ports"), m("domain"), "github.com/sashabaranov/go-openai", "github.com/sashabaranov/go-openai/internal"},
	}
	if got := Check(ok); len(got) != 0 {
		t.Errorf("Check of a valid graph = %q, want none", got)
	}
}

// TestRulesFollowTheLayers: no rule lets a layered package depend on a
// layer to its right (domain ← ports ← engine ← adapters/* ← app, without
// exception), only test harnesses and app may depend on anything, and a
// helper under internal/ that a layered package may use depends on the
// standard library only.
func TestRulesFollowTheLayers(t *testing.T) {
	helpers := map[string]bool{}
	for _, r := range Rules {
		if strings.HasPrefix(r.Package, "internal/") && len(r.Allowed) == 0 {
			helpers[r.Package] = true
		}
	}
	for _, r := range Rules {
		layer := LayerOf(r.Package)
		if layer < 0 {
			continue
		}
		for _, a := range r.Allowed {
			switch {
			case a == "...":
				if layer != LayerOf("app") {
					t.Errorf("%s may depend on anything: only app may", r.Package)
				}
			case strings.Contains(a, "."): // a third party
			case LayerOf(a) > layer:
				t.Errorf("%s may depend on %s, a layer to its right", r.Package, a)
			case LayerOf(a) < 0 && !helpers[a]:
				t.Errorf("%s may depend on %s, which is neither a layer nor a standard-library-only helper", r.Package, a)
			}
		}
	}
	if LayerOf("engine") != 2 || LayerOf("adapters/streamable") != 3 || LayerOf("internal/netcap") != -1 {
		t.Error("the layers are not domain, ports, engine, adapters, app")
	}
}
