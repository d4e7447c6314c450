package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/internal/load"
	"github.com/agentmcp/agentmcp/internal/syncbuf"
)

// TestPrometheusScrapesBothHosts runs the agentmcp binary twice, "serve
// http" and "serve remote" (with a real issuer over TLS), each with
// --metrics-listen, and a real Prometheus (Debian's package) scraping both
// every second, then drives a short load and asks Prometheus' HTTP API for
// the request count and a latency quantile by method (docs/SPEC.md §13):
// the names and labels are the OpenTelemetry conventions' as Prometheus
// spells them, and no label carries a token, a principal or an argument.
func TestPrometheusScrapesBothHosts(t *testing.T) {
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("prometheus not on PATH in CI: scripts/test.sh installs Debian's prometheus package")
		}
		t.Skip("prometheus not on PATH (apt-get install prometheus); CI installs it")
	}
	dir := t.TempDir()
	bin := agentmcpBinary(t)
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}

	iss, err := load.NewIssuer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(iss.Close)
	caFile := filepath.Join(dir, "issuer.pem")
	if err := os.WriteFile(caFile, iss.CertificatePEM(), 0o644); err != nil {
		t.Fatal(err)
	}

	const public = "https://mcp.example.test/team/mcp"
	localMetrics, remoteMetrics := freeAddr(t), freeAddr(t)
	tokenFile := filepath.Join(dir, "token")
	local := start(t, bin, nil, "serve", "http", "--root", root, "--token-file", tokenFile,
		"--metrics-listen", localMetrics, "--log-format", "json")
	remote := start(t, bin, []string{"SSL_CERT_FILE=" + caFile}, "serve", "remote", "--root", root,
		"--public-url", public, "--issuer", iss.URL(), "--scope", "mcp:tools", "--allowed-subject", "alice",
		"--metrics-listen", remoteMetrics)
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	admitted, err := iss.Token(public, "mcp:tools", "alice", time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}

	promAddr := freeAddr(t)
	config := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(config, fmt.Appendf(nil, `global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: loopback
    static_configs: [{targets: ["%s"]}]
  - job_name: remote
    static_configs: [{targets: ["%s"]}]
`, localMetrics, remoteMetrics), 0o644); err != nil {
		t.Fatal(err)
	}
	start(t, promBin, nil, "--config.file="+config, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+promAddr)

	// The load: on each host, tools/list and tools/call (a success, a
	// tool error, an unknown tool), and on the remote host refusals.
	localURL := local.line
	remoteURL := "http://" + remote.line + "/team/mcp"
	send := func(u, host, bearer, body string) int {
		req, _ := http.NewRequest("POST", u, strings.NewReader(body))
		if host != "" {
			req.Host = host
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	bodies := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"notes.txt"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"missing.txt"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"no_such_tool_secret_words","arguments":{}}}`,
	}
	const rounds = 10
	for range rounds {
		for _, b := range bodies {
			if s := send(localURL, "", string(token), b); s != 200 {
				t.Fatalf("loopback: %d for %s", s, b)
			}
			if s := send(remoteURL, "mcp.example.test", admitted, b); s != 200 {
				t.Fatalf("remote: %d for %s", s, b)
			}
		}
	}
	for range 3 {
		if s := send(remoteURL, "mcp.example.test", "", bodies[0]); s != 401 {
			t.Fatalf("remote without a token: %d, want 401", s)
		}
	}
	for _, u := range []string{strings.TrimSuffix(localURL, "/mcp") + "/readyz", "http://" + remote.line + "/readyz"} {
		req, _ := http.NewRequest("GET", u, nil)
		if strings.Contains(u, remote.line) {
			req.Host = "mcp.example.test"
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s = %d, want 200 (ready: the catalog validates, the issuer's keys are fetched)", u, resp.StatusCode)
		}
	}

	api := "http://" + promAddr + "/api/v1/"
	// Prometheus scrapes on its own schedule: poll its API until the
	// counts arrive (a bounded wait on an outside process, not a sleep).
	count := `sum by (job, mcp_method_name) (mcp_server_operation_duration_seconds_count)`
	want := map[string]float64{
		"loopback tools/list": rounds, "loopback tools/call": 3 * rounds,
		"remote tools/list": rounds, "remote tools/call": 3 * rounds,
	}
	var got map[string]float64
	deadline := time.Now().Add(90 * time.Second)
	for tick := time.NewTicker(250 * time.Millisecond); ; <-tick.C {
		got = map[string]float64{}
		for _, s := range query(t, api, count) {
			got[s.Metric["job"]+" "+s.Metric["mcp_method_name"]] = s.value(t)
		}
		if maps.Equal(got, want) || time.Now().After(deadline) {
			tick.Stop()
			break
		}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("request counts by job and method %v, want %v\nloopback stderr:\n%s\nremote stderr:\n%s", got, want, local.stderr(), remote.stderr())
	}

	p90 := query(t, api, `histogram_quantile(0.9, sum by (job, mcp_method_name, le) (mcp_server_operation_duration_seconds_bucket))`)
	if len(p90) != 4 {
		t.Errorf("p90 by job and method: %d series, want 4: %+v", len(p90), p90)
	}
	for _, s := range p90 {
		if v := s.value(t); !(v > 0 && v <= 300) {
			t.Errorf("p90 of %v = %v, want a latency within the buckets", s.Metric, v)
		}
	}

	byTool := map[string]float64{}
	for _, s := range query(t, api, `sum by (job, gen_ai_tool_name, error_type) (mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call"})`) {
		byTool[s.Metric["job"]+" "+s.Metric["gen_ai_tool_name"]+" "+s.Metric["error_type"]] = s.value(t)
	}
	wantTool := map[string]float64{
		"loopback read_file ": rounds, "loopback read_file tool_error": rounds, "loopback _OTHER tool_error": rounds,
		"remote read_file ": rounds, "remote read_file tool_error": rounds, "remote _OTHER tool_error": rounds,
	}
	if !maps.Equal(byTool, wantTool) {
		t.Errorf("tools/call by tool and error.type %v, want %v", byTool, wantTool)
	}

	refused := query(t, api, `agentmcp_refusals_total{job="remote"}`)
	if len(refused) != 1 || refused[0].Metric["reason"] != "missing-token" || refused[0].value(t) != 3 {
		t.Errorf("refusals %+v, want 3 missing-token", refused)
	}

	// Every series of ours: its name and label names are the conventions'
	// (or agentmcp_*), and no label value holds a secret or the client's text.
	allowed := map[string][]string{
		"mcp_server_operation_duration_seconds": {"error_type", "gen_ai_tool_name", "le", "mcp_method_name", "mcp_protocol_version"},
		"agentmcp_requests_in_flight":           nil,
		"agentmcp_connections_open":             {"network_transport"},
		"agentmcp_refusals_total":               {"reason"},
		"agentmcp_rounds_parked":                nil,
		"agentmcp_turns_running":                nil,
		"agentmcp_build_info":                   {"version"},
	}
	seen := map[string]bool{}
	for _, s := range series(t, api, `{__name__=~"(mcp|gen_ai|agentmcp)_.+"}`) {
		name := s["__name__"]
		base := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suffix); ok && strings.HasSuffix(b, "_seconds") {
				base = b
			}
		}
		labels, ok := allowed[base]
		if !ok {
			t.Errorf("series %s: not a name of docs/SPEC.md §13", name)
			continue
		}
		seen[base] = true
		var names []string
		for k, v := range s {
			for _, secret := range []string{string(token), admitted, "alice", "secret_words", "notes.txt"} {
				if strings.Contains(v, secret) {
					t.Errorf("series %s: label %s=%q holds %q", name, k, v, secret)
				}
			}
			if k != "__name__" && k != "job" && k != "instance" {
				names = append(names, k)
			}
		}
		// An empty value is no label in Prometheus: error_type on a
		// success, gen_ai_tool_name on tools/list.
		for _, n := range names {
			if !slices.Contains(labels, n) || n == "le" && name != base+"_bucket" {
				t.Errorf("series %s: label %s, want only %v", name, n, labels)
			}
		}
		if base == "mcp_server_operation_duration_seconds" && s["mcp_method_name"] == "" {
			t.Errorf("series %s without mcp_method_name (required)", name)
		}
	}
	for base := range allowed {
		if !seen[base] {
			t.Errorf("no series %s scraped", base)
		}
	}
}

