package secretenv_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/internal/secretenv"
)

// helperEnv makes this test binary act as a server that keeps its secret
// out of its environment (TestMain).
const helperEnv = "SECRETENV_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		fmt.Printf("pid %d\n", os.Getpid()) // before the re-execution: printed twice, with the same pid
		secretenv.Reexec([]string{"TEST_API_KEY", "TEST_ABSENT"})
		environ, _ := os.ReadFile("/proc/self/environ")
		fmt.Printf("key %q\nenviron holds it %v\nmarker %q\n", secretenv.Getenv("TEST_API_KEY"),
			bytes.Contains(environ, []byte("sk-reexec")), os.Getenv(secretenv.FDVariable))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestReexecMovesSecretsOffTheEnvironment: the process starts again (the
// same pid), its secret no longer in /proc/self/environ nor in what its
// children inherit, and Getenv still returns it.
func TestReexecMovesSecretsOffTheEnvironment(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/environ")
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=1", "TEST_API_KEY=sk-reexec-0123456789")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 5 || lines[0] != lines[1] || !strings.HasPrefix(lines[0], "pid ") {
		t.Fatalf("output %q: want the same pid twice, then the checks", out)
	}
	if want := []string{`key "sk-reexec-0123456789"`, "environ holds it false", `marker ""`}; strings.Join(lines[2:], "\n") != strings.Join(want, "\n") {
		t.Errorf("after the re-execution: %q, want %q", lines[2:], want)
	}
}

// TestReexecWithoutSecrets returns at once: nothing to hide.
func TestReexecWithoutSecrets(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Count(string(out), "pid ") != 1 || !strings.Contains(string(out), `key ""`) {
		t.Errorf("%v: %s", err, out)
	}
}

// TestStrayMarkerIsIgnored: an FDVariable that names no pipe of ours (here
// stdin) is dropped, nothing read from it.
func TestStrayMarkerIsIgnored(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=1", secretenv.FDVariable+"=0")
	cmd.Stdin = strings.NewReader("agentmcp-secrets 1\nTEST_API_KEY=planted\x00")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "planted") || !strings.Contains(string(out), `marker ""`) {
		t.Errorf("%v: %s", err, out)
	}
}

func TestIsSecret(t *testing.T) {
	for _, c := range []struct {
		name, value string
		want        bool
	}{
		{"OPENAI_API_KEY", "sk", true}, {"GITHUB_TOKEN", "x", true}, {"SECRET_KEY_BASE", "x", true},
		{"PGPASSWORD", "x", true}, {"db_passwd", "x", true}, {"AWS_CREDENTIALS", "x", true},
		{"GITHUB_PAT", "x", true}, {"PAT", "x", true}, {"gitlab_pat", "x", true},
		{"DATABASE_URL", "postgres://localhost/db", true},
		{"REDIS_URL", "redis://:hunter22@cache:6379/0", true},
		{"HTTPS_PROXY", "http://user:pw@proxy:3128", true},
		{"HTTPS_PROXY", "http://proxy:3128", false}, {"PATH", "/usr/bin", false},
		{"PATHS", "x", false}, {"SPATIAL", "x", false}, {"HOME", "/root", false},
		{"MAILTO", "user@example.com", false},
	} {
		if got := secretenv.IsSecret(c.name, c.value); got != c.want {
			t.Errorf("IsSecret(%q, %q) = %v, want %v", c.name, c.value, got, c.want)
		}
	}
	if pw, ok := secretenv.URLPassword("postgres://app:s3cr%40t@db:5432/x"); !ok || pw != "s3cr@t" {
		t.Errorf("URLPassword = %q, %v", pw, ok)
	}
}
