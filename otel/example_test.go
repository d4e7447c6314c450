package otel_test

import (
	"context"
	"fmt"
	"os"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentmcp/agentmcp/adapters/metrics"
	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/otel"
	"github.com/agentmcp/agentmcp/ports"
)

// Traces and metrics together: the tracer and adapters/metrics are both
// Observers; ports.Observers runs them in turn. Give the same Observer to
// agent.Options.Observer when the session is the agent. The session here
// is the reference workspace over a temporary directory; yours is any
// ports.Session.
func ExampleNew() {
	dir, err := os.MkdirTemp("", "otel-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	session, err := workspace.New(workspace.Options{Root: dir})
	if err != nil {
		panic(err)
	}
	defer session.Close()

	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	m := metrics.New(metrics.Options{}) // m.Handler() serves /metrics
	eng, err := engine.New(session, engine.Options{Observer: ports.Observers(m, otel.New(tp))})
	if err != nil {
		panic(err)
	}
	defer eng.Shutdown(context.Background())

	// One tools/call whose client sent a W3C traceparent: its span joins
	// the client's trace.
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_dir","arguments":{"path":"."},` +
		`"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}}`
	eng.Exchange(context.Background(), []byte(body), engine.ExchangeOptions{})
	for _, s := range exp.GetSpans() {
		fmt.Println(s.Name, s.SpanKind, s.SpanContext.TraceID(), s.Parent.SpanID())
	}
	// Output:
	// tools/call list_dir server 4bf92f3577b34da6a3ce929d0e0e4736 00f067aa0ba902b7
}
