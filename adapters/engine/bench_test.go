package engine_test

import (
	"context"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
)

// BenchmarkToolsCallStream measures one tools/call through a Stream: decode,
// catalog validation, the session's echo tool, envelope rendering, encode.
func BenchmarkToolsCallStream(b *testing.B) {
	e, err := engine.New(fake.New(), engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{}, 1)
	s := e.NewStream(func([]byte) error { done <- struct{}{}; return nil }, engine.StreamOptions{})
	line := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello world"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		s.Handle(line)
		<-done
	}
}

// BenchmarkToolsCallExchange measures one modern tools/call through the
// stateless entry point the HTTP hosts use.
func BenchmarkToolsCallExchange(b *testing.B) {
	e, err := engine.New(fake.New(), engine.Options{})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"echo","arguments":{"text":"hello world"}}}`)
	h := &engine.Headers{ProtocolVersion: "2026-07-28", HasProtocolVersion: true, Method: "tools/call", HasMethod: true, Name: "echo", HasName: true}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r := e.Exchange(ctx, body, engine.ExchangeOptions{Headers: h}); r.Status != 200 {
			b.Fatalf("status %d: %s", r.Status, r.Body)
		}
	}
}
