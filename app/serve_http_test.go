package app_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/internal/syncbuf"

	"github.com/agentmcp/agentmcp/app"
)

// run is one "agentmcp serve <carrier>" in this process.
type run struct {
	cancel context.CancelFunc
	code   chan int
	stdout *syncbuf.Buffer
	stderr *syncbuf.Buffer
	url    string // the first line on stdout (the URL, the socket path); "" when the command ended before printing it
}

// serveHTTP runs Main with args and waits for the URL line (or the end).
func serveHTTP(t *testing.T, args ...string) *run {
	t.Helper()
	return serveCommand(t, "http", args...)
}

// serveCommand runs "agentmcp serve <carrier> args…" and waits for its
// first line on stdout (or the end).
func serveCommand(t *testing.T, carrier string, args ...string) *run {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	r := &run{cancel: cancel, code: make(chan int, 1), stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}}
	go func() {
		code := app.Main(ctx, append([]string{"serve", carrier}, args...), strings.NewReader(""), pw, r.stderr)
		pw.Close()
		r.code <- code
	}()
	line, err := bufio.NewReader(io.TeeReader(pr, r.stdout)).ReadString('\n')
	if err == nil {
		r.url = strings.TrimSuffix(line, "\n")
	}
	go io.Copy(r.stdout, pr)
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.code:
		case <-time.After(10 * time.Second):
			t.Errorf("serve %s did not end", carrier)
		}
	})
	return r
}

// stop cancels the command (SIGINT) and returns its exit code.
func (r *run) stop(t *testing.T) int {
	t.Helper()
	r.cancel()
	select {
	case code := <-r.code:
		r.code <- code
		return code
	case <-time.After(10 * time.Second):
		t.Fatal("the serve command did not stop")
		return -1
	}
}

func call(t *testing.T, url, token, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

var urlLine = regexp.MustCompile(`^http://127\.0\.0\.1:[0-9]+/mcp$`)

func TestServeHTTP(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from the workspace"), 0o644); err != nil {
		t.Fatal(err)
	}
	tokenPath := filepath.Join(t.TempDir(), "token")
	r := serveHTTP(t, "--root", root, "--token-file", tokenPath)
	if !urlLine.MatchString(r.url) {
		t.Fatalf("stdout line %q; stderr:\n%s", r.url, r.stderr)
	}
	fi, err := os.Stat(tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	tok, err := os.ReadFile(tokenPath)
	if err != nil || !regexp.MustCompile(`^[0-9a-f]{64}$`).Match(tok) {
		t.Fatalf("token file holds %q (%v)", tok, err)
	}
	token := string(tok)

	if status, _ := call(t, r.url, "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`); status != 401 {
		t.Errorf("without the token: %d, want 401", status)
	}
	status, b := call(t, r.url, token, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"hello.txt"}}}`)
	if status != 200 || !strings.Contains(string(b), "hello from the workspace") {
		t.Errorf("read_file: %d %s", status, b)
	}
	status, b = call(t, r.url, token, `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if status != 400 { // modern without its headers: -32020
		t.Errorf("modern without headers: %d %s", status, b)
	}
	// docs/http.md's 2026-07-28 curl example: the three headers mirror the body.
	for _, c := range []struct{ method, name, body string }{
		{"server/discover", "", `{"jsonrpc":"2.0","id":4,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`},
		{"tools/call", "read_file", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"hello.txt"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`},
	} {
		req, _ := http.NewRequest("POST", r.url, strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", c.method)
		if c.name != "" {
			req.Header.Set("Mcp-Name", c.name)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"resultType":"complete"`) {
			t.Errorf("modern %s: %d %s", c.method, resp.StatusCode, b)
		}
	}

	if code := r.stop(t); code != 0 {
		t.Errorf("exit code %d; stderr:\n%s", code, r.stderr)
	}
	if _, err := os.Stat(tokenPath); !os.IsNotExist(err) {
		t.Errorf("token file left behind: %v", err)
	}
	if out := r.stdout.String() + r.stderr.String(); strings.Contains(out, token) {
		t.Errorf("token printed:\n%s", out)
	}
	if strings.TrimSpace(r.stdout.String()) != r.url {
		t.Errorf("stdout holds more than the URL: %q", r.stdout.String())
	}
}

