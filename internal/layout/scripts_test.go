package layout

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// scripts/test.sh prints one line per step and keeps the rest in a log
// (scripts/lib.sh run_step): checked here on fake steps, since the real
// ones take many minutes.

// TestScriptStepsSummarise: a passing step is one line (and the summary it
// writes to fd 3), its chatter stays in the log; a failing step ends the
// script with its exit code, a FAIL line and the tail of its own output.
func TestScriptStepsSummarise(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	lib, err := filepath.Abs("../../scripts/lib.sh")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "test.log")
	script := `set -euo pipefail
lib_name=fake
source "$1"
passing() { echo "scenario chatter"; echo "checks 45 passed, 22 failed"; echo "2 passed, 1 baselined, 0 unexpected" >&3; }
failing() { echo "first words"; for i in $(seq 1 30); do echo "line $i"; done; return 7; echo "never"; }
steps_begin "$2"
run_step "a passing step" passing
run_step "a failing step" failing
run_step "not reached" passing
`
	cmd := exec.Command(bash, "-c", script, "fake", lib, log)
	cmd.Env = append(os.Environ(), "STEP_TAIL_LINES=3", "TMPDIR="+dir)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Fatalf("exit %v, want 7; output:\n%s", err, out)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	// A step's line: its name, padded; its result; its time; on failure
	// the exit code.
	stepLine := func(name, result, exit string) *regexp.Regexp {
		return regexp.MustCompile(`^` + regexp.QuoteMeta(name) + ` +` + result + ` +[0-9]+s` + regexp.QuoteMeta(exit) + `$`)
	}
	want := []any{
		"full output: " + log,
		stepLine("a passing step", "ok", ""),
		"    2 passed, 1 baselined, 0 unexpected",
		stepLine("a failing step", "FAIL", " (exit 7)"),
		"    the last 3 lines of its output (all of it in " + log + "):",
		"    | line 28",
		"    | line 29",
		"    | line 30",
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i, w := range want {
		switch w := w.(type) {
		case string:
			if lines[i] != w {
				t.Errorf("line %d = %q, want %q", i+1, lines[i], w)
			}
		case *regexp.Regexp:
			if !w.MatchString(lines[i]) {
				t.Errorf("line %d = %q, want it to match %s", i+1, lines[i], w)
			}
		}
	}
	full, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"==> a passing step", "scenario chatter", "checks 45 passed, 22 failed", "first words", "line 1\n"} {
		if !strings.Contains(string(full), w) {
			t.Errorf("the log lacks %q:\n%s", w, full)
		}
	}
	if strings.Contains(string(out), "scenario chatter") || strings.Contains(string(full), "not reached") {
		t.Errorf("chatter printed, or a step ran after the failure:\n%s", out)
	}
}

// TestConformanceSummary: conformance/summary.mjs says per leg "N passed, M
// baselined (each named in conformance/baseline.yml), K unexpected" over
// the scored scenarios, and fails when K > 0.
func TestConformanceSummary(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH (scripts/test.sh puts one there)")
	}
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("req.yaml", "server:\n  - tools-list\n  - logging-set-level\n")
	write("baseline.yml", "server:\n  - logging-set-level:logging-set-level\n")
	write("res/server-tools-list-2026-01-01T00-00-00Z/checks.json", `[{"id":"a","status":"SUCCESS"},{"id":"b","status":"SUCCESS"}]`)
	write("res/server-logging-set-level-2026-01-01T00-00-00Z/checks.json", `[{"id":"logging-set-level","status":"FAILURE"}]`)
	write("res/server-unscored-2026-01-01T00-00-00Z/checks.json", `[{"id":"x","status":"FAILURE"}]`)
	run := func() (string, error) {
		out, err := exec.Command(node, "../../conformance/summary.mjs", "2025-11-25", filepath.Join(dir, "res"),
			filepath.Join(dir, "baseline.yml"), filepath.Join(dir, "req.yaml")).CombinedOutput()
		return string(out), err
	}
	out, err := run()
	first, _, _ := strings.Cut(out, "\n")
	if err != nil || first != "conformance 2025-11-25: 2 passed, 1 baselined (each named in conformance/baseline.yml), 0 unexpected" {
		t.Errorf("summary %q (%v)", out, err)
	}
	write("res/server-tools-list-2026-01-01T00-00-00Z/checks.json", `[{"id":"a","status":"SUCCESS"},{"id":"b","status":"WARNING"}]`)
	out, err = run()
	if err == nil || !strings.Contains(out, "1 passed, 1 baselined (each named in conformance/baseline.yml), 1 unexpected") {
		t.Errorf("with an unexpected warning: %q (%v), want 1 unexpected and a failure", out, err)
	}
}
