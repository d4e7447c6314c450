package bench

import (
	"errors"
	"os/exec"
	"runtime"
	"testing"

	"github.com/agentmcp/agentmcp/bench/internal/servers"
)

// sandboxes are the run_command sandboxes measured side by side: none (the
// floor: fork and exec of /bin/true), Landlock alone (the launcher's two
// stages), bubblewrap with Landlock inside (the default).
var sandboxes = []string{"none", "landlock", "bubblewrap"}

// startTrue prepares one sandboxed /bin/true, as run_command starts it.
func startTrue(tb testing.TB, kind string) (argv []string, run func() error) {
	tb.Helper()
	if runtime.GOOS != "linux" {
		tb.Skip("the sandboxes are Linux's")
	}
	argv, files, closeFn, err := servers.SandboxCommand(kind, []string{"/bin/true"}, tb.TempDir(), tb.TempDir())
	if err != nil {
		tb.Skipf("%s: %v", kind, err)
	}
	tb.Cleanup(closeFn)
	return argv, func() error {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.ExtraFiles = files
		out, err := cmd.CombinedOutput()
		if err != nil {
			return errors.New(err.Error() + ": " + string(out))
		}
		return nil
	}
}

// TestSandboxesRunTrue (smoke mode): each sandbox starts /bin/true and it
// exits 0.
func TestSandboxesRunTrue(t *testing.T) {
	for _, kind := range sandboxes {
		_, run := startTrue(t, kind)
		if err := run(); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
	}
}

// BenchmarkSandboxStart is the start-up cost of one sandboxed /bin/true —
// from the server's fork to its wait returning — under each sandbox, side
// by side in one run (go test -run '^$' -bench SandboxStart): the
// landlock and bubblewrap rows over the none row are what a command pays
// for its sandbox. Each row after the first also prints its ratio to the
// rows before it, measured in the same run (x-none, x-landlock).
func BenchmarkSandboxStart(b *testing.B) {
	measured := map[string]float64{} // ms/start of the rows run so far
	for _, kind := range sandboxes {
		b.Run(kind, func(b *testing.B) {
			_, run := startTrue(b, kind)
			for b.Loop() {
				if err := run(); err != nil {
					b.Fatal(err)
				}
			}
			ms := float64(b.Elapsed().Microseconds()) / float64(b.N) / 1000
			b.ReportMetric(ms, "ms/start")
			for _, before := range sandboxes {
				if before == kind {
					break
				}
				if m := measured[before]; m > 0 {
					b.ReportMetric(ms/m, "x-"+before)
				}
			}
			measured[kind] = ms
		})
	}
}
