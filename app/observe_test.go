package app_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/app"
	"github.com/agentmcp/agentmcp/internal/syncbuf"
)

// TestLogFlags: --log-format json writes one JSON object a line,
// --log-level warn leaves the info records out (docs/SPEC.md §13), and the
// token is in neither.
func TestLogFlags(t *testing.T) {
	tokenPath := filepath.Join(t.TempDir(), "token")
	r := serveHTTP(t, "--root", t.TempDir(), "--token-file", tokenPath, "--log-format", "json", "--log-level", "debug")
	if r.url == "" {
		t.Fatalf("no URL; stderr:\n%s", r.stderr)
	}
	tok, _ := os.ReadFile(tokenPath)
	if status, _ := call(t, r.url, string(tok), `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); status != 200 {
		t.Fatalf("tools/list: %d", status)
	}
	if code := r.stop(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr.String()), "\n")
	levels := map[string]int{}
	for _, l := range lines {
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(l), &rec); err != nil || rec.Msg == "" {
			t.Errorf("not a JSON record: %q (%v)", l, err)
		}
		levels[rec.Level]++
		if strings.Contains(l, string(tok)) {
			t.Errorf("the token is logged: %s", l)
		}
	}
	if levels["INFO"] == 0 {
		t.Errorf("no info record at --log-level debug: %v", lines)
	}

	// At warn the start-up's info records (the token file's path among
	// them) are left out; the warning that HTTP approvals reach only
	// 2026-07-28 clients stays.
	r = serveHTTP(t, "--root", t.TempDir(), "--log-level", "warn", "--ask-client")
	if r.url == "" {
		t.Fatalf("no URL; stderr:\n%s", r.stderr)
	}
	r.stop(t)
	if out := r.stderr.String(); strings.Contains(out, "level=INFO") || !strings.Contains(out, "level=WARN msg=\"approvals:") {
		t.Errorf("--log-level warn: stderr\n%s", out)
	}
}

// TestOpsFlagErrors: bad --log-level, --log-format and --metrics-listen
// values are usage errors (exit 2), before anything is served.
func TestOpsFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "stdio", "--log-level", "loud"},
		{"serve", "http", "--log-format", "xml"},
		{"serve", "http", "--metrics-listen", "localhost:9464"},
		{"serve", "http", "--metrics-listen", "127.0.0.1:0"},
		{"serve", "unix", "--socket", "/nonexistent/s", "--metrics-listen", "nowhere"},
		{"serve", "remote", "--public-url", "https://a.example/mcp", "--issuer", "https://i.example", "--scope", "s",
			"--allowed-subject", "x", "--listen", "127.0.0.1:9000", "--metrics-listen", "127.0.0.1:9000"},
	} {
		stderr := &syncbuf.Buffer{}
		if code := app.Main(t.Context(), args, strings.NewReader(""), io.Discard, stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2; stderr:\n%s", args, code, stderr)
		}
	}
}

// TestMetricsListener: --metrics-listen serves /metrics on its own
// listener, with the requests served so far; /mcp is not there.
func TestMetricsListener(t *testing.T) {
	ln := freePort(t)
	tokenPath := filepath.Join(t.TempDir(), "token")
	r := serveHTTP(t, "--root", t.TempDir(), "--token-file", tokenPath, "--metrics-listen", ln)
	if r.url == "" {
		t.Fatalf("no URL; stderr:\n%s", r.stderr)
	}
	tok, _ := os.ReadFile(tokenPath)
	call(t, r.url, string(tok), `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	resp, err := http.Get("http://" + ln + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := `mcp_server_operation_duration_seconds_count{error_type="",gen_ai_tool_name="",mcp_method_name="tools/list",mcp_protocol_version="2025-03-26"} 1`
	if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
		t.Errorf("GET /metrics: %d, want %q in:\n%s", resp.StatusCode, want, body)
	}
	if resp, err := http.Post("http://"+ln+"/mcp", "application/json", strings.NewReader(`{}`)); err != nil || resp.StatusCode != 404 {
		t.Errorf("POST /mcp on the metrics listener: %v %v, want 404", resp.StatusCode, err)
	}
}

// freePort returns 127.0.0.1:<a port free a moment ago>.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

const metricsMaxConns = app.MetricsMaxConns

// TestMetricsListenerCapsConnections: idle connections to the metrics
// listener cannot take the process's descriptors from /mcp: past its cap
// the listener holds no more of them (the kernel's backlog holds the
// rest, idle ones are closed to make room), and a scrape and an MCP call
// are still served (issue 32).
func TestMetricsListenerCapsConnections(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("counts descriptors in /proc/self/fd")
	}
	ln := freePort(t)
	tokenPath := filepath.Join(t.TempDir(), "token")
	r := serveHTTP(t, "--root", t.TempDir(), "--token-file", tokenPath, "--metrics-listen", ln)
	if r.url == "" {
		t.Fatalf("no URL; stderr:\n%s", r.stderr)
	}
	sockets := func() int {
		entries, _ := os.ReadDir("/proc/self/fd")
		n := 0
		for _, e := range entries {
			if target, _ := os.Readlink("/proc/self/fd/" + e.Name()); strings.HasPrefix(target, "socket:") {
				n++
			}
		}
		return n
	}
	before := sockets()
	const idle = 200
	for range idle {
		c, err := net.Dial("tcp", ln)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	resp, err := http.Get("http://" + ln + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET /metrics past 200 idle connections: %d", resp.StatusCode)
	}
	// This process holds the 200 client ends; the server may hold its cap
	// of them (and one waiting for a slot) beside the scrape's.
	if held := sockets() - before - idle; held > metricsMaxConns+4 {
		t.Errorf("the metrics listener holds %d connections; its cap is %d", held, metricsMaxConns)
	}
	tok, _ := os.ReadFile(tokenPath)
	call(t, r.url, string(tok), `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
}
