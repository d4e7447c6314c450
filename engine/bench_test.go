package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"runtime"
	"testing"

	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
)

// lineFeed is an io.Reader that hands out the lines sent on it, one Read at
// a time, so a benchmark drives ServeConn without pipes or syscalls.
type lineFeed struct {
	lines chan []byte
	cur   []byte
}

func (f *lineFeed) Read(p []byte) (int, error) {
	if len(f.cur) == 0 {
		l, ok := <-f.lines
		if !ok {
			return 0, io.EOF
		}
		f.cur = l
	}
	n := copy(p, f.cur)
	f.cur = f.cur[n:]
	return n, nil
}

// signalWriter reports each write.
type signalWriter chan struct{}

func (w signalWriter) Write(p []byte) (int, error) { w <- struct{}{}; return len(p), nil }

// BenchmarkToolsCallStream measures one tools/call through ServeConn:
// framing, decode, catalog validation, the session's echo tool, envelope
// rendering, encode and write.
func BenchmarkToolsCallStream(b *testing.B) {
	e, err := engine.New(fake.New(), engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	feed := &lineFeed{lines: make(chan []byte)}
	done := make(signalWriter, 1)
	served := make(chan error, 1)
	go func() { served <- e.ServeConn(context.Background(), feed, done, engine.ConnOptions{}) }()
	line := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello world"}}}` + "\n")
	b.ReportAllocs()
	for b.Loop() {
		feed.lines <- line
		<-done
	}
	close(feed.lines)
	if err := <-served; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkToolsCallExchange measures one modern tools/call through the
// stateless entry point the HTTP framing uses.
func BenchmarkToolsCallExchange(b *testing.B) {
	e, err := engine.New(fake.New(), engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}},"name":"echo","arguments":{"text":"hello world"}}}`)
	h := engine.Headers{ProtocolVersion: "2026-07-28", HasProtocolVersion: true, Method: "tools/call", HasMethod: true, Name: "echo", HasName: true}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r := e.Exchange(ctx, body, engine.ExchangeOptions{Headers: h}); r.Kind != engine.Answered {
			b.Fatalf("kind %d: %s", r.Kind, r.Body)
		}
	}
}

// BenchmarkTasksGetExchange measures one 2026-07-28 tasks/get of a completed
// agent_submit task through the stateless entry point, to set beside
// BenchmarkToolsCallExchange (docs/SPEC.md §14: a polling client should cost
// about what a plain call does).
func BenchmarkTasksGetExchange(b *testing.B) {
	e, err := engine.New(fake.New(), engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	h := engine.Headers{ProtocolVersion: "2026-07-28", HasProtocolVersion: true, Method: "tools/call", HasMethod: true, Name: "agent_submit", HasName: true}
	ctx := context.Background()
	r := e.Exchange(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"hello"},`+meta+`}}`), engine.ExchangeOptions{Headers: h})
	var created struct {
		Result struct {
			TaskID string `json:"taskId"`
		} `json:"result"`
	}
	if err := json.Unmarshal(r.Body, &created); err != nil || created.Result.TaskID == "" {
		b.Fatalf("no task: %s", r.Body)
	}
	id := created.Result.TaskID
	body := []byte(`{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":{"taskId":"` + id + `",` + meta + `}}`)
	h = engine.Headers{ProtocolVersion: "2026-07-28", HasProtocolVersion: true, Method: "tasks/get", HasMethod: true, Name: id, HasName: true}
	for { // the task settles on its own goroutine; the benchmark reads a completed one
		if r := e.Exchange(ctx, body, engine.ExchangeOptions{Headers: h}); bytes.Contains(r.Body, []byte(`"status":"completed"`)) {
			break
		}
		runtime.Gosched()
	}
	b.ReportAllocs()
	for b.Loop() {
		if r := e.Exchange(ctx, body, engine.ExchangeOptions{Headers: h}); r.Kind != engine.Answered {
			b.Fatalf("kind %d: %s", r.Kind, r.Body)
		}
	}
}

// BenchmarkLegacyToolsCallExchange measures one 2025-era tools/call through
// Exchange: the modern path's work plus its entry in the registry that a
// later notifications/cancelled reaches (flights.go).
func BenchmarkLegacyToolsCallExchange(b *testing.B) {
	e, err := engine.New(fake.New(), engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello world"}}}`)
	h := engine.Headers{ProtocolVersion: "2025-11-25", HasProtocolVersion: true}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r := e.Exchange(ctx, body, engine.ExchangeOptions{Headers: h}); r.Kind != engine.Answered {
			b.Fatalf("kind %d: %s", r.Kind, r.Body)
		}
	}
}
