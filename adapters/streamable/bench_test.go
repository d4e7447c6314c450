package streamable_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/streamable"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/enginetest"
	"github.com/agentmcp/agentmcp/internal/fake"
)

// BenchmarkHandlerModernToolsCall serves one modern tools/call, its
// standard headers mirrored, through the Handler alone (no socket): the
// framing's own cost per request, headers' normalisation included.
func BenchmarkHandlerModernToolsCall(b *testing.B) {
	h, err := streamable.NewHandler(enginetest.New(b, fake.New(), engine.Options{Name: "t", Version: "1"}, 10*time.Second), streamable.Options{})
	if err != nil {
		b.Fatal(err)
	}
	benchModernToolsCall(b, h, context.Background())
}

// BenchmarkServerMadeHandlerToolsCall is BenchmarkHandlerModernToolsCall
// through the Handler a Server makes (the hosts' own), its requests'
// contexts on the engine's BaseContext as the Server's are: the exchange
// arranges nothing per request for Shutdown (ExchangeOptions.EndsWithEngine).
func BenchmarkServerMadeHandlerToolsCall(b *testing.B) {
	eng := enginetest.New(b, fake.New(), engine.Options{Name: "t", Version: "1"}, 10*time.Second)
	s, err := streamable.NewServer(streamable.ServerOptions{Engine: eng, Conns: streamable.ConnLimits{Total: 1},
		Listen: func() (net.Listener, error) { return nil, errors.New("not started") },
		Admit:  func(netip.AddrPort) http.Handler { return nil }})
	if err != nil {
		b.Fatal(err)
	}
	h, err := s.NewHandler(streamable.Options{})
	if err != nil {
		b.Fatal(err)
	}
	benchModernToolsCall(b, h, eng.BaseContext(b.Context()))
}

func benchModernToolsCall(b *testing.B, h http.Handler, ctx context.Context) {
	body := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"echo","arguments":{"text":"hello world"}}}`)
	header := http.Header{
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {"2026-07-28"},
		"Mcp-Method":           {"tools/call"},
		"Mcp-Name":             {"echo"},
	}
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", bytes.NewReader(body))
		r.Header = header
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// BenchmarkHandlerBatch serves a 2025-03-26 batch of eight tools/call
// through the Handler alone: the slots taken for its elements, the batch's
// pre-count included.
func BenchmarkHandlerBatch(b *testing.B) {
	h, err := streamable.NewHandler(enginetest.New(b, fake.New(), engine.Options{Name: "t", Version: "1"}, 10*time.Second), streamable.Options{})
	if err != nil {
		b.Fatal(err)
	}
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello world"}}}`
	body := []byte("[" + strings.Repeat(call+",", 7) + call + "]")
	header := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}}
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		r.Header = header
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}
