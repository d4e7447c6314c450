package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentmcp/agentmcp/bench/internal/load"
)

// benchStat is the median over -count runs of one go test benchmark.
type benchStat struct {
	Name                string  `json:"name"` // without the -GOMAXPROCS suffix
	Runs                int     `json:"runs"`
	NsOp, AllocsOp, BOp float64 `json:"-"`
	NsMin, NsMax        float64 `json:"-"`
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(?:\s+([\d.]+) B/op)?(?:\s+([\d.]+) allocs/op)?`)

// parseBench reads go test -bench output and returns each benchmark's
// medians, in order of first appearance.
func parseBench(out string) []benchStat {
	type runs struct{ ns, al, by []float64 }
	byName := map[string]*runs{}
	var order []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		r := byName[m[1]]
		if r == nil {
			r = &runs{}
			byName[m[1]] = r
			order = append(order, m[1])
		}
		f := func(s string) float64 { v, _ := strconv.ParseFloat(s, 64); return v }
		r.ns, r.by, r.al = append(r.ns, f(m[2])), append(r.by, f(m[3])), append(r.al, f(m[4]))
	}
	var stats []benchStat
	for _, name := range order {
		r := byName[name]
		stats = append(stats, benchStat{Name: name, Runs: len(r.ns),
			NsOp: load.Median(r.ns), AllocsOp: load.Median(r.al), BOp: load.Median(r.by),
			NsMin: slices.Min(r.ns), NsMax: slices.Max(r.ns)})
	}
	return stats
}

// goBench runs go test -bench in dir and parses its benchmarks; the full
// output goes to logFile.
func goBench(ctx context.Context, dir, logFile string, count int, benchtime time.Duration, pattern string, pkgs ...string) ([]benchStat, error) {
	args := append([]string{"test", "-run", "^$", "-bench", pattern, "-benchmem",
		"-count", strconv.Itoa(count), "-benchtime", benchtime.String()}, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if werr := os.WriteFile(logFile, out, 0o600); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return nil, fmt.Errorf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, tail(string(out), 2000))
	}
	stats := parseBench(string(out))
	if len(stats) == 0 {
		return nil, fmt.Errorf("go %s (in %s): no benchmark results\n%s", strings.Join(args, " "), dir, tail(string(out), 2000))
	}
	return stats, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