// TestServeHTTPDefaultTokenFile: without --token-file the token goes to a
// new file in $XDG_RUNTIME_DIR, named on stderr, removed at exit.
func TestServeHTTPDefaultTokenFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", dir)
	r := serveHTTP(t, "--root", t.TempDir())
	if r.url == "" {
		t.Fatalf("no URL; stderr:\n%s", r.stderr)
	}
	m := regexp.MustCompile(`msg="bearer token file" path=(\S+)`).FindStringSubmatch(r.stderr.String())
	if m == nil || filepath.Dir(m[1]) != dir {
		t.Fatalf("stderr does not name a token file in %s:\n%s", dir, r.stderr)
	}
	tok, err := os.ReadFile(m[1])
	if err != nil || len(tok) != 64 {
		t.Fatalf("token file: %q %v", tok, err)
	}
	if status, _ := call(t, r.url, string(tok), `{"jsonrpc":"2.0","id":1,"method":"ping"}`); status != 200 {
		t.Errorf("ping: %d", status)
	}
	if code := r.stop(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
	if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Errorf("token file left behind: %v", err)
	}
	if strings.Contains(r.stderr.String(), string(tok)) {
		t.Error("token printed on stderr")
	}
}

// TestServeHTTPTokenFileExists: an existing file is never overwritten, and
// nothing is served.
func TestServeHTTPTokenFileExists(t *testing.T) {
	tokenPath := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenPath, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := serveHTTP(t, "--root", t.TempDir(), "--token-file", tokenPath)
	if r.url != "" {
		t.Errorf("served at %s", r.url)
	}
	if code := <-r.code; code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	r.code <- 1
	if b, _ := os.ReadFile(tokenPath); string(b) != "keep me" {
		t.Errorf("existing file now holds %q", b)
	}
}

// TestServeHTTPKeepsReplacedTokenFile: a file put in the token file's place
// while serving is not removed at exit.
func TestServeHTTPKeepsReplacedTokenFile(t *testing.T) {
	tokenPath := filepath.Join(t.TempDir(), "token")
	r := serveHTTP(t, "--root", t.TempDir(), "--token-file", tokenPath)
	if r.url == "" {
		t.Fatalf("no URL; stderr:\n%s", r.stderr)
	}
	if err := os.Remove(tokenPath); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenPath, []byte("someone else's"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := r.stop(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
	if b, err := os.ReadFile(tokenPath); err != nil || string(b) != "someone else's" {
		t.Errorf("replacement file: %q %v", b, err)
	}
}

func TestServeHTTPUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--port", "65536"},
		{"--port", "-1"},
		{"extra"},
		{"--nope"},
		{"--persistent-token"},
		{"--token-file", "t", "--rotate-token"},
		{"--submit-name", "bad name"},
		{"--model", ""},
	} {
		var stderr syncbuf.Buffer
		code := app.Main(context.Background(), append([]string{"serve", "http"}, args...), strings.NewReader(""), io.Discard, &stderr)
		if code != 2 {
			t.Errorf("%v: exit code %d, want 2", args, code)
		}
	}
}

