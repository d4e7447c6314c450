package streamable_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/streamable"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/hostile"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
	"github.com/agentmcp/agentmcp/ports"
)

// bigSession is the fake session plus a tool "big" {"bytes":n} whose
// result is a string of n bytes: a read_file of a large file. Each call of
// big is reported on done as it returns.
type bigSession struct {
	*fake.Session
	done chan struct{}
}

func newBigSession() bigSession { return bigSession{fake.New(), make(chan struct{}, 64)} }

func (s bigSession) RuntimeTools(ctx context.Context) ([]domain.Tool, error) {
	tools, err := s.Session.RuntimeTools(ctx)
	return append(tools, domain.Tool{Name: "big", Description: "A large result",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"bytes":{"type":"integer"}}}`)}), err
}

func (s bigSession) InvokeTool(ctx context.Context, name string, args json.RawMessage, c ports.Caller) (domain.Envelope, error) {
	if name != "big" {
		return s.Session.InvokeTool(ctx, name, args, c)
	}
	var a struct{ Bytes int }
	_ = json.Unmarshal(args, &a)
	text, _ := json.Marshal(strings.Repeat("x", a.Bytes))
	s.done <- struct{}{}
	return domain.Envelope{Success: true, ToolName: name, Result: text}, nil
}

// connWatch serves h on 127.0.0.1 and reports every connection the server
// closes, by the client's address.
type connWatch struct {
	addr   string
	mu     sync.Mutex
	closed map[string]chan struct{}
}

func watchConns(t *testing.T, h http.Handler) *connWatch {
	t.Helper()
	w := &connWatch{closed: make(map[string]chan struct{})}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			close(w.chanFor(c.RemoteAddr().String()))
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	w.addr = srv.Listener.Addr().String()
	return w
}

func (w *connWatch) chanFor(client string) chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch := w.closed[client]
	if ch == nil {
		ch = make(chan struct{})
		w.closed[client] = ch
	}
	return ch
}

// bigBatch is a 2025-03-26 batch of n calls of big, each answered with
// size bytes.
func bigBatch(n, size int) string {
	var els []string
	for i := range n {
		els = append(els, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"big","arguments":{"bytes":%d}}}`, i+1, size))
	}
	return "[" + strings.Join(els, ",") + "]"
}

// sendRaw writes a POST of body to c (admission is the test server's: none).
func sendRaw(t *testing.T, c net.Conn, host, body string) {
	t.Helper()
	head := fmt.Sprintf("POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: %s\r\nContent-Length: %d\r\n\r\n", host, jsonSSE, len(body))
	if _, err := io.WriteString(c, head+body); err != nil {
		t.Fatal(err)
	}
}

