package workspace_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/unixsocket"
	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/enginetest"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
)

// stream is one client of an engine's stream: over pipes into
// engine.ServeConn (what the stdio carrier does with stdin and stdout), or
// over a real connection to the Unix-socket carrier.
type stream struct {
	t   *testing.T
	in  io.Writer
	out *bufio.Scanner
	// end closes the client's sending side and returns once the server
	// has finished the stream (its subscriptions released).
	end func()
}

// newEngine is an engine for s, shut down when the test ends.
func newEngine(t *testing.T, s *workspace.Session) *engine.Engine {
	return enginetest.New(t, s, engine.Options{Name: "t", Version: "1"}, 10*time.Second)
}

// openStream serves one stream of e over pipes.
func openStream(t *testing.T, e *engine.Engine) *stream {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- e.ServeConn(context.Background(), inR, outW, engine.ConnOptions{Close: inR.Close})
		outW.Close()
	}()
	s := &stream{t: t, in: inW, out: bufio.NewScanner(outR)}
	s.out.Buffer(nil, 1<<20)
	s.end = func() {
		t.Helper()
		inW.Close()
		go func() {
			for s.out.Scan() {
			}
		}()
		if err := <-done; err != nil && err != engine.ErrInputClosed {
			t.Fatal(err)
		}
	}
	return s
}

// socketServer serves e on a fresh Unix socket until the test ends, and
// returns its path.
func socketServer(t *testing.T, e *engine.Engine) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ws") // short: sun_path holds 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	srv, err := unixsocket.New(e, unixsocket.Options{Path: filepath.Join(dir, "s")})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return srv.Path()
}

