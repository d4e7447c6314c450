// Command benchserver runs one of the bench's servers in a process of its
// own, for the separate-process rows of cmd/benchtable (which pins it to one
// CPU with taskset).
//
//	benchserver -server NAME [-transport http|stdio] [-debug]
//
// HTTP servers (bare, mcp-go, go-sdk, go-sdk-sse, agentmcp-handler,
// agentmcp-loopback, agentmcp-remote) listen on 127.0.0.1 and print one
// JSON line on stdout once they are listening (load.ServerInfo: URL, Host
// header, extra headers such as the loopback host's bearer token, and for
// agentmcp-remote the file holding the issuer's private key, from which the
// load generator mints access tokens). They serve until SIGINT or SIGTERM,
// or, when stdin is a pipe, until it ends, so a parent that dies takes them
// with it.
// -debug adds a second loopback listener, the bench's own, whose GET /heap
// answers the process's heap in use after a forced GC (load.Heap).
//
// Stdio servers (bare, mcp-go, go-sdk, agentmcp) serve MCP on the process's
// stdin and stdout and exit when stdin ends.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/agentmcp/agentmcp/bench/internal/load"
	"github.com/agentmcp/agentmcp/bench/internal/servers"
)

func main() {
	name := flag.String("server", "", "the server: HTTP "+strings.Join(append(servers.HTTPNames(), servers.WorkspaceNames()...), ", ")+"; stdio "+strings.Join(servers.StdioNames(), ", "))
	transport := flag.String("transport", "http", "http or stdio")
	debug := flag.Bool("debug", false, "HTTP: serve GET /heap on a second loopback listener")
	keyDir := flag.String("keydir", "", "agentmcp-remote: the directory for the private key file (default: the system's temporary directory)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file (for go tool pprof)")
	flag.Parse()
	if flag.NArg() > 0 {
		fail(fmt.Errorf("unexpected arguments %q", flag.Args()))
	}
	if *cpuProfile != "" {
		stop, err := startCPUProfile(*cpuProfile)
		if err != nil {
			fail(err)
		}
		defer stop()
	}
	var err error
	switch *transport {
	case "http":
		err = serveHTTP(*name, *debug, *keyDir)
	case "stdio":
		err = serveStdio(*name)
	default:
		err = fmt.Errorf("-transport %q: want http or stdio", *transport)
	}
	if err != nil {
		fail(err)
	}
}

// startCPUProfile profiles the process until the returned stop is called,
// so a run by hand can show where a server spends its time.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "benchserver: %v\n", err)
		}
	}, nil
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "benchserver: %v\n", err)
	os.Exit(1)
}

func serveHTTP(name string, debug bool, keyDir string) (err error) {
	if !servers.KnownHTTP(name) {
		return fmt.Errorf("no HTTP server %q (have %s)", name, strings.Join(servers.HTTPNames(), ", "))
	}
	ctx := context.Background()
	s, err := servers.StartHTTP(ctx, name)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, servers.StopTimeout)
		defer cancel()
		err = errors.Join(err, s.Stop(sctx))
	}()

	info := load.ServerInfo{Server: s.Name, URL: s.URL, Host: s.Host, Header: s.Header,
		PID: os.Getpid(), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	if s.Remote != nil {
		f, err := os.CreateTemp(keyDir, "benchserver-key-*.pem") // mode 0600
		if err != nil {
			return err
		}
		defer os.Remove(f.Name())
		if _, err := f.Write(s.Remote.KeyPEM); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		info.Remote = &load.RemoteInfo{Claims: s.Remote.Claims, KeyFile: f.Name(), CacheSize: s.Remote.CacheSize}
	}
	if debug {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		mux := http.NewServeMux()
		mux.HandleFunc("GET /heap", load.HeapHandler)
		dbg := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = dbg.Serve(ln) }()
		defer dbg.Close()
		info.Debug = "http://" + ln.Addr().String()
	}
	line, err := json.Marshal(info)
	if err != nil {
		return err
	}
	if _, err := fmt.Printf("%s\n", line); err != nil {
		return err
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	eof := make(chan struct{}) // stays open unless stdin is a pipe that ends
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
		go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(eof) }()
	}
	select {
	case <-sig:
	case <-eof:
	}
	return nil
}

func serveStdio(name string) error {
	if !servers.KnownStdio(name) {
		return fmt.Errorf("no stdio server %q (have %s)", name, strings.Join(servers.StdioNames(), ", "))
	}
	ctx := context.Background()
	st, err := servers.ServeStdio(ctx, name, os.Stdin, os.Stdout)
	if err != nil {
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- st.Wait() }()
	select {
	case err := <-done:
		return err
	case <-sig:
		sctx, cancel := context.WithTimeout(ctx, servers.StopTimeout)
		defer cancel()
		return st.Stop(sctx)
	}
}
