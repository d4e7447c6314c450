package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// allowAll approves every prompt: edit_file's cost without a person.
type allowAll struct{ ports.ClosedCaller }

func (allowAll) RequestPermission(context.Context, domain.PermissionPrompt) domain.Decision {
	return domain.AllowOnce
}

// findTreeFiles is the size of find_files' tree: 10⁵ files in 1000
// directories of 100, a tenth of them .go files.
const findTreeFiles = 100_000

// BenchmarkWorkspaceTools measures edit_file and find_files beside
// read_file, in-process on the workspace session (no carrier): read_file
// and edit_file on a 10,000-line file (one line changed and changed back),
// find_files "**/*.go" over a tree of 10⁵ files. It prints each tool's
// time as a multiple of read_file's.
//
//	cd bench && go test -run '^$' -bench WorkspaceTools -benchtime 2s
func BenchmarkWorkspaceTools(b *testing.B) {
	root := b.TempDir()
	var big strings.Builder
	for i := 1; i <= 10000; i++ {
		fmt.Fprintf(&big, "line %05d of a file the agent edits\n", i)
	}
	if err := os.WriteFile(filepath.Join(root, "big.txt"), []byte(big.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	tree := filepath.Join(root, "tree")
	for d := range findTreeFiles / 100 {
		dir := filepath.Join(tree, fmt.Sprintf("d%02d", d/100), fmt.Sprintf("e%02d", d%100))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			ext := ".txt"
			if f%10 == 0 {
				ext = ".go"
			}
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d%s", f, ext)), nil, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	s, err := workspace.New(workspace.Options{Root: root})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()

	call := func(b *testing.B, tool string, args string, check func(json.RawMessage)) {
		env, err := s.InvokeTool(b.Context(), tool, json.RawMessage(args), allowAll{})
		if err != nil || !env.Success {
			b.Fatalf("%s: %v %s", tool, err, env.Error)
		}
		if check != nil {
			check(env.Result)
		}
	}
	loop := func(b *testing.B, body func(i int)) {
		b.ReportAllocs()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		i := 0
		for b.Loop() {
			body(i)
			i++
		}
		runtime.ReadMemStats(&m1)
		record(b, m0, m1)
	}
	ns := map[string]float64{}
	run := func(name string, body func(b *testing.B, i int)) {
		b.Run(name, func(b *testing.B) {
			loop(b, func(i int) { body(b, i) })
			ns[name] = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		})
	}
	run("read_file", func(b *testing.B, _ int) { call(b, "read_file", `{"path":"big.txt"}`, nil) })
	run("edit_file", func(b *testing.B, i int) {
		from, to := "line 05000 ", "line 5000! "
		if i%2 == 1 {
			from, to = to, from
		}
		call(b, "edit_file", fmt.Sprintf(`{"path":"big.txt","old_text":%q,"new_text":%q}`, from, to), nil)
	})
	run("find_files", func(b *testing.B, _ int) {
		call(b, "find_files", `{"pattern":"**/*.go","path":"tree"}`, func(r json.RawMessage) {
			var res struct {
				Files     []string `json:"files"`
				Truncated bool     `json:"truncated"`
			}
			if json.Unmarshal(r, &res) != nil || len(res.Files) != workspace.MaxFindResults || !res.Truncated {
				b.Fatalf("find_files found %d files (truncated %v), want the first %d", len(res.Files), res.Truncated, workspace.MaxFindResults)
			}
		})
	})
	run("find_files_all", func(b *testing.B, _ int) {
		// A pattern no file matches: the whole tree is walked.
		call(b, "find_files", `{"pattern":"**/*.none","path":"tree"}`, nil)
	})
	if r := ns["read_file"]; r > 0 {
		fmt.Printf("workspace tools, per call: read_file %.0f µs; edit_file %.1f× read_file; find_files (first 1000 of 10⁴ matches) %.1f×; find_files (whole 10⁵-file tree, no match) %.1f×\n",
			r/1e3, ns["edit_file"]/r, ns["find_files"]/r, ns["find_files_all"]/r)
	}
}
