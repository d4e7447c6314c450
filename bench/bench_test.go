package bench

import (
	"runtime"
	"testing"

	"github.com/agentmcp/agentmcp/bench/internal/wire"
)

// warmCalls are made before the timer starts; the first answer fixes the
// text every later answer must equal.
const warmCalls = 50

// expectText makes the warm-up calls and returns the text every answer must
// carry: "hello world" for the peers and the bare servers; for agentmcp its
// envelope, checked in full here.
func expectText(tb testing.TB, call caller, envelope bool) string {
	text, err := call(2)
	if err != nil {
		tb.Fatalf("first call: %v", err)
	}
	if envelope {
		if err := wire.CheckEnvelope(text); err != nil {
			tb.Fatal(err)
		}
	} else if text != wire.EchoText {
		tb.Fatalf("text %q, want %q", text, wire.EchoText)
	}
	for id := int64(3); id < 2+warmCalls; id++ {
		got, err := call(id)
		if err != nil {
			tb.Fatalf("warm-up call %d: %v", id, err)
		}
		if got != text {
			tb.Fatalf("warm-up call %d: text %q, want %q", id, got, text)
		}
	}
	return text
}

// measure runs the timed loop: one call per iteration, each answer checked
// (id, no error, exactly the expected text). It records ns/op, allocs/op
// and B/op for the summary TestMain prints.
func measure(b *testing.B, call caller, want string) {
	b.ReportAllocs()
	id := int64(1000)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for b.Loop() {
		id++
		text, err := call(id)
		if err != nil {
			b.Fatalf("call %d: %v", id, err)
		}
		if text != want {
			b.Fatalf("call %d: text %q, want %q", id, text, want)
		}
	}
	runtime.ReadMemStats(&m1)
	record(b, m0, m1)
}

// BenchmarkStdio: each server over an io.Pipe pair with newline-delimited
// JSON, initialized once (2025-11-25), then one tools/call at a time.
func BenchmarkStdio(b *testing.B) {
	for _, name := range stdioNames {
		b.Run(name, func(b *testing.B) {
			c, closeAll := openStdio(b, name)
			defer closeAll()
			want := expectText(b, c.call, envelope(name))
			measure(b, c.call, want)
		})
	}
}

func benchHTTP(b *testing.B, modern bool) {
	for _, name := range httpNames {
		b.Run(name, func(b *testing.B) {
			url, extra, stop := startHTTP(b, name)
			defer stop()
			defer sharedTransport.CloseIdleConnections()
			c := newHTTPClient(url, extra, modern)
			want := expectText(b, c.call, envelope(name))
			measure(b, c.call, want)
		})
	}
}

// BenchmarkHTTP_2025_11_25: stateless Streamable HTTP, one POST per call on a
// kept-alive connection, no initialize, MCP-Protocol-Version: 2025-11-25.
func BenchmarkHTTP_2025_11_25(b *testing.B) { benchHTTP(b, false) }

// BenchmarkHTTP_2026_07_28: the same with the 2026-07-28 wire: per-request
// _meta plus the Mcp-Method and Mcp-Name headers.
func BenchmarkHTTP_2026_07_28(b *testing.B) { benchHTTP(b, true) }
