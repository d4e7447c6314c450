// Command benchtable runs every row of the agentmcp side-by-side bench in
// one go and prints one table: agentmcp against go-sdk, mcp-go and a bare
// net/http handler (the floor), with the ratios the project's performance
// goals are stated in. From the bench module:
//
//	cd bench && go run ./cmd/benchtable
//
// It builds cmd/benchserver and cmd/benchload, then runs, in this order:
//
//   - Streamable HTTP, separate processes, on both wires (2025-11-25 and
//     2026-07-28): bare, mcp-go, go-sdk, agentmcp's loopback host (with its
//     metrics off, then on), and its
//     remote host with a fresh RS256 access token per request and with one
//     cached token. Each row starts its server pinned to one CPU
//     (taskset -c 0), then benchload pinned to another (taskset -c 1) with 12
//     clients on kept-alive connections: a warm-up, then a measured phase.
//   - the workspace session behind the loopback host (2026-07-28): a
//     plain tools/call of read_file, then tasks/get of a completed task.
//   - stdio, separate processes: bare, mcp-go, go-sdk, agentmcp, pipelined
//     with 64 requests in flight.
//   - memory: 10⁵ requests against the loopback host, its heap in use
//     (after a forced GC) after the warm-up and at the end.
//   - in-process: go test -bench in bench/ (the single-request round trips
//     of bench_test.go), medians over -count runs.
//   - the engine alone: the root module's engine
//     BenchmarkToolsCallStream and BenchmarkToolsCallExchange.
//
// Every answer of every row is checked (id, no error, exact text); a row
// that fails is marked FAILED in the table and the command exits 1.
//
// With -smoke it only starts every server (each transport, each wire, both
// token modes of the remote host) and checks a few answers from each: no
// timing, no pinning. cmd/benchtable's tests run it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/agentmcp/agentmcp/bench/internal/load"
	"github.com/agentmcp/agentmcp/bench/internal/servers"
	"github.com/agentmcp/agentmcp/bench/internal/wire"
)

type config struct {
	warmup, duration    time.Duration
	clients, window     int
	rounds              int
	memWarmup, memCount int64
	count               int
	benchtime           time.Duration
	pin                 bool
	serverCPU, loadCPU  string
	rows                *regexp.Regexp
	extra               bool
	logDir, out         string
	verbose, smoke      bool
}

func main() {
	var c config
	var rows string
	flag.DurationVar(&c.warmup, "warmup", time.Second, "separate-process rows: warm-up before each measured phase")
	flag.DurationVar(&c.duration, "duration", 5*time.Second, "separate-process rows: measured phase")
	flag.IntVar(&c.clients, "c", 12, "HTTP rows: concurrent clients, one kept-alive connection each")
	flag.IntVar(&c.window, "window", 64, "stdio rows: requests in flight")
	flag.IntVar(&c.rounds, "rounds", 1, "separate-process rows: rounds, interleaved; the table shows each row's median")
	flag.Int64Var(&c.memWarmup, "mem-warmup", 10_000, "memory row: warm-up requests")
	flag.Int64Var(&c.memCount, "mem-count", 100_000, "memory row: measured requests")
	flag.IntVar(&c.count, "count", 3, "go test -bench rows: -count")
	flag.DurationVar(&c.benchtime, "benchtime", time.Second, "go test -bench rows: -benchtime")
	flag.BoolVar(&c.pin, "pin", true, "pin the server and the load generator with taskset")
	flag.StringVar(&c.serverCPU, "server-cpu", "0", "taskset CPU list of the servers")
	flag.StringVar(&c.loadCPU, "load-cpu", "1", "taskset CPU list of the load generator")
	flag.StringVar(&rows, "rows", "", "run only the rows whose id matches this regexp (ids: http/<wire>/<server>[/<tokens>|/<workload>], stdio/<server>, mem/<server>, inproc, engine)")
	flag.BoolVar(&c.extra, "extra", false, "also run the HTTP rows of go-sdk-sse and agentmcp-handler (the framing without admission)")
	flag.StringVar(&c.logDir, "logdir", "", "keep the go test logs and the raw reports (results.json) in this directory")
	flag.StringVar(&c.out, "o", "", "also write the table to this file")
	flag.BoolVar(&c.verbose, "v", false, "show the servers' and load generator's stderr")
	flag.BoolVar(&c.smoke, "smoke", false, "only check that every server answers correctly (no timing)")
	flag.Parse()
	if flag.NArg() > 0 {
		fatal(fmt.Errorf("unexpected arguments %q", flag.Args()))
	}
	var err error
	if c.rows, err = regexp.Compile(rows); err != nil {
		fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	benchDir, err := findBenchDir()
	if err != nil {
		fatal(err)
	}
	if c.smoke {
		start := time.Now()
		if err := smoke(ctx, benchDir, "", os.Stderr); err != nil {
			fatal(err)
		}
		fmt.Printf("smoke: every server answered correctly (%.1fs)\n", time.Since(start).Seconds())
		return
	}
	if err := run(ctx, c, benchDir); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "benchtable: %v\n", err)
	os.Exit(1)
}