// TestNeverReadingClientIsCutOff: a client with a tiny receive buffer sends a
// batch of 16 calls whose answer is 8 MiB (more than the kernel buffers
// hold) and never reads. Its batch holds half the in-flight slots, so other
// clients are served meanwhile; once the answer's write has made no
// progress for WriteStallTimeout, the connection is closed and its slots
// are free again (docs/SPEC.md §5.2).
func TestNeverReadingClientIsCutOff(t *testing.T) {
	leakcheck.Check(t)
	s := newBigSession()
	started := s.Started()
	h, err := streamable.NewHandler(newEngine(t, s), streamable.Options{WriteStallTimeout: bigStall})
	if err != nil {
		t.Fatal(err)
	}
	w := watchConns(t, h)

	stuck, err := hostile.DialSmall(t.Context(), w.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	sendRaw(t, stuck, w.addr, bigBatch(16, 512<<10))
	for range 16 {
		<-s.done
	}
	// Its 8 slots (MaxInFlight/2) are held while the answer is written; the
	// other 8 are free for other clients.
	if resp := post(t, t.Context(), w.addr, ping); resp.StatusCode != 200 {
		t.Fatalf("another client while the batch's answer is stuck: %d, want 200", resp.StatusCode)
	}
	select {
	case <-w.chanFor(stuck.LocalAddr().String()):
	case <-time.After(guard):
		t.Fatalf("the never-reading client's connection is still open %v after its write stalled", guard)
	}
	// Every slot is free again: with 15 held by slow calls, the last serves
	// a ping.
	slow := make(chan *http.Response, 15)
	for id := range 15 {
		go func() {
			resp, err := do(t.Context(), w.addr, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow"}}`, 100+id))
			if err != nil {
				t.Error(err)
			}
			slow <- resp
		}()
		<-started
	}
	if resp := post(t, t.Context(), w.addr, ping); resp.StatusCode != 200 {
		t.Fatalf("after the cut, with 15 slots held: %d, want 200", resp.StatusCode)
	}
	s.Release()
	for range 15 {
		if resp := <-slow; resp != nil {
			resp.Body.Close()
		}
	}
	http.DefaultClient.CloseIdleConnections()
}

// bigStall is the WriteStallTimeout of the stall tests.
const bigStall = 300 * time.Millisecond

// serveBig serves s through the hosts' Server (whose connections are
// netcap.Listener's) on 127.0.0.1, with WriteStallTimeout bigStall and at
// most conns connections, until the test ends. It returns the address and
// a connection to it with a tiny receive buffer (hostile.DialSmall),
// closed when the test ends.
func serveBig(t *testing.T, s bigSession, conns int) (string, net.Conn) {
	t.Helper()
	eng := newEngine(t, s)
	h, err := streamable.NewHandler(eng, streamable.Options{WriteStallTimeout: bigStall})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := streamable.NewServer(streamable.ServerOptions{
		Engine: eng, Conns: streamable.ConnLimits{Total: conns},
		Listen: func() (net.Listener, error) { return net.Listen("tcp4", "127.0.0.1:0") },
		Admit:  func(netip.AddrPort) http.Handler { return h },
	})
	if err != nil {
		t.Fatal(err)
	}
	err = srv.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	bound := srv.Addr()
	t.Cleanup(func() {
		if err := srv.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	c, err := hostile.DialSmall(t.Context(), bound.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() }) // before Stop: cleanups run last first
	return bound.String(), c
}

// TestNeverReadingClientIsCutOffByServer: the same through the hosts'
// Server, whose connections arm their write deadline lazily, on a
// connection that has first had an answer (its deadline asked for, then
// cleared by net/http) and a 202 (written by net/http with none): the
// answer it then never reads is still cut off once its write has made no
// progress for WriteStallTimeout (and up to a sixteenth more), which frees
// the Server's only connection slot for another client.
func TestNeverReadingClientIsCutOffByServer(t *testing.T) {
	leakcheck.Check(t)
	s := newBigSession()
	addr, c := serveBig(t, s, 1)
	br := bufio.NewReader(c)
	for _, ex := range []struct {
		body   string
		status int
	}{{ping, http.StatusOK}, {`{"jsonrpc":"2.0","method":"notifications/initialized"}`, http.StatusAccepted}} {
		sendRaw(t, c, addr, ex.body)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != ex.status {
			t.Fatalf("%s: %d, want %d", ex.body, resp.StatusCode, ex.status)
		}
	}
	sendRaw(t, c, addr, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{"bytes":8388608}}}`)
	<-s.done
	// The only slot is the stuck connection's until it is cut: another
	// client's connection waits in Accept until then.
	ctx, cancel := context.WithTimeout(t.Context(), guard)
	defer cancel()
	resp, err := do(ctx, addr, ping)
	if err != nil {
		t.Fatalf("another client, while the stuck connection should have been cut: %v", err)
	}
	resp.Body.Close()
	http.DefaultClient.CloseIdleConnections()
}

// TestSlowSteadyReaderIsNotCutOff: through the hosts' Server, a client
// reading a 5 MiB answer through a tiny receive buffer at 16 KiB every 10
// ms takes ten times WriteStallTimeout in all, but keeps draining it: it
// gets the whole answer (docs/SPEC.md §5.2: a stalled reader, not a slow
// one). The connection's send buffer is bounded (ServerOptions.SendBuffer),
// so a blocked write resumes after a bounded amount has drained, not after
// a third of an autotuned 4 MiB kernel buffer.
func TestSlowSteadyReaderIsNotCutOff(t *testing.T) {
	leakcheck.Check(t)
	s := newBigSession()
	addr, c := serveBig(t, s, 4)
	const size = 5 << 20
	sendRaw(t, c, addr, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big","arguments":{"bytes":%d}}}`, size))
	<-s.done
	begin := time.Now()
	pace := time.NewTicker(10 * time.Millisecond)
	defer pace.Stop()
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(&pacedReader{r: c, tick: pace.C, per: 16 << 10}), nil)
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	took := time.Since(begin)
	if err != nil || n != resp.ContentLength || n < size {
		t.Fatalf("got %d of %d body bytes in %v (%v): the slow reader was cut off", n, resp.ContentLength, took, err)
	}
	t.Logf("%d bytes in %v", n, took)
}

