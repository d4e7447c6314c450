package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentmcp/agentmcp/bench/internal/load"
	"github.com/agentmcp/agentmcp/bench/internal/servers"
	"github.com/agentmcp/agentmcp/bench/internal/wire"
)

// rep returns the report of a row with the median rate over its rounds
// (the lower middle one for an even count), or nil when the row did not run
// or failed.
func (res *results) rep(id string) *load.Report {
	for _, r := range res.Rows {
		if r.ID() != id || r.Err != "" || len(r.Reports) == 0 {
			continue
		}
		reps := slices.Clone(r.Reports)
		slices.SortFunc(reps, func(a, b *load.Report) int { return cmp.Compare(a.Result.RPS, b.Result.RPS) })
		return reps[(len(reps)-1)/2]
	}
	return nil
}

func (res *results) rps(id string) float64 {
	if r := res.rep(id); r != nil {
		return r.Result.RPS
	}
	return math.NaN()
}

// cpuPerReq is a row's server CPU time per request in seconds, or NaN.
func (res *results) cpuPerReq(id string) float64 {
	r := res.rep(id)
	if r == nil || r.Result.CPU == nil || r.Result.CPU.Server <= 0 || r.Result.Requests == 0 {
		return math.NaN()
	}
	return r.Result.CPU.Server / float64(r.Result.Requests)
}

// rateGoal compares the rates of rows a and b, and (as a cross-check) their
// servers' CPU per request, inverted: b's CPU per request ÷ a's.
func (res *results) rateGoal(name, a, b, target string, met func(float64) bool) goal {
	return goal{name: name, value: res.rps(a) / res.rps(b), target: target, met: met, unit: "x",
		byCPU: res.cpuPerReq(b) / res.cpuPerReq(a)}
}

func findStat(stats []benchStat, name string) *benchStat {
	for i := range stats {
		if stats[i].Name == name {
			return &stats[i]
		}
	}
	return nil
}

func httpID(w, server string) string { return "http/" + w + "/" + server }

// workspaceID is the id of a workspace row.
func workspaceID(workload string) string {
	return httpID(wire.ProtoModern, servers.AgentmcpWorkspace) + "/" + workload
}

// inprocGroups are the in-process benchmarks, by go test name.
var inprocGroups = []struct{ bench, title string }{
	{"BenchmarkStdio", "stdio (io.Pipe, one call at a time)"},
	{"BenchmarkHTTP_2025_11_25", "Streamable HTTP, 2025-11-25 wire (one client, one call at a time)"},
	{"BenchmarkHTTP_2026_07_28", "Streamable HTTP, 2026-07-28 wire (one client, one call at a time)"},
}

func inprocGroup(w string) string {
	return "BenchmarkHTTP_" + strings.ReplaceAll(w, "-", "_")
}

// goal is one of the performance goals, measured.
type goal struct {
	name   string
	value  float64 // NaN when a row it needs is missing
	target string
	met    func(float64) bool
	unit   string // "x" for ratios, "" for counts
	// byCPU is the same ratio computed from the servers' CPU time per
	// request (rate goals only): what the rate ratio would be if each
	// server had had its core to itself; NaN when not applicable.
	byCPU float64
}

func atLeast(t float64) func(float64) bool { return func(v float64) bool { return v >= t } }
func atMost(t float64) func(float64) bool  { return func(v float64) bool { return v <= t } }

