package browser

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/agentmcp/agentmcp/conformance/proxy"
	"github.com/agentmcp/agentmcp/internal/syncbuf"
)

// patience bounds every wait for something a person would see; it never
// paces the test.
const patience = 60 * time.Second

// startServer runs agentmcp serve http --ask-client over root with the
// agent on the scripted model at modelURL, and returns its endpoint and
// token; it is stopped when the test ends.
func startServer(t *testing.T, root, modelURL string) (endpoint, token string) {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	cmd := exec.Command(binPath, "serve", "http", "--root", root, "--token-file", tokenFile, "--ask-client",
		"--model", "scripted", "--model-url", modelURL, "--ephemeral", "--no-model-probe")
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Error("agentmcp serve http did not end after SIGTERM")
		}
		if t.Failed() {
			t.Logf("agentmcp's stderr:\n%s", stderr)
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		for sc.Scan() {
		}
	}()
	select {
	case endpoint = <-line:
	case err := <-done:
		t.Fatalf("agentmcp serve http exited: %v\n%s", err, stderr)
	case <-time.After(patience):
		t.Fatalf("agentmcp serve http printed no URL\n%s", stderr)
	}
	b, err := os.ReadFile(tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	return endpoint, strings.TrimSpace(string(b))
}

// frontend serves the host page and its files, extra paths with their
// bodies, and /mcp through the conformance proxy (it adds the token and
// maps its Host and Origin to the host's), all on one 127.0.0.1 origin,
// as a web host serves its page and reaches its server. It returns the
// origin and the log of every path the browser asked for.
func frontend(t *testing.T, endpoint, token string, extra map[string][]byte) (string, *pathLog) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	if endpoint != "" {
		p, err := proxy.New(proxy.Options{Front: ln.Addr().String(), Backend: endpoint, Token: token})
		if err != nil {
			t.Fatal(err)
		}
		mux.Handle("/mcp", p)
	}
	files := http.FileServer(http.Dir(hostDir))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if b, ok := extra[r.URL.Path]; ok {
			w.Header().Set("Content-Type", http.DetectContentType(b))
			if strings.HasSuffix(r.URL.Path, ".json") {
				w.Header().Set("Content-Type", "application/json")
			}
			w.Write(b)
			return
		}
		files.ServeHTTP(w, r)
	})
	log := &pathLog{}
	srv := &http.Server{Handler: log.wrap(mux), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), log
}

// pathLog keeps the paths a server was asked for.
type pathLog struct {
	mu    sync.Mutex
	paths []string
}

func (l *pathLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.paths = append(l.paths, r.URL.Path)
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (l *pathLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.paths...)
}

// tab is one headless chromium tab, with the URL of every request the
// page and its frames sent.
type tab struct {
	t   *testing.T
	ctx context.Context

	mu   sync.Mutex
	reqs []string
}

// newTab starts chromium headless (as root it needs --no-sandbox) with a
// user data directory of its own, and opens a tab. Sandboxed iframes stay
// in the page's process (IsolateSandboxedIframes and site isolation off),
// so the tab's DevTools session reaches the view's frame: the test's own
// reach, not the view's, which the iframe's sandbox and CSP still bound.
func newTab(t *testing.T) *tab {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.DisableGPU,
		chromedp.Flag("disable-features", "Translate,IsolateSandboxedIframes,SitePerProcess,IsolateOrigins"),
		chromedp.Flag("disable-site-isolation-trials", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(800, 900),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	tb := &tab{t: t, ctx: ctx}
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			tb.mu.Lock()
			tb.reqs = append(tb.reqs, e.Request.URL)
			tb.mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	return tb
}

func (tb *tab) requests() []string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return append([]string(nil), tb.reqs...)
}

func (tb *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, patience)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
}

// host evaluates expr in the host page and decodes its value into T.
func host[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, patience)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("host page: %s: %v", expr, err)
	}
	return v
}

// viewFrame is the view's frame, the host page's one iframe.
func (tb *tab) viewFrame(ctx context.Context) (cdp.FrameID, error) {
	res, err := chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
	if err != nil {
		return "", err
	}
	if res.FrameTree == nil || len(res.FrameTree.ChildFrames) != 1 {
		return "", errors.New("the host page has no view frame yet")
	}
	return res.FrameTree.ChildFrames[0].Frame.ID, nil
}

// inView evaluates expr in the view's document, in a world of the test's
// own (it shares the document, not the view's script), and returns its
// JSON value.
func (tb *tab) inView(ctx context.Context, expr string) (json.RawMessage, error) {
	id, err := tb.viewFrame(ctx)
	if err != nil {
		return nil, err
	}
	w, err := chromedp.Call(ctx, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{FrameID: id, WorldName: "browser-test"})
	if err != nil {
		return nil, err
	}
	yes := true
	res, err := chromedp.Call(ctx, runtime.Evaluate, runtime.EvaluateParams{Expression: expr, ContextID: w.ExecutionContextID,
		ReturnByValue: &yes, AwaitPromise: &yes})
	switch {
	case err != nil:
		return nil, err
	case res.ExceptionDetails != nil:
		return nil, fmt.Errorf("%s: %s", res.ExceptionDetails.Text, exceptionText(res.ExceptionDetails))
	case res.Result == nil:
		return nil, errors.New("no result")
	}
	return json.RawMessage(res.Result.Value), nil
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d.Exception != nil && d.Exception.Description != "" {
		return d.Exception.Description
	}
	return ""
}

// view evaluates expr in the view's document and decodes it into T.
func view[T any](tb *tab, expr string) T {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, patience)
	defer cancel()
	raw, err := tb.inView(ctx, expr)
	if err != nil {
		tb.t.Fatalf("view: %s: %v", expr, err)
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		tb.t.Fatalf("view: %s = %s: %v", expr, raw, err)
	}
	return v
}

// waitView waits until cond, a JavaScript expression over the view's
// document, is true: what a person would see appears, however long the
// browser and the server take (within patience).
func (tb *tab) waitView(what, cond string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, patience)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		raw, err := tb.inView(ctx, "!!("+cond+")")
		if err == nil && string(raw) == "true" {
			return
		}
		last = err
		select {
		case <-ctx.Done():
			dctx, dcancel := context.WithTimeout(tb.ctx, patience)
			text, err := tb.inView(dctx, `document.querySelector("main").innerText.slice(0, 3000)`)
			dcancel()
			errs := host[[]string](tb, "window.host ? window.host.errors : ['no host']")
			tb.t.Fatalf("the view never showed %s (%s; last error %v); it shows (%v):\n%s\nthe host's errors: %v", what, cond, last, err, text, errs)
		case <-tick.C:
		}
	}
}

// waitHost waits until cond, a JavaScript expression over the host page,
// is true.
func (tb *tab) waitHost(what, cond string) {
	tb.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, patience)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool]("!!("+cond+")", chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		errs := host[[]string](tb, "window.host ? window.host.errors : ['no host']")
		tb.t.Fatalf("the host page never got %s (%s): %v; its errors: %v", what, cond, err, errs)
	}
}
