package workspace_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
)

// stream is one client of an engine over pipes: what a stdio or socket
// connection is to the engine.
type stream struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan error
}

func openStream(t *testing.T, e *engine.Engine) *stream {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &stream{t: t, in: inW, out: bufio.NewScanner(outR), done: make(chan error, 1)}
	s.out.Buffer(nil, 1<<20)
	go func() {
		s.done <- e.ServeConn(context.Background(), inR, outW, engine.ConnOptions{Close: inR.Close})
		outW.Close()
	}()
	return s
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

// end closes the client's side and waits for the engine to finish the
// stream, draining what it still writes.
func (s *stream) end() {
	s.t.Helper()
	s.in.Close()
	go func() {
		for s.out.Scan() {
		}
	}()
	if err := <-s.done; err != nil {
		s.t.Fatal(err)
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

// TestSubscriptionFlood: one connection asks the workspace for 10,000
// subscriptions. It holds engine.MaxSubscriptions of them (the rest are
// -32602, reaching no file), in one directory watch of the one watcher:
// no descriptor and no goroutine is added for them. Another connection
// still subscribes and gets its update; when the first connection ends,
// all it held is released, and when the second ends the watcher closes,
// its descriptor with it.
func TestSubscriptionFlood(t *testing.T) {
	leakcheck.Check(t)
	files := map[string]string{}
	for i := range 300 {
		files[fmt.Sprintf("f%d", i)] = "x"
	}
	s, root, prefix := resourceSession(t, workspace.FileURIs, files)
	e, err := engine.New(s, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	fdsBefore := openFDs(t)
	c := openStream(t, e)
	subscribe := func(c *stream, id int, name string) map[string]any {
		return c.call(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":%q}}`, id, prefix+name))
	}
	if m := subscribe(c, 0, "f0"); m["result"] == nil {
		t.Fatalf("the first subscription: %v", m)
	}
	fds, goroutines := openFDs(t), runtime.NumGoroutine()
	for i := 1; i < 10000; i++ {
		m := subscribe(c, i, fmt.Sprintf("f%d", i))
		if i < engine.MaxSubscriptions {
			if m["result"] == nil {
				t.Fatalf("subscription %d: %v", i, m)
			}
			continue
		}
		e, _ := m["error"].(map[string]any)
		if e == nil || e["code"] != float64(-32602) || !strings.Contains(fmt.Sprint(e["message"]), "256 resource subscriptions") {
			t.Fatalf("subscription %d: %v, want -32602 naming the bound", i, m)
		}
	}
	if now := openFDs(t); now != fds {
		t.Errorf("open descriptors went from %d to %d for %d subscriptions", fds, now, engine.MaxSubscriptions)
	}
	if grown := runtime.NumGoroutine() - goroutines; grown > 4 {
		t.Errorf("goroutines grew by %d for %d subscriptions", grown, engine.MaxSubscriptions)
	}
	if dirs, open := workspace.Watching(); dirs != 1 || !open {
		t.Fatalf("watching %d directories (open %v), want the one", dirs, open)
	}

	other := openStream(t, e)
	if m := subscribe(other, 1, "f299"); m["result"] == nil {
		t.Fatalf("the other connection's subscription: %v", m)
	}
	if err := os.WriteFile(filepath.Join(root, "f299"), []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	if m := other.next(); m["method"] != "notifications/resources/updated" || m["params"].(map[string]any)["uri"] != prefix+"f299" {
		t.Fatalf("the other connection got %v, want its update", m)
	}

	c.end()
	if dirs, open := workspace.Watching(); dirs != 1 || !open {
		t.Fatalf("after the first connection ended: %d directories (open %v), want the other's one", dirs, open)
	}
	other.end()
	expectIdle(t)
	if now := openFDs(t); now != fdsBefore {
		t.Errorf("open descriptors: %d before, %d after every connection ended", fdsBefore, now)
	}
}
