package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/engine"
	"github.com/agentmcp/agentmcp/adapters/httploopback"
	agentstdio "github.com/agentmcp/agentmcp/adapters/stdio"
	"github.com/agentmcp/agentmcp/adapters/streamable"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
	mcpgomcp "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ---------------------------------------------------------------- agentmcp

// echoSession is the ports.Session agentmcp serves: one runtime tool, echo,
// whose envelope's result is its arguments. agentmcp renders the envelope as
// the call's text block, so its answer text is
// {"success":true,"toolName":"echo","result":{"text":"hello world"}}
// rather than the bare "hello world" the peers return: that is agentmcp's
// contract (docs/SPEC.md §2), not a benchmark choice.
type echoSession struct{}

var echoTools = []domain.Tool{{
	Name:        "echo",
	Description: "Echo the text back",
	InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
}}

func (echoSession) RuntimeTools(context.Context) ([]domain.Tool, error) { return echoTools, nil }

func (echoSession) InvokeTool(_ context.Context, name string, args json.RawMessage, _ ports.Caller) (domain.Envelope, error) {
	if name != "echo" {
		return domain.Envelope{}, fmt.Errorf("no such tool %q", name)
	}
	return domain.Envelope{Success: true, ToolName: name, Result: args}, nil
}

func (echoSession) Submit(context.Context, string, ports.Caller) (ports.TurnResult, error) {
	return ports.TurnResult{}, ports.Refused("no turns in the benchmark")
}

// ---------------------------------------------------------------- go-sdk

type gosdkIn struct {
	Text string `json:"text"`
}

func newGoSDKServer() *gosdk.Server {
	s := gosdk.NewServer(&gosdk.Implementation{Name: "bench-go-sdk", Version: "0"}, nil)
	gosdk.AddTool(s, &gosdk.Tool{Name: "echo", Description: "Echo the text back"},
		func(_ context.Context, _ *gosdk.CallToolRequest, in gosdkIn) (*gosdk.CallToolResult, any, error) {
			return &gosdk.CallToolResult{Content: []gosdk.Content{&gosdk.TextContent{Text: in.Text}}}, nil, nil
		})
	return s
}

// ---------------------------------------------------------------- mcp-go

func newMCPGoServer() *mcpgoserver.MCPServer {
	s := mcpgoserver.NewMCPServer("bench-mcp-go", "0", mcpgoserver.WithToolCapabilities(false))
	s.AddTool(mcpgomcp.NewTool("echo",
		mcpgomcp.WithDescription("Echo the text back"),
		mcpgomcp.WithString("text", mcpgomcp.Required()),
	), func(_ context.Context, req mcpgomcp.CallToolRequest) (*mcpgomcp.CallToolResult, error) {
		text, err := req.RequireString("text")
		if err != nil {
			return mcpgomcp.NewToolResultError(err.Error()), nil
		}
		return mcpgomcp.NewToolResultText(text), nil
	})
	return s
}

// ---------------------------------------------------------------- stdio

// stdioServer starts one server reading newline-delimited JSON from in and
// writing it to out. stop is called after the client has closed in.
type stdioServer struct {
	name     string
	envelope bool // answers are agentmcp envelopes
	start    func(tb testing.TB, in io.ReadCloser, out io.WriteCloser) (stop func())
}

func stdioServers() []stdioServer {
	return []stdioServer{
		{name: "agentmcp", envelope: true, start: startAgentmcpStdio},
		{name: "go-sdk", start: startGoSDKStdio},
		{name: "mcp-go", start: startMCPGoStdio},
		{name: "floor", start: startFloorStdio},
	}
}

// startAgentmcpStdio serves echoSession with adapters/stdio, the carrier
// cmd/agentmcp uses, over the given pipes.
func startAgentmcpStdio(tb testing.TB, in io.ReadCloser, out io.WriteCloser) func() {
	t, err := agentstdio.New(agentstdio.Options{Name: "bench-agentmcp", Version: "0", Stdin: in, Stdout: out})
	if err != nil {
		tb.Fatal(err)
	}
	if err := t.Attach(echoSession{}); err != nil {
		tb.Fatal(err)
	}
	if err := t.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := t.Stop(ctx); err != nil && !errors.Is(err, agentstdio.ErrInputClosed) {
			tb.Logf("agentmcp stdio stop: %v", err)
		}
		out.Close()
	}
}

// startGoSDKStdio serves go-sdk's server on an IOTransport (its stdio
// framing, minus os.Stdin/os.Stdout).
func startGoSDKStdio(tb testing.TB, in io.ReadCloser, out io.WriteCloser) func() {
	ss, err := newGoSDKServer().Connect(context.Background(), &gosdk.IOTransport{Reader: in, Writer: out}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return func() {
		_ = ss.Wait()
		out.Close()
	}
}

// startMCPGoStdio serves mcp-go's StdioServer.Listen on the pipes. mcp-go's
// stdio session is a package-level singleton: one such server per process at
// a time, which the sequential benchmarks respect.
func startMCPGoStdio(tb testing.TB, in io.ReadCloser, out io.WriteCloser) func() {
	s := mcpgoserver.NewStdioServer(newMCPGoServer())
	s.SetErrorLogger(log.New(io.Discard, "", 0))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Listen(ctx, in, out) }()
	return func() {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			tb.Log("mcp-go stdio did not end on EOF; cancelling")
			cancel()
			<-done
		}
		cancel()
		out.Close()
	}
}

