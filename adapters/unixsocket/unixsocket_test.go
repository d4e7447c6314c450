package unixsocket_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/unixsocket"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/enginetest"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
	"github.com/agentmcp/agentmcp/ports"
	"github.com/agentmcp/agentmcp/transcript"
)

const guard = 10 * time.Second

// socketPath is a fresh socket path: short, because sun_path holds 108
// bytes.
func socketPath(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "us")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "mcp.sock")
}

// serve starts a server for s on a fresh path; it and the engine stop at
// cleanup.
func serve(t testing.TB, s ports.Session, opts unixsocket.Options) (*unixsocket.Server, string) {
	t.Helper()
	if opts.Path == "" {
		opts.Path = socketPath(t)
	}
	eng := enginetest.New(t, s, engine.Options{Name: "t", Version: "1"}, guard) // shut down after the Stop below
	srv, err := unixsocket.New(eng, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		if err := srv.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return srv, opts.Path
}

type client struct {
	c  net.Conn
	sc *bufio.Scanner
}

func dial(t testing.TB, path string) *client {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(guard))
	return &client{c: c, sc: bufio.NewScanner(c)}
}

func (c *client) call(t testing.TB, line string) map[string]any {
	t.Helper()
	if _, err := io.WriteString(c.c, line+"\n"); err != nil {
		t.Fatal(err)
	}
	if !c.sc.Scan() {
		t.Fatalf("no answer to %s: %v", line, c.sc.Err())
	}
	var m map[string]any
	if err := json.Unmarshal(c.sc.Bytes(), &m); err != nil {
		t.Fatalf("answer %q: %v", c.sc.Text(), err)
	}
	return m
}

