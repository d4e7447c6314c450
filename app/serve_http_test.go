package app_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/internal/syncbuf"

	"github.com/agentmcp/agentmcp/app"
)

// run is one "agentmcp serve http" in this process.
type run struct {
	cancel context.CancelFunc
	code   chan int
	stdout *syncbuf.Buffer
	stderr *syncbuf.Buffer
	url    string // "" when the command ended before printing it
}

// serveHTTP runs Main with args and waits for the URL line (or the end).
func serveHTTP(t *testing.T, args ...string) *run {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	r := &run{cancel: cancel, code: make(chan int, 1), stdout: &syncbuf.Buffer{}, stderr: &syncbuf.Buffer{}}
	go func() {
		code := app.Main(ctx, append([]string{"serve", "http"}, args...), strings.NewReader(""), pw, r.stderr)
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
			t.Error("serve http did not end")
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
		t.Fatal("serve http did not stop")
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
	m := regexp.MustCompile(`bearer token file: (\S+)`).FindStringSubmatch(r.stderr.String())
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
	} {
		var stderr syncbuf.Buffer
		code := app.Main(context.Background(), append([]string{"serve", "http"}, args...), strings.NewReader(""), io.Discard, &stderr)
		if code != 2 {
			t.Errorf("%v: exit code %d, want 2", args, code)
		}
	}
}