// proc is a started process whose first stdout line was read.
type proc struct {
	line   string
	errBuf *syncbuf.Buffer
}

func (p *proc) stderr() string { return p.errBuf.String() }

// start runs bin with args (and env added), waits for its first stdout
// line (the URL or address the serve commands print; Prometheus prints
// nothing there, so for it the wait is for its readiness), and stops it
// with SIGINT at cleanup.
func start(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	p := &proc{errBuf: &syncbuf.Buffer{}}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	errDone := make(chan struct{})
	go func() {
		defer close(errDone)
		_, _ = io.Copy(p.errBuf, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		<-errDone
		if t.Failed() {
			t.Logf("%s stderr:\n%s", filepath.Base(bin), p.errBuf)
		}
	})
	if filepath.Base(bin) == "prometheus" {
		go func() { _, _ = io.Copy(io.Discard, stdout) }()
		return p
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("%v: no first line: %v", args, err)
	}
	p.line = strings.TrimSpace(line)
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return p
}

// freeAddr returns 127.0.0.1:<a port free a moment ago>.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// sample is one element of an instant vector from Prometheus' API.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s sample) value(t *testing.T) float64 {
	t.Helper()
	var v float64
	str, _ := s.Value[1].(string)
	if _, err := fmt.Sscan(str, &v); err != nil {
		t.Fatalf("sample value %v: %v", s.Value, err)
	}
	return v
}

// query runs an instant query; a Prometheus not answering yet is no result.
func query(t *testing.T, api, q string) []sample {
	t.Helper()
	var out struct {
		Status string `json:"status"`
		Data   struct {
			Result []sample `json:"result"`
		} `json:"data"`
	}
	if !getJSON(api+"query?query="+url.QueryEscape(q), &out) {
		return nil
	}
	return out.Data.Result
}

// series lists the label sets of the series matching match.
func series(t *testing.T, api, match string) []map[string]string {
	t.Helper()
	var out struct {
		Data []map[string]string `json:"data"`
	}
	if !getJSON(api+"series?match[]="+url.QueryEscape(match), &out) {
		t.Fatal("Prometheus' series API did not answer")
	}
	return out.Data
}

func getJSON(u string, v any) bool {
	resp, err := http.Get(u)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(v) == nil
}