const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`

func TestServesEachConnectionAsAStream(t *testing.T) {
	_, path := serve(t, fake.New(), unixsocket.Options{})
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket file mode %v, want a socket with 0600", fi.Mode())
	}
	a, b := dial(t, path), dial(t, path)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	if m := a.call(t, init); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	// Each connection negotiates for itself: b is still uninitialized, so a
	// second initialize is its first.
	if m := b.call(t, init); m["result"] == nil {
		t.Errorf("initialize on another connection: %v", m)
	}
	if m := a.call(t, init); m["error"] == nil {
		t.Errorf("a second initialize on one connection: %v, want -32600", m)
	}
	m := a.call(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	if r, _ := m["result"].(map[string]any); r == nil || r["isError"] != false {
		t.Errorf("tools/call: %v", m)
	}
}

func TestStartRefusesWhatIsThere(t *testing.T) {
	eng, err := engine.New(fake.New(), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Shutdown(context.Background())
	if _, err := unixsocket.New(eng, unixsocket.Options{}); err == nil {
		t.Error("New without a path succeeded")
	}
	// A regular file is never removed.
	file := socketPath(t)
	if err := os.WriteFile(file, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, _ := unixsocket.New(eng, unixsocket.Options{Path: file})
	if err := srv.Start(t.Context()); !errors.Is(err, unixsocket.ErrNotSocket) {
		t.Errorf("Start over a regular file: %v, want ErrNotSocket", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Error("the regular file was touched")
	}
	// A live socket is in use.
	_, live := serve(t, fake.New(), unixsocket.Options{})
	srv, _ = unixsocket.New(eng, unixsocket.Options{Path: live})
	if err := srv.Start(t.Context()); !errors.Is(err, unixsocket.ErrInUse) {
		t.Errorf("Start over a live socket: %v, want ErrInUse", err)
	}
	dial(t, live).call(t, ping) // and the live one still serves
	// A stale socket (nothing answers) is replaced.
	stale := socketPath(t)
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	_, path := serve(t, fake.New(), unixsocket.Options{Path: stale})
	if m := dial(t, path).call(t, ping); m["result"] == nil {
		t.Errorf("over a stale socket: %v", m)
	}
}

func TestConnectionBound(t *testing.T) {
	_, path := serve(t, fake.New(), unixsocket.Options{MaxConns: 2})
	a, b := dial(t, path), dial(t, path)
	a.call(t, ping)
	b.call(t, ping)
	c := dial(t, path)
	if _, err := io.WriteString(c.c, ping+"\n"); err == nil && c.sc.Scan() {
		t.Errorf("a third connection was served: %s", c.sc.Text())
	}
	a.c.Close()
	// The freed place serves a new connection; the server closes a's side
	// after its stream ends, so retry until it has.
	deadline := time.Now().Add(guard)
	for {
		d := dial(t, path)
		_, _ = io.WriteString(d.c, ping+"\n")
		if d.sc.Scan() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the freed place was never given to a new connection")
		}
	}
}

// TestStopAnswersShuttingDown: Stop cancels a call in flight, which still
// answers the shutting-down tool error; the socket file is gone after.
func TestStopAnswersShuttingDown(t *testing.T) {
	s := fake.New()
	started := s.Started()
	srv, path := serve(t, s, unixsocket.Options{})
	c := dial(t, path)
	if _, err := io.WriteString(c.c, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow"}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := srv.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !c.sc.Scan() || !strings.Contains(c.sc.Text(), "server is shutting down") {
		t.Errorf("answer at Stop: %q", c.sc.Text())
	}
	if err := srv.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket file after Stop: %v", err)
	}
	if err := srv.Start(t.Context()); !errors.Is(err, engine.ErrStopped) {
		t.Errorf("Start after Stop: %v, want ErrStopped", err)
	}
}

// TestOtherUsersAreRefused: a process of another user reaching the socket
// (the file's mode is widened here, as a too-wide umask or a shared
// directory could) is closed at once, before any frame is read: SO_PEERCRED
// is the check, not the mode. Needs root to run the client as another user.
func TestOtherUsersAreRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to connect as another user")
	}
	if _, err := exec.LookPath("socat"); err != nil {
		t.Skip("needs socat")
	}
	_, path := serve(t, fake.New(), unixsocket.Options{})
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("socat", "-t5", "-", "UNIX-CONNECT:"+path)
	cmd.Stdin = strings.NewReader(ping + "\n")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), `"result"`) {
		t.Errorf("another user was served: %s (%v)", out, err)
	}
	// The same client as this user is served.
	cmd = exec.Command("socat", "-t5", "-", "UNIX-CONNECT:"+path)
	cmd.Stdin = strings.NewReader(ping + "\n")
	out, err = cmd.CombinedOutput()
	if !strings.Contains(string(out), `"result":{}`) {
		t.Errorf("this user through socat: %s (%v)", out, err)
	}
}

const transcriptDir = "../../testdata/transcripts"

// TestTranscriptsUnix replays every stream transcript over a real Unix
// socket: one connection per transcript, its end of input a half-close.
// Each engine ends with its call index empty, and no goroutine is left once
// every transcript has ended.
func TestTranscriptsUnix(t *testing.T) {
	leakcheck.Check(t)
	transcript.Run(t, unixCarrier{}, transcriptDir+"/*.txt", transcript.Options{Timeout: 30 * time.Second})
}

type unixCarrier struct{}

func (unixCarrier) Name() string { return "unix" }

func (unixCarrier) Connect(t testing.TB, s ports.Session, cfg transcript.Config) (transcript.Conn, error) {
	eng, err := engine.New(s, engine.Options{Name: "agentmcp-test", Version: "1.2.3", AskClient: cfg.AskClient})
	if err != nil {
		return nil, err
	}
	srv, err := unixsocket.New(eng, unixsocket.Options{Path: socketPath(t)})
	if err != nil {
		return nil, err
	}
	if err := srv.Start(context.Background()); err != nil {
		return nil, err
	}
	conn, err := net.Dial("unix", srv.Path())
	if err != nil {
		return nil, err
	}
	stop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		defer conn.Close()
		return errors.Join(srv.Stop(ctx), enginetest.Shutdown(ctx, eng))
	}
	out := &eofReader{r: conn, eof: make(chan struct{})}
	return &transcript.StreamConn{
		In:  halfClose{conn.(*net.UnixConn)},
		Out: out,
		// The server ends this connection's stream at the end of input
		// (after its drain) and closes it: the client reads EOF.
		End:  func() error { <-out.eof; return stop() },
		Stop: func() { conn.Close(); _ = stop() },
	}, nil
}

// halfClose ends the client's output without closing its input.
type halfClose struct{ *net.UnixConn }

func (h halfClose) Close() error { return h.CloseWrite() }

// eofReader reports when the server's output has ended.
type eofReader struct {
	r   io.Reader
	eof chan struct{}
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		select {
		case <-e.eof:
		default:
			close(e.eof)
		}
	}
	return n, err
}

// TestStopRemovesOnlyItsOwnSocket: server A's socket file is removed by
// someone else (a temp cleaner, a person) and server B starts on the same
// path; stopping A leaves B's socket in place and B still serves (issue 25,
// item 8). Stop removes a socket file only when it is the one Start made.
func TestStopRemovesOnlyItsOwnSocket(t *testing.T) {
	a, path := serve(t, fake.New(), unixsocket.Options{})
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	serve(t, fake.New(), unixsocket.Options{Path: path}) // B
	if err := a.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("B's socket file after A's Stop: %v", err)
	}
	if m := dial(t, path).call(t, ping); m["result"] == nil {
		t.Errorf("B after A's Stop: %v", m)
	}
}
