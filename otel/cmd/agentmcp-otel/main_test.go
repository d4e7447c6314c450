package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestProviderExportsOverOTLPHTTP: with OTEL_EXPORTER_OTLP_ENDPOINT set, the
// command's provider sends its spans to that endpoint's /v1/traces as OTLP
// protobuf (flushed at Shutdown, as the command does at exit); without it
// there is no provider and nothing is exported.
func TestProviderExportsOverOTLPHTTP(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	if tp, err := provider(t.Context()); tp != nil || err != nil {
		t.Fatalf("no endpoint: provider %v, %v; want none", tp, err)
	}

	got := make(chan string, 4)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if len(b) > 0 {
			got <- r.Method + " " + r.URL.Path + " " + r.Header.Get("Content-Type")
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	tp, err := provider(t.Context())
	if err != nil || tp == nil {
		t.Fatalf("provider: %v, %v", tp, err)
	}
	_, span := tp.Tracer("test").Start(context.Background(), "tools/call agent_submit")
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	select {
	case req := <-got:
		if req != "POST /v1/traces application/x-protobuf" {
			t.Errorf("export %q, want POST /v1/traces application/x-protobuf", req)
		}
	default:
		t.Fatal("nothing was exported by Shutdown")
	}
}