// TestServeHTTPStaleTokenFile: a token file left by a host that no longer
// runs (kill -9, an OOM kill, a reboot without tmpfs: the file holds a
// token and no process holds its lock) is reused, not a start-up failure;
// the log says so.
func TestServeHTTPStaleTokenFile(t *testing.T) {
	tokenPath := filepath.Join(t.TempDir(), "token")
	stale := strings.Repeat("ab", 32)
	if err := os.WriteFile(tokenPath, []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	r := serveHTTP(t, "--root", t.TempDir(), "--token-file", tokenPath)
	if r.url == "" {
		t.Fatalf("not served; stderr:\n%s", r.stderr)
	}
	tok, err := os.ReadFile(tokenPath)
	if err != nil || string(tok) == stale || len(tok) != 64 {
		t.Fatalf("token file holds %q (%v), want a new token", tok, err)
	}
	if status, _ := call(t, r.url, string(tok), `{"jsonrpc":"2.0","id":1,"method":"ping"}`); status != 200 {
		t.Errorf("ping with the new token: %d", status)
	}
	if !strings.Contains(r.stderr.String(), "reusing a stale token file") {
		t.Errorf("the log does not say the stale file was reused:\n%s", r.stderr)
	}
	if code := r.stop(t); code != 0 {
		t.Errorf("exit code %d", code)
	}
	if _, err := os.Stat(tokenPath); !os.IsNotExist(err) {
		t.Errorf("token file left behind: %v", err)
	}
}

// TestServeHTTPTokenFileInUse: a token file a running host holds is not
// taken over: the second start fails (1) saying why, and the first host's
// token still works.
func TestServeHTTPTokenFileInUse(t *testing.T) {
	tokenPath := filepath.Join(t.TempDir(), "token")
	first := serveHTTP(t, "--root", t.TempDir(), "--token-file", tokenPath)
	if first.url == "" {
		t.Fatalf("not served; stderr:\n%s", first.stderr)
	}
	tok, _ := os.ReadFile(tokenPath)
	second := serveHTTP(t, "--root", t.TempDir(), "--token-file", tokenPath)
	if second.url != "" {
		t.Fatalf("the second host served at %s", second.url)
	}
	if code := second.stop(t); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if !strings.Contains(second.stderr.String(), "a running agentmcp serves with this token file") {
		t.Errorf("the refusal does not say the file is in use:\n%s", second.stderr)
	}
	if now, _ := os.ReadFile(tokenPath); string(now) != string(tok) {
		t.Errorf("the running host's token file changed")
	}
	if status, _ := call(t, first.url, string(tok), `{"jsonrpc":"2.0","id":1,"method":"ping"}`); status != 200 {
		t.Errorf("ping on the first host: %d", status)
	}
}

// TestServeHTTPPersistentToken: --persistent-token creates the file (0600)
// on the first start, keeps it at exit and reuses its token at the next
// start, so a client's configuration keeps working; --rotate-token writes a
// new one; a file others can read is refused.
func TestServeHTTPPersistentToken(t *testing.T) {
	tokenPath := filepath.Join(t.TempDir(), "token")
	args := []string{"--root", t.TempDir(), "--token-file", tokenPath, "--persistent-token"}

	r := serveHTTP(t, args...)
	if r.url == "" {
		t.Fatalf("not served; stderr:\n%s", r.stderr)
	}
	tok, err := os.ReadFile(tokenPath)
	if err != nil || !regexp.MustCompile(`^[0-9a-f]{64}$`).Match(tok) {
		t.Fatalf("token file holds %q (%v)", tok, err)
	}
	if fi, _ := os.Stat(tokenPath); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	if code := r.stop(t); code != 0 {
		t.Fatalf("exit code %d", code)
	}

	r = serveHTTP(t, args...)
	if r.url == "" {
		t.Fatalf("restart not served; stderr:\n%s", r.stderr)
	}
	if status, _ := call(t, r.url, string(tok), `{"jsonrpc":"2.0","id":1,"method":"ping"}`); status != 200 {
		t.Errorf("the kept token after a restart: %d", status)
	}
	if strings.Contains(r.stderr.String(), string(tok)) {
		t.Error("the token is logged")
	}
	r.stop(t)

	r = serveHTTP(t, append(args, "--rotate-token")...)
	if r.url == "" {
		t.Fatalf("rotation not served; stderr:\n%s", r.stderr)
	}
	rotated, _ := os.ReadFile(tokenPath)
	if string(rotated) == string(tok) || len(rotated) != 64 {
		t.Errorf("--rotate-token left %q", rotated)
	}
	if status, _ := call(t, r.url, string(tok), `{"jsonrpc":"2.0","id":1,"method":"ping"}`); status != 401 {
		t.Errorf("the old token after rotation: %d, want 401", status)
	}
	if status, _ := call(t, r.url, string(rotated), `{"jsonrpc":"2.0","id":1,"method":"ping"}`); status != 200 {
		t.Errorf("the rotated token: %d", status)
	}
	r.stop(t)

	if err := os.Chmod(tokenPath, 0o644); err != nil {
		t.Fatal(err)
	}
	r = serveHTTP(t, args...)
	if r.url != "" {
		t.Fatalf("served with a token file others can read")
	}
	if code := r.stop(t); code != 1 || !strings.Contains(r.stderr.String(), "chmod 600") {
		t.Errorf("exit %d, want 1 with a chmod hint; stderr:\n%s", code, r.stderr)
	}
}

// TestServeHTTPPersistentTokenShared: two hosts started on one persistent
// token file (two workspaces, or two ports) serve with the same token,
// each holding the file with a shared lock; while either runs, rotating
// it and a per-run start on it are refused, saying why, and the file is
// unchanged; it stays when both have ended (docs/http.md "The token
// file").
func TestServeHTTPPersistentTokenShared(t *testing.T) {
	tokenPath := filepath.Join(t.TempDir(), "token")
	a := serveHTTP(t, "--root", t.TempDir(), "--token-file", tokenPath, "--persistent-token")
	b := serveHTTP(t, "--root", t.TempDir(), "--token-file", tokenPath, "--persistent-token")
	if a.url == "" || b.url == "" || a.url == b.url {
		t.Fatalf("served at %q and %q; stderr:\n%s\n%s", a.url, b.url, a.stderr, b.stderr)
	}
	tok, err := os.ReadFile(tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*run{a, b} {
		if status, _ := call(t, r.url, string(tok), `{"jsonrpc":"2.0","id":1,"method":"ping"}`); status != 200 {
			t.Errorf("ping on %s with the file's token: %d", r.url, status)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--persistent-token", "--rotate-token"}, "a running agentmcp serves with this token file: stop it before rotating the token"},
		{nil, "a running agentmcp serves with this token file"},
	} {
		r := serveHTTP(t, append([]string{"--root", t.TempDir(), "--token-file", tokenPath}, tt.args...)...)
		if r.url != "" {
			t.Errorf("%q: served at %s while other hosts use the file", tt.args, r.url)
		}
		if code := r.stop(t); code != 1 || !strings.Contains(r.stderr.String(), tt.want) {
			t.Errorf("%q: exit %d, stderr:\n%s\nwant 1 and %q", tt.args, code, r.stderr, tt.want)
		}
		if now, _ := os.ReadFile(tokenPath); string(now) != string(tok) {
			t.Errorf("%q: the shared token changed", tt.args)
		}
	}
	a.stop(t)
	if status, _ := call(t, b.url, string(tok), `{"jsonrpc":"2.0","id":1,"method":"ping"}`); status != 200 {
		t.Errorf("ping on the host left: %d", status)
	}
	b.stop(t)
	if now, err := os.ReadFile(tokenPath); err != nil || string(now) != string(tok) {
		t.Errorf("after both ended the file holds %q (%v), want the token kept", now, err)
	}
}

// TestServeHTTPStartLog: the start-up log is structured throughout (the
// token file's path included), names the root as an absolute path, and
// says who can approve writes on this carrier.
func TestServeHTTPStartLog(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Chdir(dir)
	if err := os.Mkdir("ws", 0o755); err != nil {
		t.Fatal(err)
	}
	r := serveHTTP(t, "--root", "ws", "--ask-client")
	if r.url == "" {
		t.Fatalf("not served; stderr:\n%s", r.stderr)
	}
	r.stop(t)
	log := r.stderr.String()
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if !strings.HasPrefix(line, "time=") {
			t.Errorf("a log line that is not a structured record: %q", line)
		}
	}
	if !strings.Contains(log, `msg="bearer token file" path=`) {
		t.Errorf("the token file's path is not logged:\n%s", log)
	}
	if abs := filepath.Join(dir, "ws"); !strings.Contains(log, "root="+abs) {
		t.Errorf("the root is not logged as %s:\n%s", abs, log)
	}
	if !strings.Contains(log, "only 2026-07-28 clients can approve writes on this carrier") {
		t.Errorf("the log does not say which clients can approve:\n%s", log)
	}
}

// TestServeHTTPPortInUse: a port another program holds fails start-up
// (exit 1) with one line that names the port and suggests --port 0
// (issue 33) — that line alone: the start-up records logged before the
// listener failed (no model, approvals, the token file) are not written,
// so the error is the first line a person reads (docs/SPEC.md §15).
func TestServeHTTPPortInUse(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	for _, args := range [][]string{
		{"--token-file", filepath.Join(t.TempDir(), "token")},
		{}, // the token file's path is logged
		{"--model", "m", "--model-url", "http://127.0.0.1:1/v1", "--ephemeral", "--no-model-probe", "--ask-client"},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"serve", "http", "--root", t.TempDir(), "--port", port}, args...)...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != 1 || stdout != "" || len(lines) != 1 || !strings.Contains(lines[0], "level=ERROR") ||
			!strings.Contains(stderr, "port "+port+" on 127.0.0.1 is in use") || !strings.Contains(stderr, "--port 0") {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant 1 and one line naming the port and --port 0", args, code, stdout, stderr)
		}
	}
}