// startFloorStdio is no MCP server at all: it copies each request's id into
// a canned answer. It prices the harness (pipes, framing on the client side,
// the per-answer check) so it can be told apart from the servers' cost.
func startFloorStdio(_ testing.TB, in io.ReadCloser, out io.WriteCloser) func() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 0, 256)
		rd := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := rd.ReadSlice('\n')
			if err != nil {
				return
			}
			id, ok := rawID(line)
			if !ok {
				continue // a notification
			}
			buf = append(append(append(buf[:0], `{"jsonrpc":"2.0","id":`...), id...),
				`,"result":{"content":[{"type":"text","text":"hello world"}]}}`+"\n"...)
			if _, err := out.Write(buf); err != nil {
				return
			}
		}
	}()
	return func() { <-done; out.Close() }
}

// rawID returns the raw id of a request line written by this harness.
func rawID(line []byte) ([]byte, bool) {
	_, rest, ok := bytes.Cut(line, []byte(`"id":`))
	if !ok {
		return nil, false
	}
	end := bytes.IndexByte(rest, ',')
	if end < 0 {
		return nil, false
	}
	return rest[:end], true
}

// ---------------------------------------------------------------- HTTP

// httpServer starts one Streamable HTTP server on 127.0.0.1 and returns
// its URL, the extra request headers it needs, and a stop function.
type httpServer struct {
	name     string
	envelope bool
	modern   bool // serves the 2026-07-28 wire
	start    func(tb testing.TB) (url string, extra http.Header, stop func())
}

func httpServers() []httpServer {
	return []httpServer{
		{name: "agentmcp", envelope: true, modern: true, start: startAgentmcpHandler},
		{name: "agentmcp-loopback", envelope: true, modern: true, start: startAgentmcpLoopback},
		{name: "go-sdk", modern: true, start: startGoSDKHTTP(true)},
		{name: "go-sdk-sse", modern: true, start: startGoSDKHTTP(false)},
		{name: "mcp-go", modern: true, start: startMCPGoHTTP},
		{name: "floor", modern: true, start: startFloorHTTP},
	}
}

// startAgentmcpHandler serves echoSession with streamable.NewHandler (the
// Streamable HTTP framing both of agentmcp's hosts use) behind httptest,
// with no admission in front: no token, Host or Origin check, like the
// peers as configured here. Limits are the defaults (1 MiB body, 16 in
// flight).
func startAgentmcpHandler(tb testing.TB) (string, http.Header, func()) {
	eng, err := engine.New(echoSession{}, engine.Options{Name: "bench-agentmcp", Version: "0"})
	if err != nil {
		tb.Fatal(err)
	}
	if err := eng.Validate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(streamable.NewHandler(eng, streamable.Options{}))
	return srv.URL + "/mcp", nil, srv.Close
}

// startAgentmcpLoopback serves echoSession with the real loopback host,
// adapters/httploopback: its own http.Server and listener caps, plus its
// admission (request target, Host, Origin, constant-time bearer token).
func startAgentmcpLoopback(tb testing.TB) (string, http.Header, func()) {
	h, err := httploopback.New(httploopback.Options{Name: "bench-agentmcp", Version: "0", Session: echoSession{}})
	if err != nil {
		tb.Fatal(err)
	}
	ep, err := h.Start(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	extra := http.Header{"Authorization": {"Bearer " + ep.Token}}
	return ep.URL, extra, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Stop(ctx); err != nil {
			tb.Logf("httploopback stop: %v", err)
		}
	}
}

// startGoSDKHTTP serves one shared go-sdk server with Stateless: true, as
// application/json (JSONResponse) or as text/event-stream.
func startGoSDKHTTP(jsonResponse bool) func(testing.TB) (string, http.Header, func()) {
	return func(testing.TB) (string, http.Header, func()) {
		s := newGoSDKServer()
		h := gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s },
			&gosdk.StreamableHTTPOptions{Stateless: true, JSONResponse: jsonResponse})
		srv := httptest.NewServer(h)
		return srv.URL + "/mcp", nil, srv.Close
	}
}

// startMCPGoHTTP serves one shared mcp-go server with WithStateLess(true)
// (JSON answers unless a tool streams).
func startMCPGoHTTP(testing.TB) (string, http.Header, func()) {
	h := mcpgoserver.NewStreamableHTTPServer(newMCPGoServer(),
		mcpgoserver.WithStateLess(true),
		mcpgoserver.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)))
	srv := httptest.NewServer(h)
	return srv.URL + "/mcp", nil, srv.Close
}

// startFloorHTTP answers every POST with a canned result carrying the
// request's id: the HTTP harness's own cost (client, loopback TCP, net/http
// server, the per-answer check).
func startFloorHTTP(testing.TB) (string, http.Header, func()) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		id, ok := rawID(body)
		if !ok {
			http.Error(w, "no id", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		out := append(append(append(make([]byte, 0, 128), `{"jsonrpc":"2.0","id":`...), id...),
			`,"result":{"content":[{"type":"text","text":"hello world"}]}}`...)
		_, _ = w.Write(out)
	}))
	return srv.URL + "/mcp", nil, srv.Close
}
