package main

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/bench/internal/load"
	"github.com/agentmcp/agentmcp/bench/internal/servers"
	"github.com/agentmcp/agentmcp/bench/internal/wire"
)

// TestSmoke is the CI smoke mode: every server in a process of its own
// (each HTTP server on both wires, the remote host with fresh and cached
// tokens, the loopback host's heap reading, every stdio server), a few
// checked answers from each through benchload. No timing.
func TestSmoke(t *testing.T) {
	benchDir, err := findBenchDir()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var log bytes.Buffer
	err = smoke(ctx, benchDir, "", &log)
	t.Log("\n" + log.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ok   stdio/agentmcp", "ok   http/2026-07-28/agentmcp-remote/fresh", "ok   mem/agentmcp-loopback",
		"ok   http/2026-07-28/agentmcp-workspace/read_file", "ok   http/2026-07-28/agentmcp-workspace/tasks-get"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("no %q in the smoke log", want)
		}
	}
}

func TestParseBench(t *testing.T) {
	out := `goos: linux
BenchmarkStdio/agentmcp-2         	   60000	     19469 ns/op	    6291 B/op	     130 allocs/op
BenchmarkStdio/agentmcp-2         	   60000	     20000 ns/op	    6300 B/op	     131 allocs/op
BenchmarkStdio/agentmcp-2         	   60000	     18000 ns/op	    6280 B/op	     129 allocs/op
BenchmarkToolsCallStream-2   	  312044	      3820.5 ns/op	     872 B/op	      23 allocs/op
BenchmarkNoMem 100 5 ns/op
PASS
`
	st := parseBench(out)
	if len(st) != 3 {
		t.Fatalf("%+v", st)
	}
	a := st[0]
	if a.Name != "BenchmarkStdio/agentmcp" || a.Runs != 3 || a.NsOp != 19469 || a.AllocsOp != 130 || a.BOp != 6291 || a.NsMin != 18000 || a.NsMax != 20000 {
		t.Errorf("%+v", a)
	}
	if s := st[1]; s.Name != "BenchmarkToolsCallStream" || s.NsOp != 3820.5 || s.AllocsOp != 23 {
		t.Errorf("%+v", s)
	}
}

func TestOnlineCPUs(t *testing.T) {
	for in, want := range map[string]int{"0-1\n": 2, "0": 1, "0-3,6,8-9": 7, "x": 0} {
		if got := onlineCPUs(in); got != want {
			t.Errorf("%q: %d, want %d", in, got, want)
		}
	}
}

func TestRowIDsUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range allRows(true) {
		if seen[r.ID()] {
			t.Errorf("duplicate row %s", r.ID())
		}
		seen[r.ID()] = true
	}
	if !seen["http/2026-07-28/agentmcp-remote/fresh"] || !seen["stdio/agentmcp"] || !seen["mem/agentmcp-loopback"] {
		t.Errorf("rows %v", seen)
	}
}

func rep(rps float64) *load.Report {
	return &load.Report{Result: load.Result{Requests: int64(rps * 5), Seconds: 5, RPS: rps, P50us: 100, P99us: 900,
		CPU: &load.CPU{Server: 4.5, Load: 3, Busy: []float64{0.95, 0.7}, Interrupts: []float64{0.02, 0.02}}}}
}

// The goals are computed from the right rows, and a failed row shows as
// FAILED with its goal unmeasured rather than as a number.
func TestGoalsAndRender(t *testing.T) {
	res := &results{Machine: &machine{Date: "d", Commit: "c"}, Config: configOut{Window: 64, MemCount: 100000, ServerCPU: "0", LoadCPU: "1", Pin: true}}
	add := func(id string, r *load.Report, err string) {
		for _, rw := range allRows(false) {
			if rw.ID() == id {
				rr := &rowResult{row: rw, Err: err}
				if r != nil {
					rr.Reports = []*load.Report{r}
				}
				res.Rows = append(res.Rows, rr)
				return
			}
		}
		t.Fatalf("no row %s", id)
	}
	add("http/2025-11-25/bare", rep(10000), "")
	add("http/2025-11-25/mcp-go", rep(5000), "")
	add("http/2025-11-25/agentmcp-loopback", rep(8000), "")
	add("http/2025-11-25/agentmcp-remote/fresh", rep(7000), "")
	add("http/2026-07-28/agentmcp-loopback", nil, "boom")
	contended := rep(10000)
	contended.Result.CPU.Server = 3 // 60% of the CPU, of 95% busy
	add("stdio/mcp-go", contended, "")
	add("stdio/agentmcp", rep(16000), "")
	m := rep(7000)
	m.HeapAfterWarmup, m.HeapEnd = &load.Heap{InUse: 1000}, &load.Heap{InUse: 1050}
	add("mem/agentmcp-loopback", m, "")
	res.InProc = []benchStat{
		{Name: "BenchmarkHTTP_2025_11_25/" + servers.AgentmcpHandler, NsOp: 70, AllocsOp: 130},
		{Name: "BenchmarkHTTP_2025_11_25/" + servers.MCPGo, NsOp: 100, AllocsOp: 240},
		{Name: "BenchmarkHTTP_2025_11_25/" + servers.Bare, NsOp: 50, AllocsOp: 100},
	}
	res.Engine = []benchStat{{Name: "BenchmarkToolsCallStream", AllocsOp: 23}}

	got := map[string]float64{}
	for _, g := range res.goals() {
		got[g.name] = g.value
	}
	want := map[string]float64{
		"loopback host ÷ bare handler, requests/s, " + wire.ProtoLegacy:                                                0.8,
		"loopback host ÷ mcp-go, requests/s, " + wire.ProtoLegacy:                                                      1.6,
		"stdio: agentmcp ÷ mcp-go, calls/s (window 64)":                                                                1.6,
		"in-process handler ÷ mcp-go, time per call net of the floor, " + wire.ProtoLegacy:                             0.4,
		"in-process handler ÷ bare handler, allocations per call, " + wire.ProtoLegacy:                                 1.3,
		"engine alone, allocations per tools/call (BenchmarkToolsCallStream)":                                          23,
		"remote host, a fresh RS256 token every request (worst case) ÷ loopback host, requests/s, " + wire.ProtoLegacy: 0.875,
		"memory: heap in use at the end ÷ after warm-up, loopback host, 100,000 requests":                              1.05,
	}
	for name, v := range want {
		if g, ok := got[name]; !ok || math.Abs(g-v) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", name, g, ok, v)
		}
	}
	for _, name := range []string{
		"loopback host ÷ bare handler, requests/s, " + wire.ProtoModern,
		"engine alone, allocations per tools/call (BenchmarkToolsCallExchange)",
	} {
		if !math.IsNaN(got[name]) {
			t.Errorf("%s = %v, want unmeasured", name, got[name])
		}
	}
	var b bytes.Buffer
	render(&b, res)
	out := b.String()
	for _, s := range []string{"| 2026-07-28 | agentmcp-loopback | FAILED |", "### Failures", "http/2026-07-28/agentmcp-loopback: boom", "| 0.80x | ≥ 0.80x | yes |", "| 8,000 |",
		"| 90% / 2% / 3% |", "during: stdio/mcp-go (33%)."} {
		if !strings.Contains(out, s) {
			t.Errorf("no %q in\n%s", s, out)
		}
	}
}
