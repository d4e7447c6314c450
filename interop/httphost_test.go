package interop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// httpHost is "agentmcp serve http" running for one test.
type httpHost struct {
	url    string // the endpoint the binary printed
	token  string // the bearer token from --token-file
	cmd    *exec.Cmd
	stdout *firstLineWriter

	done    chan struct{} // closed when the process has exited
	waitErr error         // cmd.Wait's result, set before done closes

	stopOnce sync.Once
	stopErr  error
}

var (
	loopbackURL = regexp.MustCompile(`^http://127\.0\.0\.1:[0-9]+/mcp$`)
	hexToken    = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// startHTTPHost runs "agentmcp serve http --root <ws> --token-file F" with
// extra flags and waits for the URL line on stdout (the token file is
// written before it, app/serve_http.go). The host is stopped with SIGTERM
// when the test ends; stop does it earlier and checks the exit.
func startHTTPHost(ctx context.Context, t *testing.T, ws workspace, stderr *lockedBuffer, extra ...string) *httpHost {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	args := append([]string{"serve", "http", "--root", ws.root, "--token-file", tokenFile}, extra...)
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.WaitDelay = 10 * time.Second
	h := &httpHost{cmd: cmd, stdout: newFirstLineWriter(), done: make(chan struct{})}
	cmd.Stdout = h.stdout
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		h.waitErr = cmd.Wait()
		close(h.done)
	}()
	t.Cleanup(func() { _ = h.stop() })

	select {
	case line := <-h.stdout.line:
		h.url = strings.TrimSuffix(line, "\n")
	case <-h.done:
		t.Fatalf("agentmcp serve http exited before printing its URL: %v", h.waitErr)
	case <-ctx.Done():
		t.Fatalf("agentmcp serve http printed no URL line: %v", ctx.Err())
	}
	if !loopbackURL.MatchString(h.url) {
		t.Fatalf("agentmcp serve http printed %q, want http://127.0.0.1:<port>/mcp", h.url)
	}
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatalf("reading the token file once the URL is printed: %v", err)
	}
	h.token = strings.TrimSpace(string(token))
	if !hexToken.MatchString(h.token) {
		t.Fatalf("the token file holds %d bytes, not 64 lowercase hex characters", len(token))
	}
	return h
}

// httpClient returns an HTTP client that sends the host's bearer token with
// every request.
func (h *httpHost) httpClient(t *testing.T) *http.Client {
	base := &http.Transport{} // no proxy: the host is on loopback
	t.Cleanup(base.CloseIdleConnections)
	return &http.Client{Transport: bearerTransport{token: h.token, base: base}}
}

// stop sends SIGTERM and waits for the exit, which must be status 0 (SPEC
// §3 Ending; app/serve_http.go); stdout must have held the URL line only.
// Safe to repeat: later calls return the first result.
func (h *httpHost) stop() error {
	h.stopOnce.Do(func() {
		if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			h.stopErr = err
			return
		}
		<-h.done
		if h.waitErr != nil {
			h.stopErr = fmt.Errorf("exit after SIGTERM: %w, want status 0", h.waitErr)
			return
		}
		if out := h.stdout.String(); out != h.url+"\n" {
			h.stopErr = fmt.Errorf("stdout held more than the URL line: %q", out)
		}
	})
	return h.stopErr
}

// bearerTransport adds "Authorization: Bearer <token>" to every request.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(req)
}

// firstLineWriter is a process's stdout: it keeps everything and sends the
// first complete line on line.
type firstLineWriter struct {
	line chan string

	mu   sync.Mutex
	buf  bytes.Buffer
	sent bool
}

func newFirstLineWriter() *firstLineWriter {
	return &firstLineWriter{line: make(chan string, 1)}
}

func (w *firstLineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.sent {
		if i := bytes.IndexByte(w.buf.Bytes(), '\n'); i >= 0 {
			w.line <- string(w.buf.Bytes()[:i+1])
			w.sent = true
		}
	}
	return len(p), nil
}

func (w *firstLineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