// TestServeFailsWithOneLine: whatever fails at start on a carrier — a
// socket something answers on, a metrics address in use, a listener in
// use on serve remote — the log is the one error, nothing logged before
// it; a start that succeeds logs its start-up records, then the serving
// line last (docs/SPEC.md §15).
func TestServeFailsWithOneLine(t *testing.T) {
	busy, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	sock := filepath.Join(shortTempDir(t), "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	remote := []string{"serve", "remote", "--public-url", "https://mcp.example.com/mcp", "--issuer", "https://id.example.com", "--scope", "mcp", "--allowed-subject", "a"}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "unix", "--socket", sock}, "something answers on the socket path"},
		{[]string{"serve", "http", "--metrics-listen", addr}, "cannot serve metrics"},
		{[]string{"serve", "stdio", "--metrics-listen", addr}, "cannot serve metrics"},
		{append(remote, "--listen", addr), "--listen " + addr + " is in use"},
	} {
		code, stdout, stderr := runCLI(t, append(tt.args, "--root", t.TempDir())...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != 1 || stdout != "" || len(lines) != 1 || !strings.Contains(lines[0], "level=ERROR") || !strings.Contains(lines[0], tt.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant 1 and one error line with %q", tt.args, code, stdout, stderr, tt.want)
		}
	}

	r := serveHTTP(t, "--root", t.TempDir(), "--token-file", filepath.Join(t.TempDir(), "token"))
	if r.url == "" {
		t.Fatalf("not served; stderr:\n%s", r.stderr)
	}
	log := r.stderr.String()
	lines := strings.Split(strings.TrimSuffix(log, "\n"), "\n")
	if len(lines) < 3 || !strings.Contains(lines[0], "no model configured") || !strings.Contains(lines[1], "approvals off") ||
		!strings.Contains(lines[len(lines)-1], `msg="serving MCP over Streamable HTTP"`) {
		t.Errorf("the start-up records, then the serving line, want:\n%s", log)
	}
}

// TestServeHTTPReplicasShareAPersistentToken: several local serve http
// replicas, each at its own address, given one --persistent-token
// --token-file, use the same bearer token: the first start creates it,
// the next ones read it while the first runs (the file is held with a
// shared lock once written), and every replica admits it; rotating it
// while they run is refused, so no replica's token changes under it.
func TestServeHTTPReplicasShareAPersistentToken(t *testing.T) {
	tokenPath := filepath.Join(t.TempDir(), "token")
	args := []string{"--root", t.TempDir(), "--token-file", tokenPath, "--persistent-token"}
	a := serveHTTP(t, args...)
	if a.url == "" {
		t.Fatalf("replica A not served; stderr:\n%s", a.stderr)
	}
	tok, err := os.ReadFile(tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	b := serveHTTP(t, args...)
	if b.url == "" {
		t.Fatalf("replica B, beside A on the same persistent token, not served; stderr:\n%s", b.stderr)
	}
	if a.url == b.url {
		t.Fatalf("both replicas at %s", a.url)
	}
	for _, r := range []*run{a, b} {
		if status, body := call(t, r.url, string(tok), `{"jsonrpc":"2.0","id":1,"method":"ping"}`); status != 200 {
			t.Errorf("the shared token at %s: %d %s", r.url, status, body)
		}
		if status, _ := call(t, r.url, strings.Repeat("0", 64), `{"jsonrpc":"2.0","id":1,"method":"ping"}`); status != 401 {
			t.Errorf("another token at %s: %d, want 401", r.url, status)
		}
	}
	rotate := serveHTTP(t, append(args, "--rotate-token")...)
	if rotate.url != "" {
		t.Fatal("a rotation served while replicas use the token")
	}
	if code := rotate.stop(t); code != 1 || !strings.Contains(rotate.stderr.String(), "stop it before rotating the token") {
		t.Errorf("the rotation: exit %d, want 1 saying why:\n%s", code, rotate.stderr)
	}
	if now, _ := os.ReadFile(tokenPath); string(now) != string(tok) {
		t.Error("the refused rotation changed the token")
	}
	if code := a.stop(t); code != 0 {
		t.Errorf("replica A's exit %d", code)
	}
	if status, _ := call(t, b.url, string(tok), `{"jsonrpc":"2.0","id":2,"method":"ping"}`); status != 200 {
		t.Errorf("replica B once A stopped: %d", status)
	}
}
