package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// machine describes where and what a run measured.
type machine struct {
	Date      string  `json:"date"`
	Commit    string  `json:"commit"`
	Dirty     bool    `json:"dirty"`
	Branch    string  `json:"branch"`
	CPU       string  `json:"cpu"`
	NumCPU    int     `json:"numCPU"`
	Online    string  `json:"onlineCPUs"`
	Kernel    string  `json:"kernel"`
	GoVersion string  `json:"go"`
	Platform  string  `json:"platform"`
	GoSDK     string  `json:"goSDK"`
	MCPGo     string  `json:"mcpGo"`
	LoadStart string  `json:"loadavgStart"`
	LoadEnd   string  `json:"loadavgEnd"`
	Seconds   float64 `json:"seconds"`
}

func readMachine(ctx context.Context, benchDir, repoDir string) *machine {
	m := &machine{
		Date:     time.Now().UTC().Format("2006-01-02 15:04 MST"),
		NumCPU:   runtime.NumCPU(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	m.CPU = cpuModel()
	m.Online = strings.TrimSpace(readString("/sys/devices/system/cpu/online"))
	m.Kernel = strings.TrimSpace(readString("/proc/sys/kernel/osrelease"))
	m.LoadStart = loadavg()
	if out, err := exec.CommandContext(ctx, "go", "env", "GOVERSION").Output(); err == nil {
		m.GoVersion = strings.TrimSpace(string(out))
	} else {
		m.GoVersion = runtime.Version()
	}
	if out, err := exec.CommandContext(ctx, "git", "-C", repoDir, "rev-parse", "--short=12", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	} else {
		m.Commit = "unknown (no git)"
	}
	if out, err := exec.CommandContext(ctx, "git", "-C", repoDir, "rev-parse", "--abbrev-ref", "HEAD").Output(); err == nil {
		m.Branch = strings.TrimSpace(string(out))
	}
	if out, err := exec.CommandContext(ctx, "git", "-C", repoDir, "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
		m.Dirty = len(bytes.TrimSpace(out)) > 0
	}
	m.GoSDK = depVersion(benchDir, "github.com/modelcontextprotocol/go-sdk")
	m.MCPGo = depVersion(benchDir, "github.com/mark3labs/mcp-go")
	return m
}

func readString(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "?"
	}
	return string(b)
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "?"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// loadavg is /proc/loadavg's 1, 5 and 15 minute load averages.
func loadavg() string {
	f := strings.Fields(readString("/proc/loadavg"))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// depVersion returns the version bench/go.mod requires of a module.
func depVersion(benchDir, path string) string {
	mod, err := os.ReadFile(benchDir + "/go.mod")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(mod), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == path {
			return f[1]
		}
	}
	return "?"
}

// onlineCPUs counts the CPUs in /sys/devices/system/cpu/online ("0-1,3").
func onlineCPUs(list string) int {
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(list), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return 0
			}
		}
		n += b - a + 1
	}
	return n
}
