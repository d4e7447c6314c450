package bench

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/bench/internal/servers"
)

// The servers themselves are built in internal/servers (agentmcp's in its
// one file, agentmcp.go), shared with cmd/benchserver's separate-process
// rows. Here they run in the benchmark's own process.

// stdioNames are the stdio servers, in the order they are measured.
var stdioNames = []string{servers.Agentmcp, servers.GoSDK, servers.MCPGo, servers.Bare}

// httpNames are the Streamable HTTP servers, in the order they are
// measured: agentmcp-handler is agentmcp's framing (streamable.NewHandler)
// with no admission, like the peers here; agentmcp-loopback its real
// loopback host with its admission.
var httpNames = []string{servers.AgentmcpHandler, servers.AgentmcpLoopback, servers.GoSDK, servers.GoSDKSSE, servers.MCPGo, servers.Bare}

// envelope reports whether a server answers with agentmcp's envelope.
func envelope(name string) bool { return strings.HasPrefix(name, "agentmcp") }

// serveStdio starts the named server on in and out; stop waits (bounded)
// for it to end once the client has closed in, then closes out.
func serveStdio(tb testing.TB, name string, in io.ReadCloser, out io.WriteCloser) (stop func()) {
	st, err := servers.ServeStdio(context.Background(), name, in, out)
	if err != nil {
		tb.Fatal(err)
	}
	return func() {
		done := make(chan error, 1)
		go func() { done <- st.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				tb.Logf("%s stdio: %v", name, err)
			}
		case <-time.After(servers.StopTimeout):
			tb.Logf("%s stdio did not end on EOF; stopping it", name)
			ctx, cancel := context.WithTimeout(context.Background(), servers.StopTimeout)
			defer cancel()
			_ = st.Stop(ctx)
		}
		out.Close()
	}
}

// startHTTP starts the named server on 127.0.0.1 and returns its URL, the
// extra request headers it needs, and a stop function.
func startHTTP(tb testing.TB, name string) (string, http.Header, func()) {
	s, err := servers.StartHTTP(context.Background(), name)
	if err != nil {
		tb.Fatal(err)
	}
	return s.URL, s.Header, func() {
		ctx, cancel := context.WithTimeout(context.Background(), servers.StopTimeout)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			tb.Logf("%s stop: %v", name, err)
		}
	}
}
