package streamable_test

import (
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/streamable"
	"github.com/agentmcp/agentmcp/internal/netcap"
	"github.com/agentmcp/agentmcp/ports"
)

// connCounter counts the connections reported to it that are open.
type connCounter struct {
	ports.NopObserver
	open atomic.Int64
}

func (c *connCounter) StartConnection(string) func() {
	c.open.Add(1)
	return func() { c.open.Add(-1) }
}

// TestObservedConnKeepsTheSocket: a connection ObserveConns accepted is
// counted until its first Close, and still reaches its socket, so the
// connection caps can peek at a request nobody has read yet (without it
// they would evict a kept-alive connection holding one).
func TestObservedConnKeepsTheSocket(t *testing.T) {
	raw, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	obs := &connCounter{}
	ln := streamable.ObserveConns(raw, obs)
	defer ln.Close()
	client, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if n := obs.open.Load(); n != 1 {
		t.Errorf("%d connections open after Accept, want 1", n)
	}
	if _, err := client.Write([]byte("POST /mcp HTTP/1.1\r\n")); err != nil {
		t.Fatal(err)
	}
	// The bytes reach the server's socket (on loopback, almost at once);
	// the patience only keeps a broken peek from hanging the test.
	deadline := time.Now().Add(10 * time.Second)
	for !netcap.HasUnread(c) {
		if time.Now().After(deadline) {
			t.Fatal("the request never showed as unread on the observed connection")
		}
		runtime.Gosched()
	}
	c.Close()
	c.Close()
	if n := obs.open.Load(); n != 0 {
		t.Errorf("%d connections open after two Closes, want 0", n)
	}
}