func (res *results) goals() []goal {
	var g []goal
	for _, w := range wire.Wires {
		g = append(g, res.rateGoal("loopback host ÷ bare handler, requests/s, "+w,
			httpID(w, servers.AgentmcpLoopback), httpID(w, servers.Bare), "≥ 0.80x", atLeast(0.8)))
	}
	for _, w := range wire.Wires {
		g = append(g, res.rateGoal("loopback host ÷ mcp-go, requests/s, "+w,
			httpID(w, servers.AgentmcpLoopback), httpID(w, servers.MCPGo), "≥ 1.50x", atLeast(1.5)))
	}
	// Metrics on (adapters/metrics, docs/SPEC.md §13) cost under 5%: both
	// rows of one run, against each other and against the floor.
	for _, w := range wire.Wires {
		g = append(g, res.rateGoal("loopback host, metrics on ÷ metrics off, requests/s, "+w,
			httpID(w, servers.AgentmcpLoopbackMetrics), httpID(w, servers.AgentmcpLoopback), "≥ 0.95x", atLeast(0.95)))
		g = append(g, res.rateGoal("loopback host, metrics on ÷ bare handler, requests/s, "+w,
			httpID(w, servers.AgentmcpLoopbackMetrics), httpID(w, servers.Bare), "reported", nil))
	}
	g = append(g, res.rateGoal("stdio: agentmcp ÷ mcp-go, calls/s (window "+strconv.Itoa(res.Config.Window)+")",
		"stdio/"+servers.Agentmcp, "stdio/"+servers.MCPGo, "≥ 1.50x", atLeast(1.5)))
	for _, w := range wire.Wires {
		grp := inprocGroup(w)
		a, m, b := findStat(res.InProc, grp+"/"+servers.AgentmcpHandler), findStat(res.InProc, grp+"/"+servers.MCPGo), findStat(res.InProc, grp+"/"+servers.Bare)
		net, allocs := math.NaN(), math.NaN()
		if a != nil && m != nil && b != nil {
			if m.NsOp > b.NsOp {
				net = (a.NsOp - b.NsOp) / (m.NsOp - b.NsOp)
			}
			allocs = a.AllocsOp / b.AllocsOp
		}
		g = append(g, goal{name: "in-process handler ÷ mcp-go, time per call net of the floor, " + w,
			value: net, target: "≤ 0.50x", met: atMost(0.5), unit: "x", byCPU: math.NaN()})
		g = append(g, goal{name: "in-process handler ÷ bare handler, allocations per call, " + w,
			value: allocs, target: "≤ 1.30x", met: atMost(1.3), unit: "x", byCPU: math.NaN()})
	}
	for _, b := range []string{"BenchmarkToolsCallStream", "BenchmarkToolsCallExchange"} {
		v := math.NaN()
		if s := findStat(res.Engine, b); s != nil {
			v = s.AllocsOp
		}
		g = append(g, goal{name: "engine alone, allocations per tools/call (" + b + ")",
			value: v, target: "≤ 40", met: atMost(40), byCPU: math.NaN()})
	}
	// The remote host's goal is measured as clients use it, one access
	// token per client reused until it expires (the verdict cache does its
	// job); a different token on every request, each verified in full, is
	// the worst case, reported beside it with no target.
	for _, w := range wire.Wires {
		g = append(g, res.rateGoal("remote host, RS256 token reused (verdict cache) ÷ loopback host, requests/s, "+w,
			httpID(w, servers.AgentmcpRemote)+"/cached", httpID(w, servers.AgentmcpLoopback), "≥ 0.80x", atLeast(0.8)))
		g = append(g, res.rateGoal("remote host, a fresh RS256 token every request (worst case) ÷ loopback host, requests/s, "+w,
			httpID(w, servers.AgentmcpRemote)+"/fresh", httpID(w, servers.AgentmcpLoopback), "reported", nil))
	}
	// Issue 20: a client polling a task costs about what a plain call of
	// the workspace does (both rows against the same host, same run).
	g = append(g, res.rateGoal("tasks/get of a completed task ÷ tools/call read_file, requests/s, workspace session, loopback host, "+wire.ProtoModern,
		workspaceID("tasks-get"), workspaceID(wire.ReadFile.Name), "≥ 0.80x", atLeast(0.8)))
	mem := math.NaN()
	if r := res.rep("mem/" + servers.AgentmcpLoopback); r != nil && r.HeapAfterWarmup != nil && r.HeapEnd != nil {
		mem = float64(r.HeapEnd.InUse) / float64(r.HeapAfterWarmup.InUse)
	}
	g = append(g, goal{name: "memory: heap in use at the end ÷ after warm-up, loopback host, " + fmtCount(float64(res.Config.MemCount)) + " requests",
		value: mem, target: "0.90x–1.10x", met: func(v float64) bool { return v >= 0.9 && v <= 1.1 }, unit: "x", byCPU: math.NaN()})
	return g
}

func fmtRatio(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return fmt.Sprintf("%.2fx", v)
}