// findBenchDir finds the bench module's directory: the working directory
// or one of its parents whose go.mod is github.com/agentmcp/agentmcp/bench,
// or bench/ under one.
func findBenchDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		for _, cand := range []string{d, filepath.Join(d, "bench")} {
			if b, err := os.ReadFile(filepath.Join(cand, "go.mod")); err == nil &&
				strings.HasPrefix(string(b), "module github.com/agentmcp/agentmcp/bench\n") {
				return cand, nil
			}
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("run it from the agentmcp repository (no bench/go.mod above %s)", dir)
		}
	}
}

// Row kinds.
const (
	kindHTTP  = "http"
	kindStdio = "stdio"
	kindMem   = "mem"
)

type row struct {
	Kind   string `json:"kind"`
	Wire   string `json:"wire,omitempty"`
	Server string `json:"server"`
	Tokens string `json:"tokens,omitempty"`
	// Workload is the request, when not echo (wire.ReadFile.Name,
	// "tasks-get"): the workspace rows.
	Workload string `json:"workload,omitempty"`
}

func (r row) ID() string {
	switch r.Kind {
	case kindHTTP:
		id := "http/" + r.Wire + "/" + r.Server
		if r.Tokens != "" {
			id += "/" + r.Tokens
		}
		if r.Workload != "" {
			id += "/" + r.Workload
		}
		return id
	default:
		return r.Kind + "/" + r.Server
	}
}

// allRows lists the separate-process rows in the order they run.
func allRows(extra bool) []row {
	var rows []row
	for _, w := range wire.Wires {
		names := []string{servers.Bare, servers.MCPGo, servers.GoSDK, servers.AgentmcpLoopback, servers.AgentmcpLoopbackMetrics}
		if extra {
			names = append(names, servers.GoSDKSSE, servers.AgentmcpHandler)
		}
		for _, s := range names {
			rows = append(rows, row{Kind: kindHTTP, Wire: w, Server: s})
		}
		rows = append(rows,
			row{Kind: kindHTTP, Wire: w, Server: servers.AgentmcpRemote, Tokens: "fresh"},
			row{Kind: kindHTTP, Wire: w, Server: servers.AgentmcpRemote, Tokens: "cached"})
	}
	rows = append(rows, workspaceRows()...)
	for _, s := range []string{servers.Bare, servers.MCPGo, servers.GoSDK, servers.Agentmcp} {
		rows = append(rows, row{Kind: kindStdio, Wire: wire.ProtoLegacy, Server: s})
	}
	return append(rows, row{Kind: kindMem, Wire: wire.ProtoModern, Server: servers.AgentmcpLoopback})
}

// workspaceRows are the rows that set a 2026-07-28 tasks/get of a
// completed task beside a plain tools/call of read_file, both against the
// loopback host serving the workspace session, adjacent so that each round
// runs them back to back.
func workspaceRows() []row {
	var rows []row
	for _, w := range []string{wire.ReadFile.Name, "tasks-get"} {
		rows = append(rows, row{Kind: kindHTTP, Wire: wire.ProtoModern, Server: servers.AgentmcpWorkspace, Workload: w})
	}
	return rows
}

// rowResult is what one row measured over its rounds.
type rowResult struct {
	row
	Reports []*load.Report `json:"reports"`
	Err     string         `json:"error,omitempty"`
}

// results is everything one run measured.
type results struct {
	Machine   *machine     `json:"machine"`
	Config    configOut    `json:"config"`
	Rows      []*rowResult `json:"rows"`
	InProc    []benchStat  `json:"inproc,omitempty"`
	InProcErr string       `json:"inprocError,omitempty"`
	Engine    []benchStat  `json:"engine,omitempty"`
	EngineErr string       `json:"engineError,omitempty"`
}

// configOut is the run's settings, as the table states them.
type configOut struct {
	Warmup, Duration    string
	Clients, Window     int
	Rounds              int
	MemWarmup, MemCount int64
	Count               int
	Benchtime           string
	Pin                 bool
	ServerCPU, LoadCPU  string
}

