package streamable_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
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
		r := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		r.Header = header
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}
