package interop

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoSDKOverUnixSocket drives "agentmcp serve unix" with the official Go
// SDK client: its IOTransport over the net.Conn of the socket (go-sdk's
// CommandTransport cannot reach a socket), on both protocol eras, running
// the same scenario as over stdio and HTTP; then the server stops on
// SIGTERM with status 0 and its socket file is gone.
func TestGoSDKOverUnixSocket(t *testing.T) {
	for _, version := range []string{"2025-11-25", modernVersion} {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			ws := newWorkspace(t)
			stderr := serverStderr(t)
			dir, err := os.MkdirTemp("", "mcp")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			path := filepath.Join(dir, "agentmcp.sock")
			cmd := exec.CommandContext(ctx, binPath, "serve", "unix", "--socket", path, "--root", ws.root)
			cmd.WaitDelay = 10 * time.Second
			out := newFirstLineWriter()
			cmd.Stdout, cmd.Stderr = out, stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() { _ = cmd.Process.Kill() })
			select {
			case line := <-out.line:
				if strings.TrimSpace(line) != path {
					t.Fatalf("serve unix printed %q, want the socket path", line)
				}
			case err := <-done:
				t.Fatalf("serve unix exited before listening: %v", err)
			case <-ctx.Done():
				t.Fatal("serve unix printed no socket path")
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("socket file %v, %v: want mode 0600", fi, err)
			}

			conn, err := net.Dial("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			client := mcp.NewClient(&mcp.Implementation{Name: "agentmcp-interop-go-sdk", Version: "v1.8.0"}, nil)
			// The transport closes Reader and Writer: one of them closes
			// the connection.
			cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: conn, Writer: writeOnly{conn}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatalf("connect over the socket: %v", err)
			}
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Errorf("negotiated %s, want %s", got, version)
			}
			runClientScenario(ctx, t, cs, ws)
			if err := cs.Close(); err != nil {
				t.Errorf("close: %v", err)
			}

			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Errorf("exit after SIGTERM: %v, want status 0", err)
			}
			if _, err := os.Lstat(path); !os.IsNotExist(err) {
				t.Errorf("socket file after exit: %v, want it removed", err)
			}
		})
	}
}

// writeOnly is the connection's writing side, whose Close leaves the
// connection to the reading side's.
type writeOnly struct{ net.Conn }

func (writeOnly) Close() error { return nil }