// dialStream connects to the socket at path. Its end half-closes the
// connection and reads until the server closes its side, which the
// carrier does once the engine has finished the stream; then it closes
// the client's.
func dialStream(t *testing.T, path string) *stream {
	t.Helper()
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	s := &stream{t: t, in: conn, out: bufio.NewScanner(conn)}
	s.out.Buffer(nil, 1<<20)
	s.end = func() {
		if err := conn.(*net.UnixConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		for s.out.Scan() {
		}
		conn.Close()
	}
	return s
}

// carriers open a stream of e each way the workspace's subscriptions are
// delivered: stdio's (pipes into ServeConn) and a socket connection's.
var carriers = []struct {
	name string
	open func(t *testing.T, e *engine.Engine) func() *stream
}{
	{"stdio", func(t *testing.T, e *engine.Engine) func() *stream {
		return func() *stream { return openStream(t, e) }
	}},
	{"unix", func(t *testing.T, e *engine.Engine) func() *stream {
		path := socketServer(t, e)
		return func() *stream { return dialStream(t, path) }
	}},
}

func (s *stream) call(line string) map[string]any {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
	return s.next()
}

func (s *stream) next() map[string]any {
	s.t.Helper()
	if !s.out.Scan() {
		s.t.Fatalf("the stream ended: %v", s.out.Err())
	}
	var m map[string]any
	if err := json.Unmarshal(s.out.Bytes(), &m); err != nil {
		s.t.Fatalf("not JSON: %s", s.out.Bytes())
	}
	return m
}

// initialize negotiates 2025-11-25 and returns the server's capabilities.
func (s *stream) initialize() map[string]any {
	s.t.Helper()
	m := s.call(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if _, err := io.WriteString(s.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		s.t.Fatal(err)
	}
	caps, _ := m["result"].(map[string]any)["capabilities"].(map[string]any)
	return caps
}

func (s *stream) subscribe(id int, uri string) map[string]any {
	s.t.Helper()
	return s.call(uriRequest(id, "resources/subscribe", uri))
}

func (s *stream) unsubscribe(id int, uri string) map[string]any {
	s.t.Helper()
	return s.call(uriRequest(id, "resources/unsubscribe", uri))
}

// uriRequest is a request of method with params {uri}, the URI encoded as
// JSON (a raw NUL as \u0000).
func uriRequest(id int, method, uri string) string {
	u, _ := json.Marshal(uri)
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"uri":%s}}`, id, method, u)
}

// awaitUpdated reads the stream's next message, which must be the update
// of uri.
func (s *stream) awaitUpdated(uri string) {
	s.t.Helper()
	m := s.next()
	if p, _ := m["params"].(map[string]any); m["method"] != "notifications/resources/updated" || p["uri"] != uri {
		s.t.Fatalf("got %v, want notifications/resources/updated for %s", m, uri)
	}
}

// openFDs counts this process's open descriptors (Linux).
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(ents)
}

// TestSubscriptionsEndWithStream: on stdio and a socket connection, a
// 2025-11-25 client is told resources.subscribe, subscribes to files in
// three directories, gets an update, unsubscribes from some, and then
// ends the stream holding the rest: every watch is released with it — the
// hub's, the kernel's (no inotify instance left, no watch), the
// descriptors and the goroutines (leakcheck).
func TestSubscriptionsEndWithStream(t *testing.T) {
	for _, carrier := range carriers {
		t.Run(carrier.name, func(t *testing.T) {
			leakcheck.Check(t)
			s, root, prefix := resourceSession(t, workspace.FileURIs, map[string]string{
				"a/x": "x", "a/y": "y", "b/z": "z", "top": "t",
			})
			dial := carrier.open(t, newEngine(t, s))
			fds := openFDs(t)
			c := dial()
			caps := c.initialize()
			if r, _ := caps["resources"].(map[string]any); r["subscribe"] != true {
				t.Fatalf("capabilities %v, want resources.subscribe on a stream", caps)
			}
			for i, name := range []string{"a/x", "a/y", "b/z", "top"} {
				if m := c.subscribe(i, prefix+name); m["result"] == nil {
					t.Fatalf("subscribe %s: %v", name, m)
				}
			}
			if dirs, _ := workspace.Watching(); dirs != 3 {
				t.Fatalf("%d directories watched, want 3", dirs)
			}
			if instances, watches := kernelWatches(t); instances != 1 || watches != 3 {
				t.Fatalf("%d inotify instances with %d watches, want 1 with 3", instances, watches)
			}
			if err := os.WriteFile(filepath.Join(root, "b", "z"), []byte("z2"), 0o644); err != nil {
				t.Fatal(err)
			}
			c.awaitUpdated(prefix + "b/z")

			c.unsubscribe(10, prefix+"a/x")
			if _, watches := kernelWatches(t); watches != 3 {
				t.Fatalf("a/ is still subscribed through a/y, yet %d watches are held, want 3", watches)
			}
			c.unsubscribe(11, prefix+"a/y")
			if _, watches := kernelWatches(t); watches != 2 {
				t.Fatalf("after a/'s last unsubscribe: %d watches, want 2", watches)
			}

			c.end() // b/z and top still held
			expectIdle(t)
			if now := openFDs(t); now != fds {
				t.Errorf("open descriptors: %d before the stream, %d after it ended", fds, now)
			}
		})
	}
}

// TestSubscribeRefusedOverStream: over a stream, every spelling of a way
// out of the root, a link out of it, a link in it, a FIFO, a directory, a
// missing file is a -32602 naming the URI, and nothing is watched.
func TestSubscribeRefusedOverStream(t *testing.T) {
	for _, kind := range []workspace.ResourceURIs{workspace.FileURIs, workspace.WorkspaceURIs} {
		s, root, prefix := resourceSession(t, kind, map[string]string{"sub/a.txt": "a"})
		for link, target := range map[string]string{"out": filepath.Join(filepath.Dir(root), "secret"), "alias": "sub/a.txt"} {
			if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
				t.Fatal(err)
			}
		}
		c := openStream(t, newEngine(t, s))
		c.initialize()
		uris := []string{prefix + "out", prefix + "alias"}
		for _, tc := range traversals(prefix, root) {
			uris = append(uris, tc.uri)
		}
		for i, uri := range uris {
			m := c.subscribe(i, uri)
			e, _ := m["error"].(map[string]any)
			data, _ := e["data"].(map[string]any)
			if e == nil || e["code"] != float64(-32602) || data["uri"] != uri || strings.Contains(fmt.Sprint(e), "SECRET") {
				t.Fatalf("subscribe %q: %v, want -32602 with data.uri", uri, m)
			}
		}
		expectIdle(t)
		c.end()
	}
}

// TestSubscriptionFlood: one connection asks for 10,000 subscriptions,
// each to a file in a directory of its own. It holds
// engine.MaxSubscriptions of them (every one past it -32602 naming the
// bound, reaching no file): that many directory watches in the kernel and
// no more, in the one inotify instance, no descriptor and no goroutine
// added per subscription. Without the bound the kernel would hold 10,000
// watches of the user's fs.inotify.max_user_watches, shared with every
// other program of that user. Another connection still subscribes and
// gets its update; when the first connection ends all it held is
// released, and when the second ends the watcher closes, its descriptor
// with it.
func TestSubscriptionFlood(t *testing.T) {
	leakcheck.Check(t)
	const n = 10000
	files := make(map[string]string, n)
	for i := range n {
		files[fmt.Sprintf("d%d/f", i)] = "x"
	}
	s, root, prefix := resourceSession(t, workspace.FileURIs, files)
	e := newEngine(t, s)
	fdsBefore := openFDs(t)
	c := openStream(t, e)
	if m := c.subscribe(0, prefix+"d0/f"); m["result"] == nil {
		t.Fatalf("the first subscription: %v", m)
	}
	fds, goroutines := openFDs(t), runtime.NumGoroutine()
	held := 1
	for i := 1; i < n; i++ {
		m := c.subscribe(i, fmt.Sprintf("%sd%d/f", prefix, i))
		if m["result"] != nil && held < engine.MaxSubscriptions {
			held++
			continue
		}
		e, _ := m["error"].(map[string]any)
		if e == nil || e["code"] != float64(-32602) || !strings.Contains(fmt.Sprint(e["message"]), "256 resource subscriptions") {
			t.Fatalf("subscription %d (%d held): %v, want -32602 naming the bound", i, held, m)
		}
	}
	if held != 256 { // engine.MaxSubscriptions, as docs/SPEC.md §2 names it
		t.Fatalf("the connection holds %d subscriptions, want the bound: 256", held)
	}
	if instances, watches := kernelWatches(t); instances != 1 || watches != held {
		t.Fatalf("%d inotify instances with %d watches for %d subscriptions held, want 1 with %d", instances, watches, held, held)
	}
	if now := openFDs(t); now != fds {
		t.Errorf("open descriptors went from %d to %d for %d subscriptions", fds, now, engine.MaxSubscriptions)
	}
	if grown := runtime.NumGoroutine() - goroutines; grown > 4 {
		t.Errorf("goroutines grew by %d for %d subscriptions", grown, engine.MaxSubscriptions)
	}

	other := openStream(t, e)
	last := fmt.Sprintf("d%d/f", n-1)
	if m := other.subscribe(1, prefix+last); m["result"] == nil {
		t.Fatalf("the other connection's subscription: %v", m)
	}
	if err := os.WriteFile(filepath.Join(root, last), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	other.awaitUpdated(prefix + last)

	c.end()
	if dirs, open := workspace.Watching(); dirs != 1 || !open {
		t.Fatalf("after the first connection ended: %d directories (open %v), want the other's one", dirs, open)
	}
	if _, watches := kernelWatches(t); watches != 1 {
		t.Fatalf("after the first connection ended: %d kernel watches, want the other's one", watches)
	}
	other.end()
	expectIdle(t)
	if now := openFDs(t); now != fdsBefore {
		t.Errorf("open descriptors: %d before, %d after every connection ended", fdsBefore, now)
	}
}
