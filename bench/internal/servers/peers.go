package servers

import (
	"context"
	"io"
	"log"
	"log/slog"
	"net/http"

	mcpgomcp "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The peers, each in its documented production configuration with one
// shared server and logging off. Their echo tools decode text and return it
// as a text block.

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

// goSDKHandler is one shared go-sdk server behind its Streamable HTTP
// handler with Stateless: true, answering application/json (jsonResponse)
// or text/event-stream.
func goSDKHandler(jsonResponse bool) http.Handler {
	s := newGoSDKServer()
	return gosdk.NewStreamableHTTPHandler(func(*http.Request) *gosdk.Server { return s },
		&gosdk.StreamableHTTPOptions{Stateless: true, JSONResponse: jsonResponse})
}

// serveGoSDKStdio connects go-sdk's server to in and out with its
// newline-delimited framing (an IOTransport; its StdioTransport is the same
// on os.Stdin and os.Stdout).
func serveGoSDKStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) (*Stdio, error) {
	ss, err := newGoSDKServer().Connect(ctx, &gosdk.IOTransport{Reader: in, Writer: out}, nil)
	if err != nil {
		return nil, err
	}
	st := runStdio(ss.Wait)
	st.stop = func(context.Context) error { err := ss.Close(); <-st.done; return err }
	return st, nil
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

// mcpGoHandler is one shared mcp-go server with WithStateLess(true) (JSON
// answers unless a tool streams), its logger discarded.
func mcpGoHandler() http.Handler {
	return mcpgoserver.NewStreamableHTTPServer(newMCPGoServer(),
		mcpgoserver.WithStateLess(true),
		mcpgoserver.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)))
}

// serveMCPGoStdio runs mcp-go's StdioServer.Listen (what its ServeStdio
// runs, minus the signal handling) on in and out, its error log discarded.
// mcp-go's stdio session is a package-level singleton: one such server per
// process at a time.
func serveMCPGoStdio(ctx context.Context, in io.ReadCloser, out io.WriteCloser) (*Stdio, error) {
	s := mcpgoserver.NewStdioServer(newMCPGoServer())
	s.SetErrorLogger(log.New(io.Discard, "", 0))
	ctx, cancel := context.WithCancel(ctx)
	st := runStdio(func() error { defer cancel(); return s.Listen(ctx, in, out) })
	st.stop = func(context.Context) error { cancel(); return st.Wait() }
	return st, nil
}
