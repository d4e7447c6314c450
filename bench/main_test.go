package bench

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentmcp/agentmcp/bench/internal/load"
	"github.com/agentmcp/agentmcp/bench/internal/servers"
)

// sample is one measured run of one benchmark.
type sample struct{ ns, allocs, bytes float64 }

var (
	resultsMu sync.Mutex
	results   = map[string][]sample{} // "BenchmarkStdio/agentmcp" → runs
	order     []string
)

// record keeps one run's per-op figures (b.Loop runs the body once per
// -count, so every call here is one complete run).
func record(b *testing.B, m0, m1 runtime.MemStats) {
	n := float64(b.N)
	s := sample{
		ns:     float64(b.Elapsed().Nanoseconds()) / n,
		allocs: float64(m1.Mallocs-m0.Mallocs) / n,
		bytes:  float64(m1.TotalAlloc-m0.TotalAlloc) / n,
	}
	key := b.Name()
	if p := runtime.GOMAXPROCS(0); p != runtime.NumCPU() {
		// -cpu 1,2: keep each GOMAXPROCS apart ("BenchmarkStdio@1/agentmcp").
		group, server, _ := strings.Cut(key, "/")
		key = fmt.Sprintf("%s@%d/%s", group, p, server)
	}
	resultsMu.Lock()
	defer resultsMu.Unlock()
	if _, ok := results[key]; !ok {
		order = append(order, key)
	}
	results[key] = append(results[key], s)
}

func TestMain(m *testing.M) {
	servers.LauncherMain() // sandbox_test.go: this binary is run_command's launcher
	code := m.Run()
	if len(results) > 0 {
		printSummary(os.Stdout)
	}
	os.Exit(code)
}

type summaryRow struct {
	runs              int
	ns, allocs, bytes float64
	nsMin, nsMax      float64
}

func summarize(runs []sample) summaryRow {
	var ns, al, by []float64
	for _, s := range runs {
		ns, al, by = append(ns, s.ns), append(al, s.allocs), append(by, s.bytes)
	}
	return summaryRow{runs: len(runs), ns: load.Median(ns), allocs: load.Median(al), bytes: load.Median(by),
		nsMin: slices.Min(ns), nsMax: slices.Max(ns)}
}

// depVersion returns the version of a required module: from the build
// info when the binary has it, else from go.mod (go test runs in bench/).
func depVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	if mod, err := os.ReadFile("go.mod"); err == nil {
		for _, line := range strings.Split(string(mod), "\n") {
			f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
			if len(f) >= 2 && f[0] == path {
				return f[1]
			}
		}
	}
	return "?"
}

// peers are compared with each agentmcp row, in this order.
var peers = []string{"go-sdk", "go-sdk-sse", "mcp-go"}

// printSummary prints, per transport, the median of every server's runs and
// agentmcp's ratios to each peer (agentmcp ÷ peer: below 1 means agentmcp
// is cheaper), raw and net of the harness floor.
func printSummary(w io.Writer) {
	fmt.Fprintf(w, "\n## agentmcp bench summary\n\n%s %s/%s, NumCPU=%d, GOMAXPROCS=%d unless a section says otherwise; go-sdk %s, mcp-go %s.\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.NumCPU(),
		depVersion("github.com/modelcontextprotocol/go-sdk"), depVersion("github.com/mark3labs/mcp-go"))
	fmt.Fprintln(w, "Medians over the runs (-count); allocs and bytes are process-wide (client + server, like -benchmem).")
	fmt.Fprintln(w, "agentmcp's answer text is its execution envelope, {\"success\":true,\"toolName\":\"echo\",\"result\":{\"text\":\"hello world\"}}; the peers answer \"hello world\".")
	fmt.Fprintln(w, "HTTP: \"agentmcp-handler\" is streamable.NewHandler on a plain http.Server with no admission (like the peers here); \"agentmcp-loopback\" is the real adapters/httploopback host with its token/Host/Origin admission.")
	fmt.Fprintln(w, "\"bare\" is no MCP server: a canned answer carrying the request's id, i.e. the harness's own cost (the floor).")

	groups := map[string]map[string]summaryRow{}
	var groupOrder []string
	serverOrder := map[string][]string{}
	for _, name := range order {
		group, server, ok := strings.Cut(name, "/")
		if !ok {
			continue
		}
		group = strings.TrimPrefix(group, "Benchmark")
		if g, p, ok := strings.Cut(group, "@"); ok {
			group = g + " (GOMAXPROCS=" + p + ")"
		}
		if groups[group] == nil {
			groups[group] = map[string]summaryRow{}
			groupOrder = append(groupOrder, group)
		}
		groups[group][server] = summarize(results[name])
		serverOrder[group] = append(serverOrder[group], server)
	}

	for _, g := range groupOrder {
		rows := groups[g]
		fmt.Fprintf(w, "\n### %s\n\n", g)
		fmt.Fprintln(w, "| server | runs | ns/op (median) | ns/op min–max | allocs/op | B/op |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
		for _, s := range serverOrder[g] {
			r := rows[s]
			fmt.Fprintf(w, "| %s | %d | %.0f | %.0f–%.0f | %.1f | %.0f |\n", s, r.runs, r.ns, r.nsMin, r.nsMax, r.allocs, r.bytes)
		}
		floor, hasFloor := rows["bare"]
		var lines []string
		for _, a := range []string{"agentmcp", "agentmcp-handler", "agentmcp-loopback"} {
			ar, ok := rows[a]
			if !ok {
				continue
			}
			for _, p := range peers {
				pr, ok := rows[p]
				if !ok {
					continue
				}
				line := fmt.Sprintf("| %s ÷ %s | %.2fx | %.2fx", a, p, ar.ns/pr.ns, ar.allocs/pr.allocs)
				if hasFloor {
					line += " | " + netRatio(ar.ns, pr.ns, floor.ns) + " | " + netRatio(ar.allocs, pr.allocs, floor.allocs)
				} else {
					line += " | – | –"
				}
				lines = append(lines, line+" |")
			}
		}
		if len(lines) > 0 {
			fmt.Fprintln(w)
			fmt.Fprintln(w, "| ratio (agentmcp ÷ peer; <1 = agentmcp cheaper) | ns/op | allocs/op | ns/op net of floor | allocs/op net of floor |")
			fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
			for _, l := range lines {
				fmt.Fprintln(w, l)
			}
		}
	}
	fmt.Fprintln(w)
}

// netRatio is (a-floor)/(p-floor), or "n/a" when the peer is not above the
// floor.
func netRatio(a, p, floor float64) string {
	if p-floor <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", (a-floor)/(p-floor))
}
