// Command agentmcp-otel is the agentmcp command with OpenTelemetry traces
// (docs/SPEC.md §13): the same command line, and every serve command's
// requests, agent turns, model requests and tool calls exported as spans
// over OTLP/HTTP.
//
// The exporter is configured by OpenTelemetry's standard environment:
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (e.g.
// http://127.0.0.1:4318) turn it on, OTEL_EXPORTER_OTLP_HEADERS and the
// rest are read by the exporter, OTEL_SERVICE_NAME names the service
// (default "agentmcp"). With neither endpoint set nothing is exported and
// it behaves exactly as agentmcp.
//
// It lives in the otel module so that the default agentmcp binary carries
// no OpenTelemetry SDK or exporter (their weight is in docs/operating.md).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/agentmcp/agentmcp/adapters/landlock"
	"github.com/agentmcp/agentmcp/app"
	"github.com/agentmcp/agentmcp/otel"
)

func main() {
	// First, as in agentmcp: when this process is run_command's sandbox
	// launcher (the binary re-executed by landlock.Wrap), it restricts
	// itself and execs the command, never returning.
	landlock.Main()
	app.KeepSecretsOutOfEnvironment(os.Args[1:])            // see app/cmd/agentmcp
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) // see app/cmd/agentmcp
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var opts app.MainOptions
	tp, err := provider(context.Background())
	if err != nil {
		fmt.Fprintf(os.Stderr, "agentmcp: traces: %v\n", err)
		os.Exit(1)
	}
	if tp != nil {
		opts.Observer = otel.New(tp)
	}
	code := app.MainWith(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, opts)
	stop()
	if tp != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := tp.Shutdown(sctx); err != nil {
			fmt.Fprintf(os.Stderr, "agentmcp: traces: flushing at exit: %v\n", err)
		}
		cancel()
	}
	os.Exit(code)
}

// provider returns the SDK's tracer provider exporting over OTLP/HTTP
// with a batch processor, or nil when no OTLP endpoint is configured.
func provider(ctx context.Context) (*sdktrace.TracerProvider, error) {
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return nil, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	// The environment (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) wins
	// over the defaults.
	res, err := resource.New(ctx, resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(semconv.ServiceName("agentmcp"), semconv.ServiceVersion(app.Version)),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, err
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}