// pacedReader lets per bytes through r per tick.
type pacedReader struct {
	r      io.Reader
	tick   <-chan time.Time
	per    int
	budget int
}

func (p *pacedReader) Read(b []byte) (int, error) {
	if p.budget == 0 {
		<-p.tick
		p.budget = p.per
	}
	n, err := p.r.Read(b[:min(len(b), p.budget)])
	p.budget -= n
	return n, err
}

// TestBatchBusyWhenItsSlotsAreNotFree: a batch takes its first slot before
// its body is read and the rest once the engine knows its size; when they
// are not free it gets 503, empty, and none of its elements runs
// (docs/SPEC.md §4, §5.2).
func TestBatchBusyWhenItsSlotsAreNotFree(t *testing.T) {
	leakcheck.Check(t)
	s, addr := serve(t, streamable.Options{MaxInFlight: 4})
	started := s.Started()
	slow := make(chan *http.Response, 3)
	for id := range 3 {
		go func() {
			resp, err := do(t.Context(), addr, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow"}}`, id))
			if err != nil {
				t.Error(err)
			}
			slow <- resp
		}()
		<-started
	}
	echo := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`, id)
	}
	batch := "[" + echo(10) + "," + echo(11) + "]"
	resp := post(t, t.Context(), addr, batch)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || len(b) != 0 {
		t.Fatalf("a batch of 2 with 1 slot free: %d %q, want 503, empty", resp.StatusCode, b)
	}
	if n := len(s.Calls()); n != 3 {
		t.Errorf("%d calls, want 3: an element of the refused batch ran", n)
	}
	// A batch the engine refuses whole takes no more slots: with one slot
	// free it still gets the engine's 400, not 503.
	for _, tc := range []struct {
		name, body string
		headers    []string
		message    string
	}{
		{"not JSON", "[" + echo(12) + ",", nil, "Parse error"},
		{"empty", "[]", nil, "Invalid Request: empty batch"},
		{"too large", "[" + strings.Repeat(echo(13)+",", 16) + echo(14) + "]", nil, "Invalid Request: batch too large"},
		{"in 2025-06-18", batch, []string{"MCP-Protocol-Version", "2025-06-18"}, "Invalid Request: batches are only part of protocol revision 2025-03-26"},
	} {
		resp := post(t, t.Context(), addr, tc.body, tc.headers...)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 400 {
			t.Errorf("%s batch with 1 slot free: %d %q, want 400", tc.name, resp.StatusCode, b)
		} else if r := decode(t, b); r.Error == nil || !strings.HasPrefix(r.Error.Message, tc.message) {
			t.Errorf("%s batch with 1 slot free: %d %s, want 400 %q", tc.name, resp.StatusCode, b, tc.message)
		}
	}
	s.Release()
	for range 3 {
		if r := <-slow; r != nil {
			r.Body.Close()
		}
	}
	resp = post(t, t.Context(), addr, batch)
	b, _ = io.ReadAll(resp.Body)
	var arr []rpcReply
	if resp.StatusCode != 200 || json.Unmarshal(b, &arr) != nil || len(arr) != 2 {
		t.Fatalf("the batch with its slots free: %d %s", resp.StatusCode, b)
	}
	http.DefaultClient.CloseIdleConnections()
}
