// Package servers builds every server the bench measures, in-process (the
// go test -bench rows) and in cmd/benchserver (the separate-process rows):
// agentmcp's hosts (agentmcp.go, the one file that touches agentmcp's API),
// the peers go-sdk and mcp-go (peers.go), and the bare servers that are the
// floor (bare.go). Each serves the same echo tool.
package servers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Names of the servers, as benchserver's -server flag and the tables spell
// them.
const (
	Bare             = "bare"
	MCPGo            = "mcp-go"
	GoSDK            = "go-sdk"
	GoSDKSSE         = "go-sdk-sse"
	AgentmcpHandler  = "agentmcp-handler"
	AgentmcpLoopback = "agentmcp-loopback"
	// AgentmcpLoopbackMetrics is the loopback host with its metrics on
	// (adapters/metrics observing every request).
	AgentmcpLoopbackMetrics = "agentmcp-loopback-metrics"
	AgentmcpRemote          = "agentmcp-remote"
	// AgentmcpWorkspace is the loopback host serving the workspace session
	// (the CLI's read_file) instead of echo: the read_file and tasks/get
	// rows (wire.ReadFile, wire.TasksGet), not the echo workload.
	AgentmcpWorkspace = "agentmcp-workspace"
	Agentmcp          = "agentmcp" // stdio
)

// HTTPNames are the Streamable HTTP servers StartHTTP knows that serve the
// echo workload; WorkspaceNames those that serve the workspace's.
func HTTPNames() []string {
	return []string{Bare, MCPGo, GoSDK, GoSDKSSE, AgentmcpHandler, AgentmcpLoopback, AgentmcpLoopbackMetrics, AgentmcpRemote}
}

// WorkspaceNames are the HTTP servers of the workspace workloads.
func WorkspaceNames() []string { return []string{AgentmcpWorkspace} }

// StdioNames are the stdio servers ServeStdio knows.
func StdioNames() []string { return []string{Bare, MCPGo, GoSDK, Agentmcp} }

// HTTP is a started Streamable HTTP server on 127.0.0.1.
type HTTP struct {
	Name string
	// URL is the endpoint on the listener: http://127.0.0.1:<port>/<path>.
	URL string
	// Host is the Host header requests must carry: the URL's host, except
	// for the remote host, which is reached under its public URL's host.
	Host string
	// Header holds extra request headers: a bearer token, the loopback
	// host's or, for the servers that check none, [UnusedToken].
	Header http.Header
	// Remote is set for the remote host: how to mint the access tokens it
	// admits.
	Remote *Remote

	stop []func(context.Context) error // in order
}

// Stop stops the server (and the remote host's issuer).
func (s *HTTP) Stop(ctx context.Context) error {
	var errs []error
	for _, f := range s.stop {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}

// StopTimeout bounds a server's Stop in the bench.
const StopTimeout = 10 * time.Second

// StartHTTP starts the named Streamable HTTP server on 127.0.0.1, on a free
// port.
func StartHTTP(ctx context.Context, name string) (*HTTP, error) {
	switch name {
	case Bare:
		return serveHandler(name, http.HandlerFunc(bareHTTP))
	case MCPGo:
		return serveHandler(name, mcpGoHandler())
	case GoSDK, GoSDKSSE:
		return serveHandler(name, goSDKHandler(name == GoSDK))
	case AgentmcpHandler:
		h, err := agentmcpHandler()
		if err != nil {
			return nil, err
		}
		return serveHandler(name, h)
	case AgentmcpLoopback, AgentmcpLoopbackMetrics, AgentmcpWorkspace:
		start := func(ctx context.Context) (string, string, func(context.Context) error, error) {
			return startAgentmcpLoopback(ctx, name == AgentmcpLoopbackMetrics)
		}
		if name == AgentmcpWorkspace {
			start = startAgentmcpWorkspace
		}
		url, token, stop, err := start(ctx)
		if err != nil {
			return nil, err
		}
		return &HTTP{Name: name, URL: url, Host: hostOf(url),
			Header: http.Header{"Authorization": {"Bearer " + token}},
			stop:   []func(context.Context) error{stop}}, nil
	case AgentmcpRemote:
		return startRemote(ctx)
	}
	return nil, fmt.Errorf("servers: no HTTP server %q (have %s)", name, strings.Join(append(HTTPNames(), WorkspaceNames()...), ", "))
}

// UnusedToken is the bearer token sent to the servers that check none (the
// bare handler, the peers, agentmcp's handler without admission), so that
// every row's requests carry the same headers, of the same sizes, as the
// loopback host's, whose token is 64 hex digits. The bytes and the number
// of a request's headers are part of the workload: net/http's parsing of
// one more header cost the bare handler about 3% of its rate on a 2-core
// machine, which must not be counted as the loopback host's overhead. (The
// remote host's rows carry its own credential, a JWT, and are compared
// with the loopback host's.)
var UnusedToken = strings.Repeat("0", 64)

// serveHandler serves h with a plain http.Server on 127.0.0.1 (how the
// peers document serving their handlers), at /mcp; its requests carry
// [UnusedToken].
func serveHandler(name string, h http.Handler) (*HTTP, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	url := "http://" + ln.Addr().String() + "/mcp"
	return &HTTP{Name: name, URL: url, Host: hostOf(url), Header: http.Header{"Authorization": {"Bearer " + UnusedToken}}, stop: []func(context.Context) error{
		func(ctx context.Context) error {
			err := srv.Shutdown(ctx)
			<-done
			return err
		},
	}}, nil
}

func hostOf(url string) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(url, "http://"), "https://")
	host, _, _ := strings.Cut(rest, "/")
	return host
}

// Stdio is a stdio server serving one pair of streams.
type Stdio struct {
	done chan struct{}
	err  error
	stop func(context.Context) error
}

// Wait returns once the server has ended: after its input ended and what
// was in flight was answered, or after Stop.
func (s *Stdio) Wait() error { <-s.done; return s.err }

// Stop ends serving early.
func (s *Stdio) Stop(ctx context.Context) error { return s.stop(ctx) }

// runStdio runs serve on a goroutine; Wait returns its error.
func runStdio(serve func() error) *Stdio {
	s := &Stdio{done: make(chan struct{})}
	go func() { defer close(s.done); s.err = serve() }()
	return s
}

// ServeStdio starts the named stdio server reading newline-delimited
// JSON-RPC from in and writing it to out. in and out are the process's
// stdin and stdout in benchserver, pipes in the in-process benchmarks.
func ServeStdio(ctx context.Context, name string, in io.ReadCloser, out io.WriteCloser) (*Stdio, error) {
	switch name {
	case Bare:
		return serveBareStdio(in, out), nil
	case MCPGo:
		return serveMCPGoStdio(ctx, in, out)
	case GoSDK:
		return serveGoSDKStdio(ctx, in, out)
	case Agentmcp:
		wait, stop, err := serveAgentmcpStdio(ctx, in, out)
		if err != nil {
			return nil, err
		}
		s := runStdio(wait)
		s.stop = func(ctx context.Context) error { err := stop(ctx); <-s.done; return err }
		return s, nil
	}
	return nil, fmt.Errorf("servers: no stdio server %q (have %s)", name, strings.Join(StdioNames(), ", "))
}

// KnownHTTP and KnownStdio report whether a name is known.
func KnownHTTP(name string) bool {
	return slices.Contains(HTTPNames(), name) || slices.Contains(WorkspaceNames(), name)
}
func KnownStdio(name string) bool { return slices.Contains(StdioNames(), name) }