// fmtCount writes n with thousands separators.
func fmtCount(n float64) string {
	if math.IsNaN(n) {
		return "–"
	}
	s := strconv.FormatInt(int64(math.Round(n)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func fmtMiB(n uint64) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }

// cpuCols returns the server's CPU per request (µs), the load generator's,
// how the server's CPU was spent (the server / interrupts / other
// processes), and how busy the load generator's CPU was.
func (res *results) cpuCols(r *load.Report) []string {
	c := r.Result.CPU
	if c == nil {
		return []string{"–", "–", "–", "–"}
	}
	perReq, loadPerReq := "–", "–"
	if c.Server >= 0 && r.Result.Requests > 0 {
		perReq = fmt.Sprintf("%.1f", c.Server/float64(r.Result.Requests)*1e6)
	}
	if r.Result.Requests > 0 {
		loadPerReq = fmt.Sprintf("%.1f", c.Load/float64(r.Result.Requests)*1e6)
	}
	split := "–"
	if server, intr, others, ok := res.serverCPUSplit(r); ok {
		split = fmt.Sprintf("%.0f%% / %.0f%% / %.0f%%", 100*server, 100*intr, 100*others)
	}
	loadBusy := "–"
	if i, err := strconv.Atoi(res.Config.LoadCPU); err == nil && i >= 0 && i < len(c.Busy) {
		loadBusy = fmt.Sprintf("%.0f%%", 100*c.Busy[i])
	}
	return []string{perReq, loadPerReq, split, loadBusy}
}

// serverCPUSplit divides the server's CPU's time over the measured phase:
// the server process, interrupts, and other processes (what is left of the
// CPU's busy time). ok is false when the server was not pinned to a single
// CPU or was not measured.
func (res *results) serverCPUSplit(r *load.Report) (server, intr, others float64, ok bool) {
	c := r.Result.CPU
	i, err := strconv.Atoi(res.Config.ServerCPU)
	if c == nil || !res.Config.Pin || err != nil || i < 0 || i >= len(c.Busy) || i >= len(c.Interrupts) || c.Server < 0 || r.Result.Seconds <= 0 {
		return 0, 0, 0, false
	}
	server = c.Server / r.Result.Seconds
	intr = c.Interrupts[i]
	others = max(0, c.Busy[i]-intr-server)
	return server, intr, others, true
}

// contended lists the rows whose server CPU other processes used for more
// than a tenth of the measured phase.
func (res *results) contended() []string {
	var out []string
	for _, rr := range res.Rows {
		r := res.rep(rr.ID())
		if r == nil {
			continue
		}
		if _, _, others, ok := res.serverCPUSplit(r); ok && others > 0.10 {
			out = append(out, fmt.Sprintf("%s (%.0f%%)", rr.ID(), 100*others))
		}
	}
	return out
}

func row2(w io.Writer, cells ...string) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
}

// render writes the run's table as Markdown.
func render(w io.Writer, res *results) {
	m, c := res.Machine, res.Config
	dirty := ""
	if m.Dirty {
		dirty = " (with uncommitted changes)"
	}
	fmt.Fprintf(w, "## agentmcp side-by-side bench\n\n")
	fmt.Fprintf(w, "- **Run:** %s; agentmcp commit %s%s on branch %s; took %s.\n", m.Date, m.Commit, dirty, m.Branch,
		(time.Duration(m.Seconds) * time.Second).String())
	fmt.Fprintf(w, "- **Machine:** %s, %d CPUs (online: %s), kernel %s, %s; %s. Load average (1, 5, 15 min): %s at the start, %s at the end.\n",
		m.CPU, m.NumCPU, m.Online, m.Kernel, m.Platform, m.GoVersion, m.LoadStart, m.LoadEnd)
	fmt.Fprintf(w, "- **Peers:** go-sdk %s, mcp-go %s, each in its documented production configuration (one shared server, stateless HTTP with JSON answers, logging off).\n", m.GoSDK, m.MCPGo)
	pin := "not pinned"
	if c.Pin {
		pin = fmt.Sprintf("server pinned to CPU %s (GOMAXPROCS %s), load generator to CPU %s (GOMAXPROCS %s)",
			c.ServerCPU, res.gomaxprocs(true), c.LoadCPU, res.gomaxprocs(false))
	}
	fmt.Fprintf(w, "- **Separate processes:** %s; HTTP: %d clients on kept-alive connections; stdio: %d requests in flight; each row %s warm-up, then %s measured; %d round(s), median shown. Memory row: %s + %s requests.\n",
		pin, c.Clients, c.Window, c.Warmup, c.Duration, c.Rounds, fmtCount(float64(c.MemWarmup)), fmtCount(float64(c.MemCount)))
	fmt.Fprintf(w, "- **In-process:** go test -bench -benchmem -count %d -benchtime %s; medians.\n", c.Count, c.Benchtime)
	fmt.Fprintf(w, "- Every answer was checked (id, no error, one text block, exact text). agentmcp answers with its execution envelope `%s`; the peers and the bare servers with `%s`.\n", wire.EnvelopeText, wire.EchoText)

	fmt.Fprintf(w, "\n### Goals\n\n")
	row2(w, "goal", "measured", "target", "met", "cross-check: by server CPU per request")
	row2(w, "---", "---:", "---", "---", "---:")
	for _, g := range res.goals() {
		met := "–"
		val := fmtRatio(g.value)
		if g.unit == "" && !math.IsNaN(g.value) {
			val = fmt.Sprintf("%.1f", g.value)
		}
		if g.met != nil && !math.IsNaN(g.value) && !math.IsInf(g.value, 0) {
			met = "no"
			if g.met(g.value) {
				met = "yes"
			}
		}
		row2(w, g.name, val, g.target, met, fmtRatio(g.byCPU))
	}
	if c := res.contended(); len(c) > 0 {
		fmt.Fprintf(w, "\nOther processes took more than 10%% of the server's CPU during: %s. Their rates are low by about that much; the cross-check column, from CPU time per request, much less so.\n", strings.Join(c, ", "))
	}

	lat := func(r *load.Report) []string {
		return []string{fmt.Sprintf("%.0f", r.Result.P50us), fmt.Sprintf("%.0f", r.Result.P99us)}
	}
	cpuHead := []string{"server CPU µs/req", "load CPU µs/req", "CPU " + c.ServerCPU + ": server / interrupts / others", "CPU " + c.LoadCPU + " busy"}
	cpuAlign := []string{"---:", "---:", "---:", "---:"}
	// httpRows prints the HTTP rows of one table: the local servers
	// (no tokens) against the bare handler, or the remote host's token
	// rows against the loopback host; both against mcp-go too.
	httpRows := func(remote bool, base string) {
		for _, rr := range res.Rows {
			if rr.Kind != kindHTTP || (rr.Tokens != "") != remote || rr.Workload != "" {
				continue
			}
			label := rr.Server
			if remote {
				label = rr.Tokens
			}
			r := res.rep(rr.ID())
			if r == nil {
				row2(w, rr.Wire, label, "FAILED", "", "", "", "", "", "", "", "")
				continue
			}
			cells := []string{rr.Wire, label, fmtCount(r.Result.RPS),
				fmtRatio(r.Result.RPS / res.rps(httpID(rr.Wire, base))),
				fmtRatio(r.Result.RPS / res.rps(httpID(rr.Wire, servers.MCPGo)))}
			row2(w, append(append(cells, lat(r)...), res.cpuCols(r)...)...)
		}
	}
	if res.hasEchoHTTP() {
		fmt.Fprintf(w, "\n### Streamable HTTP, separate processes (%d clients, kept-alive)\n\n", c.Clients)
		row2(w, append([]string{"wire", "server", "requests/s", "÷ bare", "÷ mcp-go", "p50 µs", "p99 µs"}, cpuHead...)...)
		row2(w, append([]string{"---", "---", "---:", "---:", "---:", "---:", "---:"}, cpuAlign...)...)
		httpRows(false, servers.Bare)
	}
	if res.hasRemote() {
		fmt.Fprintf(w, "\n### Remote host (OAuth, RS256 JWT access tokens), separate processes\n\n")
		fmt.Fprintf(w, "fresh: a different token on every request (from a pool of more than twice the host's verdict cache, used in turn, so every request is verified in full); cached: one token, verified once.\n\n")
		row2(w, append([]string{"wire", "tokens", "requests/s", "÷ loopback host", "÷ mcp-go", "p50 µs", "p99 µs"}, cpuHead...)...)
		row2(w, append([]string{"---", "---", "---:", "---:", "---:", "---:", "---:"}, cpuAlign...)...)
		httpRows(true, servers.AgentmcpLoopback)
	}
	if res.hasWorkspace() {
		fmt.Fprintf(w, "\n### Workspace session: tasks/get beside read_file (loopback host, %s, %d clients)\n\n", wire.ProtoModern, c.Clients)
		fmt.Fprintf(w, "read_file: a plain tools/call of the workspace's read_file of a %d-byte file. tasks-get: tasks/get of a completed agent_submit task whose result is that file's content. The same _meta (the tasks extension declared) on both.\n\n", len(wire.FileText))
		row2(w, append([]string{"request", "requests/s", "÷ read_file", "p50 µs", "p99 µs"}, cpuHead...)...)
		row2(w, append([]string{"---", "---:", "---:", "---:", "---:"}, cpuAlign...)...)
		for _, rr := range res.Rows {
			if rr.Workload == "" {
				continue
			}
			r := res.rep(rr.ID())
			if r == nil {
				row2(w, rr.Workload, "FAILED", "", "", "", "", "", "", "")
				continue
			}
			cells := []string{rr.Workload, fmtCount(r.Result.RPS), fmtRatio(r.Result.RPS / res.rps(workspaceID(wire.ReadFile.Name)))}
			row2(w, append(append(cells, lat(r)...), res.cpuCols(r)...)...)
		}
	}
	if res.hasKind(kindStdio) {
		fmt.Fprintf(w, "\n### stdio, separate processes (pipelined, %d in flight; initialize on 2025-11-25)\n\n", c.Window)
		row2(w, append([]string{"server", "calls/s", "÷ bare", "÷ mcp-go", "p50 µs", "p99 µs"}, cpuHead...)...)
		row2(w, append([]string{"---", "---:", "---:", "---:", "---:", "---:"}, cpuAlign...)...)
		for _, rr := range res.Rows {
			if rr.Kind != kindStdio {
				continue
			}
			r := res.rep(rr.ID())
			if r == nil {
				row2(w, rr.Server, "FAILED", "", "", "", "", "", "", "", "")
				continue
			}
			cells := []string{rr.Server, fmtCount(r.Result.RPS),
				fmtRatio(r.Result.RPS / res.rps("stdio/"+servers.Bare)),
				fmtRatio(r.Result.RPS / res.rps("stdio/"+servers.MCPGo))}
			row2(w, append(append(cells, lat(r)...), res.cpuCols(r)...)...)
		}
	}
	if res.hasKind(kindMem) {
		fmt.Fprintf(w, "\n### Memory (separate process, heap read after a forced GC)\n\n")
		row2(w, "server", "wire", "requests", "requests/s", "heap in use after warm-up", "at the end", "end ÷ warm-up", "live heap after warm-up / end", "goroutines after warm-up / end")
		row2(w, "---", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:")
		for _, rr := range res.Rows {
			if rr.Kind != kindMem {
				continue
			}
			r := res.rep(rr.ID())
			if r == nil || r.HeapAfterWarmup == nil || r.HeapEnd == nil {
				row2(w, rr.Server, rr.Wire, "FAILED", "", "", "", "", "", "")
				continue
			}
			a, e := r.HeapAfterWarmup, r.HeapEnd
			row2(w, rr.Server, rr.Wire, fmtCount(float64(r.Result.Requests)), fmtCount(r.Result.RPS),
				fmtMiB(a.InUse), fmtMiB(e.InUse), fmtRatio(float64(e.InUse)/float64(a.InUse)),
				fmtMiB(a.Live)+" / "+fmtMiB(e.Live), fmt.Sprintf("%d / %d", a.Goroutines, e.Goroutines))
		}
	}
	if len(res.InProc) > 0 {
		fmt.Fprintf(w, "\n### In-process (go test -bench in bench/, client and server in one process, one call at a time)\n\n")
		fmt.Fprintf(w, "Allocations are process-wide (client + server). \"net of the floor\" subtracts the bare row from both sides.\n")
		for _, g := range inprocGroups {
			fmt.Fprintf(w, "\n**%s**\n\n", g.title)
			row2(w, "server", "ns/op", "min–max", "allocs/op", "B/op", "ns/op ÷ mcp-go, net of the floor", "allocs/op ÷ bare")
			row2(w, "---", "---:", "---:", "---:", "---:", "---:", "---:")
			m, b := findStat(res.InProc, g.bench+"/"+servers.MCPGo), findStat(res.InProc, g.bench+"/"+servers.Bare)
			for _, s := range res.InProc {
				grp, name, ok := strings.Cut(s.Name, "/")
				if !ok || grp != g.bench {
					continue
				}
				net, al := math.NaN(), math.NaN()
				if m != nil && b != nil && m.NsOp > b.NsOp {
					net = (s.NsOp - b.NsOp) / (m.NsOp - b.NsOp)
				}
				if b != nil && b.AllocsOp > 0 {
					al = s.AllocsOp / b.AllocsOp
				}
				netCell := fmtRatio(net)
				if name == servers.Bare {
					netCell = "(the floor)"
				}
				row2(w, name, fmtCount(s.NsOp), fmtCount(s.NsMin)+"–"+fmtCount(s.NsMax),
					fmt.Sprintf("%.1f", s.AllocsOp), fmtCount(s.BOp), netCell, fmtRatio(al))
			}
		}
	}
	if len(res.Engine) > 0 {
		fmt.Fprintf(w, "\n### Engine alone (root module, engine; no transport)\n\n")
		row2(w, "benchmark", "ns/op", "allocs/op", "B/op")
		row2(w, "---", "---:", "---:", "---:")
		for _, s := range res.Engine {
			row2(w, s.Name, fmtCount(s.NsOp), fmt.Sprintf("%.1f", s.AllocsOp), fmtCount(s.BOp))
		}
	}
	if f := res.failures(); len(f) > 0 {
		fmt.Fprintf(w, "\n### Failures\n\n")
		for _, r := range res.Rows {
			if r.Err != "" {
				fmt.Fprintf(w, "- %s: %s\n", r.ID(), oneLine(r.Err))
			}
		}
		if res.InProcErr != "" {
			fmt.Fprintf(w, "- inproc: %s\n", oneLine(res.InProcErr))
		}
		if res.EngineErr != "" {
			fmt.Fprintf(w, "- engine: %s\n", oneLine(res.EngineErr))
		}
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(tail(s, 600)), " ") }

func (res *results) hasRemote() bool {
	for _, r := range res.Rows {
		if r.Kind == kindHTTP && r.Tokens != "" {
			return true
		}
	}
	return false
}

// hasEchoHTTP reports whether an HTTP row of the echo workload ran (the
// main HTTP table's rows).
func (res *results) hasEchoHTTP() bool {
	for _, r := range res.Rows {
		if r.Kind == kindHTTP && r.Tokens == "" && r.Workload == "" {
			return true
		}
	}
	return false
}

func (res *results) hasWorkspace() bool {
	for _, r := range res.Rows {
		if r.Workload != "" {
			return true
		}
	}
	return false
}

func (res *results) hasKind(k string) bool {
	for _, r := range res.Rows {
		if r.Kind == k {
			return true
		}
	}
	return false
}

// gomaxprocs returns the GOMAXPROCS the servers (HTTP rows) or the load
// generator reported, or "?".
func (res *results) gomaxprocs(server bool) string {
	seen := map[int]bool{}
	for _, r := range res.Rows {
		for _, rep := range r.Reports {
			if server && rep.ServerGOMAXPROCS > 0 {
				seen[rep.ServerGOMAXPROCS] = true
			} else if !server {
				seen[rep.LoadGOMAXPROCS] = true
			}
		}
	}
	var vs []string
	for v := range seen {
		vs = append(vs, strconv.Itoa(v))
	}
	slices.Sort(vs)
	if len(vs) == 0 {
		return "?"
	}
	return strings.Join(vs, "/")
}