func run(ctx context.Context, c config, benchDir string) error {
	start := time.Now()
	repoDir := filepath.Dir(benchDir)
	if c.pin {
		if _, err := exec.LookPath("taskset"); err != nil {
			return errors.New("taskset not found (it is in util-linux: apt-get install util-linux), or run with -pin=false")
		}
	}
	tmp, err := os.MkdirTemp("", "benchtable-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	logDir := c.logDir
	if logDir == "" {
		logDir = tmp
	} else if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}

	res := &results{Machine: readMachine(ctx, benchDir, repoDir), Config: configOut{
		Warmup: c.warmup.String(), Duration: c.duration.String(), Clients: c.clients, Window: c.window,
		Rounds: c.rounds, MemWarmup: c.memWarmup, MemCount: c.memCount, Count: c.count,
		Benchtime: c.benchtime.String(), Pin: c.pin, ServerCPU: c.serverCPU, LoadCPU: c.loadCPU,
	}}
	progress := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "[%5.0fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}

	progress("building benchserver and benchload")
	serverBin, loadBin, err := build(ctx, benchDir, tmp)
	if err != nil {
		return err
	}
	r := &runner{serverBin: serverBin, loadBin: loadBin, tmp: tmp, pin: c.pin,
		serverCPU: c.serverCPU, loadCPU: c.loadCPU, verbose: c.verbose, stderr: os.Stderr}

	var rows []*rowResult
	for _, rw := range allRows(c.extra) {
		if c.rows.MatchString(rw.ID()) {
			rows = append(rows, &rowResult{row: rw})
		}
	}
	res.Rows = rows
	p := plan{warmup: c.warmup, duration: c.duration}
	for round := 1; round <= c.rounds; round++ {
		for _, rr := range rows {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if rr.Err != "" {
				continue
			}
			progress("round %d/%d: %s", round, c.rounds, rr.ID())
			var rep *load.Report
			switch rr.Kind {
			case kindHTTP:
				rep, err = r.httpRow(ctx, rr.row, p, c.clients)
			case kindStdio:
				rep, err = r.stdioRow(ctx, rr.row, p, c.window)
			case kindMem:
				if round > 1 {
					continue
				}
				rep, err = r.httpRow(ctx, rr.row, plan{warmupCount: c.memWarmup, count: c.memCount}, c.clients)
			}
			if err == nil {
				err = checkReport(rr.row, rep)
			}
			if err != nil {
				rr.Err = err.Error()
				progress("FAILED %s: %v", rr.ID(), err)
				continue
			}
			rr.Reports = append(rr.Reports, rep)
			progress("  %.0f/s, p50 %.0f µs, p99 %.0f µs", rep.Result.RPS, rep.Result.P50us, rep.Result.P99us)
		}
	}

	if c.rows.MatchString("inproc") {
		progress("in-process: go test -bench . -count %d -benchtime %v (bench/)", c.count, c.benchtime)
		res.InProc, err = goBench(ctx, benchDir, filepath.Join(logDir, "inproc.txt"), c.count, c.benchtime, ".", ".")
		if err != nil {
			res.InProcErr = err.Error()
			progress("FAILED in-process: %v", err)
		}
	}
	if c.rows.MatchString("engine") {
		progress("engine: go test -bench 'BenchmarkToolsCall(Stream|Exchange)' -count %d (engine)", c.count)
		res.Engine, err = goBench(ctx, repoDir, filepath.Join(logDir, "engine.txt"), c.count, c.benchtime,
			"^BenchmarkToolsCall(Stream|Exchange)$", "./engine")
		if err != nil {
			res.EngineErr = err.Error()
			progress("FAILED engine: %v", err)
		}
	}
	res.Machine.LoadEnd = loadavg()
	res.Machine.Seconds = time.Since(start).Seconds()

	var out io.Writer = os.Stdout
	if c.out != "" {
		f, err := os.Create(c.out)
		if err != nil {
			return err
		}
		defer f.Close()
		out = io.MultiWriter(os.Stdout, f)
	}
	render(out, res)
	if c.logDir != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(filepath.Join(c.logDir, "results.json"), b, 0o644); err != nil {
			return err
		}
	}
	if failed := res.failures(); len(failed) > 0 {
		return fmt.Errorf("%d row(s) failed: %s", len(failed), strings.Join(failed, ", "))
	}
	return nil
}

// checkReport checks what the load generator cannot know: that the server
// answered as the server it is said to be (agentmcp with its envelope, the
// others with the bare text), that the run measured something, and that
// no HTTP connection was re-opened.
func checkReport(rw row, rep *load.Report) error {
	want := wire.EchoText
	switch {
	case rw.Workload != "":
		want = wire.FileText
	case strings.HasPrefix(rw.Server, "agentmcp"):
		want = wire.EnvelopeText
	}
	switch {
	case rep.Answer != want:
		return fmt.Errorf("%s answered %q, want %q", rw.Server, rep.Answer, want)
	case rep.Result.Requests == 0:
		return fmt.Errorf("%s: no request measured", rw.Server)
	case rep.Result.Reconnects != 0:
		return fmt.Errorf("%s: %d connections re-opened", rw.Server, rep.Result.Reconnects)
	case rw.Kind == kindMem && (rep.HeapAfterWarmup == nil || rep.HeapEnd == nil):
		return fmt.Errorf("%s: no heap readings", rw.Server)
	}
	return nil
}

func (res *results) failures() []string {
	var f []string
	for _, r := range res.Rows {
		if r.Err != "" {
			f = append(f, r.ID())
		}
	}
	if res.InProcErr != "" {
		f = append(f, "inproc")
	}
	if res.EngineErr != "" {
		f = append(f, "engine")
	}
	return f
}
