package load

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/bench/internal/wire"
)

// TestMain doubles as the stdio helper server of the stdio tests:
// "<test binary> stdio-helper <mode>".
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "stdio-helper" {
		os.Exit(stdioHelper(os.Args[2]))
	}
	os.Exit(m.Run())
}

// answer is a correct answer to the request with raw id.
func answer(id []byte, text string) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, id, text)
}

// httpServer answers with respond(n, raw id) for the n-th request (from 1).
func httpServer(t *testing.T, respond func(n int64, id []byte, w http.ResponseWriter)) HTTPTarget {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id, ok := wire.RawID(body)
		if !ok || r.Header.Get("Mcp-Method") != "tools/call" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		respond(n.Add(1), id, w)
	}))
	t.Cleanup(srv.Close)
	addr, path, err := ParseURL(srv.URL + "/mcp")
	if err != nil {
		t.Fatal(err)
	}
	return HTTPTarget{Addr: addr, Path: path, Host: addr, Modern: true}
}

func TestHTTPGoodServer(t *testing.T) {
	tgt := httpServer(t, func(_ int64, id []byte, w http.ResponseWriter) { _, _ = w.Write(answer(id, wire.EchoText)) })
	h, err := DialHTTP(tgt, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	r, err := h.Run(context.Background(), Phase{Count: 100}, Watch{ServerPID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 100 || r.Reconnects != 0 || r.RPS <= 0 || r.P50us <= 0 || r.P99us < r.P50us || r.MaxUs < r.P99us {
		t.Errorf("result %+v", r)
	}
	if r.CPU == nil || r.CPU.Server < 0 || len(r.CPU.Busy) == 0 {
		t.Errorf("cpu %+v", r.CPU)
	}
	r, err = h.Run(context.Background(), Phase{Duration: 50 * time.Millisecond}, Watch{})
	if err != nil || r.Requests == 0 || r.Seconds < 0.05 {
		t.Errorf("timed phase: %+v, %v", r, err)
	}
}

// A broken server must never yield a rate: every kind of wrong answer, from
// the first one on or later, fails the run.
func TestHTTPBrokenServers(t *testing.T) {
	for name, respond := range map[string]func(n int64, id []byte, w http.ResponseWriter){
		"wrong id": func(n int64, id []byte, w http.ResponseWriter) {
			if n == 20 {
				id = []byte("999999")
			}
			_, _ = w.Write(answer(id, wire.EchoText))
		},
		"error": func(n int64, id []byte, w http.ResponseWriter) {
			if n == 20 {
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"boom"}}`, id)
				return
			}
			_, _ = w.Write(answer(id, wire.EchoText))
		},
		"another text": func(n int64, id []byte, w http.ResponseWriter) {
			text := wire.EchoText
			if n == 20 {
				text = "hello world!"
			}
			_, _ = w.Write(answer(id, text))
		},
		"status 500": func(n int64, id []byte, w http.ResponseWriter) {
			if n == 20 {
				w.WriteHeader(http.StatusInternalServerError)
			}
			_, _ = w.Write(answer(id, wire.EchoText))
		},
		"no answer": func(n int64, id []byte, w http.ResponseWriter) {
			if n == 20 {
				return
			}
			_, _ = w.Write(answer(id, wire.EchoText))
		},
		"truncated": func(n int64, id []byte, w http.ResponseWriter) {
			a := answer(id, wire.EchoText)
			if n == 20 {
				a = a[:len(a)-2]
			}
			_, _ = w.Write(a)
		},
		"wrong first text": func(_ int64, id []byte, w http.ResponseWriter) { _, _ = w.Write(answer(id, "hello")) },
	} {
		t.Run(name, func(t *testing.T) {
			h, err := DialHTTP(httpServer(t, respond), 2)
			if err == nil {
				defer h.Close()
				var r Result
				r, err = h.Run(context.Background(), Phase{Count: 50}, Watch{})
				if err == nil {
					t.Fatalf("a broken server measured: %+v", r)
				}
			}
			t.Log(err)
		})
	}
}

// Answers as server-sent events are unwrapped; a server that closes the
// connection after an answer is counted, not hidden.
func TestHTTPEventStreamAndReconnects(t *testing.T) {
	tgt := httpServer(t, func(n int64, id []byte, w http.ResponseWriter) {
		if n%10 == 0 {
			w.Header().Set("Connection", "close")
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
		w.(http.Flusher).Flush() // chunked
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", answer(id, wire.EchoText))
	})
	h, err := DialHTTP(tgt, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	r, err := h.Run(context.Background(), Phase{Count: 40}, Watch{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Reconnects != 4 {
		t.Errorf("%d reconnects, want 4", r.Reconnects)
	}
}

func TestParseURL(t *testing.T) {
	if a, p, err := ParseURL("http://127.0.0.1:8080/mcp"); err != nil || a != "127.0.0.1:8080" || p != "/mcp" {
		t.Errorf("%q %q %v", a, p, err)
	}
	for _, bad := range []string{"https://127.0.0.1:1/mcp", "http://localhost:1/mcp", "http://10.0.0.1:1/mcp", "http://127.0.0.1/mcp"} {
		if _, _, err := ParseURL(bad); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

// ---------------------------------------------------------------- stdio

// stdioHelper is a stdio server for the tests. Every mode answers the
// handshake and the first call; then:
//
//	reorder    answers correctly, each batch of buffered requests in reverse
//	wrong-id   answers the 30th call with another id
//	duplicate  answers the 30th call twice
//	wrong-text answers the 30th call with another text
//	exit       exits at the 30th call
//	quit       exits at once
func stdioHelper(mode string) int {
	if mode == "quit" {
		return 0
	}
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	var pending [][]byte
	n := 0
	flush := func() bool {
		if mode == "reorder" {
			slices.Reverse(pending)
		}
		for _, id := range pending {
			n++
			text := wire.EchoText
			if n == 30 {
				switch mode {
				case "wrong-id":
					id = []byte("77777777")
				case "duplicate":
					out.Write(append(answer(id, text), '\n'))
				case "wrong-text":
					text = "hello"
				case "exit":
					out.Flush()
					return false
				}
			}
			out.Write(append(answer(id, text), '\n'))
		}
		pending = pending[:0]
		return out.Flush() == nil
	}
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			flush()
			return 0
		}
		id, ok := wire.RawID(line)
		if ok {
			pending = append(pending, id)
		}
		if in.Buffered() == 0 && !flush() {
			return 3
		}
	}
}

func helperArgv(mode string) []string { return []string{os.Args[0], "stdio-helper", mode} }

func TestStdioPipelinedOutOfOrder(t *testing.T) {
	s, err := StartStdio(helperArgv("reorder"), 16, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []Phase{{Count: 500}, {Count: 1000}, {Duration: 50 * time.Millisecond}} {
		r, err := s.Run(context.Background(), p, Watch{ServerPID: s.Pid()})
		if err != nil {
			t.Fatal(err)
		}
		if (p.Count > 0 && r.Requests != p.Count) || r.Requests == 0 {
			t.Errorf("%v: %+v", p, r)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestStdioBrokenServers(t *testing.T) {
	for _, mode := range []string{"wrong-id", "duplicate", "wrong-text", "exit"} {
		t.Run(mode, func(t *testing.T) {
			s, err := StartStdio(helperArgv(mode), 8, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			r, err := s.Run(context.Background(), Phase{Count: 200}, Watch{})
			cerr := s.Close()
			if err == nil {
				t.Fatalf("a broken server measured: %+v", r)
			}
			if mode != "exit" && cerr != nil {
				t.Errorf("close: %v", cerr)
			}
			t.Log(err)
		})
	}
}

func TestStdioHandshakeFailure(t *testing.T) {
	// A server that exits at once never gets through the handshake.
	_, err := StartStdio(helperArgv("quit"), 8, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "initialize") {
		t.Fatalf("%v", err)
	}
}

func TestMedian(t *testing.T) {
	xs := []float64{3, 1, 2, 10}
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{4}, 4}, {[]float64{3, 1, 2}, 2}, {xs, 2.5}} {
		if got := Median(c.xs); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
	if xs[0] != 3 || xs[3] != 10 {
		t.Errorf("Median reordered its argument: %v", xs)
	}
}
