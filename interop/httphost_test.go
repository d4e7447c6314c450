package interop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// httpHost is "agentmcp serve http" running for one test.
type httpHost struct {
	url       string // the endpoint the binary printed
	tokenFile string // the --token-file path
	token     string // the bearer token read from it
	cmd       *exec.Cmd
	stdout    *firstLineWriter

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
	cmd.Env = ws.environ()
	cmd.WaitDelay = 10 * time.Second
	h := &httpHost{tokenFile: tokenFile, cmd: cmd, stdout: newFirstLineWriter(), done: make(chan struct{})}
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

// stop sends SIGTERM and waits for the exit, which must be status 0 (docs/SPEC.md
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

// httpExchange is one HTTP request a client made and what it got back.
type httpExchange struct {
	method    string      // the request's method
	reqHeader http.Header // the request's headers
	status    int         // the response's status (0 when the round trip failed)
	header    http.Header // the response's headers
}

// exchangeRecorder is an http.RoundTripper that records every exchange it
// carries, so a test sees the HTTP framing a real client went through, and,
// when wire is set, the JSON-RPC messages in the request and response
// bodies (recorder_test.go).
type exchangeRecorder struct {
	base http.RoundTripper
	wire *wireRecorder // optional

	mu        sync.Mutex
	exchanges []httpExchange
}

func (r *exchangeRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.wire != nil && req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(body)
		body.Close()
		if err != nil {
			return nil, err
		}
		if msg, err := jsonrpc.DecodeMessage(data); err == nil {
			r.wire.wrote(msg)
		}
	}
	resp, err := r.base.RoundTrip(req)
	ex := httpExchange{method: req.Method, reqHeader: req.Header.Clone()}
	if err == nil {
		ex.status, ex.header = resp.StatusCode, resp.Header.Clone()
		if r.wire != nil {
			resp.Body = recordBody(resp.Body, resp.Header.Get("Content-Type"), r.wire)
		}
	}
	r.mu.Lock()
	r.exchanges = append(r.exchanges, ex)
	r.mu.Unlock()
	return resp, err
}

func (r *exchangeRecorder) recorded() []httpExchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.exchanges)
}

// checkStatelessExchanges checks the HTTP side of a go-sdk session at
// version with the loopback host (docs/SPEC.md §4, Streamable HTTP): no response
// ever carried Mcp-Session-Id, so no request did either; every POST was
// answered 200 (a request) or 202 (a notification, a response), and
// anything else 405 with Allow: POST. A legacy go-sdk session opens its
// standalone SSE stream with a GET once initialized, and takes the 405 as
// "no stream here"; under 2026-07-28 it has no such stream. Every POST
// after the first carries MCP-Protocol-Version: version (the first one too
// under 2026-07-28, where the host compares it with the body's _meta).
func checkStatelessExchanges(t *testing.T, rec *exchangeRecorder, version string) {
	t.Helper()
	modern := version >= modernVersion
	exchanges := rec.recorded()
	var posts, gets int
	for i, ex := range exchanges {
		label := fmt.Sprintf("HTTP exchange %d (%s)", i+1, ex.method)
		if v, ok := ex.header[sessionIDHeader]; ok {
			t.Errorf("%s: the response carries Mcp-Session-Id %q; the host is stateless and must never mint one", label, v)
		}
		if v, ok := ex.reqHeader[sessionIDHeader]; ok {
			t.Errorf("%s: the client sent Mcp-Session-Id %q", label, v)
		}
		if ex.method == http.MethodGet {
			gets++
		}
		switch {
		case ex.status == 0:
			// A round trip cut short, e.g. by closing the session: nothing to check.
		case ex.method == http.MethodPost:
			posts++
			if ex.status != http.StatusOK && ex.status != http.StatusAccepted {
				t.Errorf("%s answered %d, want 200 or 202", label, ex.status)
			}
			if got := ex.reqHeader.Get("Mcp-Protocol-Version"); (posts > 1 || modern) && got != version {
				t.Errorf("%s carried MCP-Protocol-Version %q, want %q", label, got, version)
			}
		default:
			if ex.status != http.StatusMethodNotAllowed || ex.header.Get("Allow") != http.MethodPost {
				t.Errorf("%s answered %d (Allow %q), want 405 with Allow: POST", label, ex.status, ex.header.Get("Allow"))
			}
		}
	}
	if posts == 0 {
		t.Errorf("no POST answered among %d HTTP exchanges", len(exchanges))
	}
	wantGets := 1
	if modern {
		wantGets = 0
	}
	if gets != wantGets {
		t.Errorf("the go-sdk client sent %d GET requests at %s, want %d (its standalone SSE stream)", gets, version, wantGets)
	}
}

// sessionIDHeader is Mcp-Session-Id in canonical form.
var sessionIDHeader = http.CanonicalHeaderKey("Mcp-Session-Id")

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
