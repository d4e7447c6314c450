package httpremote_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/httpremote"
	"github.com/agentmcp/agentmcp/internal/hostile"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
)

// lockoutBound is how long a token holder may wait while idle connections
// fill the host (docs/SPEC.md §5.2, §5.3: "a few seconds").
const lockoutBound = 3 * time.Second

// counter counts hook calls and closes reached once n have happened.
type counter struct {
	n       int64
	count   atomic.Int64
	reached chan struct{}
	once    sync.Once
}

func newCounter(n int64) *counter { return &counter{n: n, reached: make(chan struct{})} }

func (c *counter) hit() {
	if c.count.Add(1) >= c.n {
		c.once.Do(func() { close(c.reached) })
	}
}

// addrs returns n loopback addresses 127.3.<block>.1 … n: n other clients.
func addrs(block byte, n int) []netip.Addr {
	var out []netip.Addr
	for i := range n {
		out = append(out, netip.AddrFrom4([4]byte{127, 3, block, byte(i + 1)}))
	}
	return out
}

// TestIdleConnectionsDoNotLockOutTokenHolders: clients without a token hold
// 400 idle connections from 20 addresses (the caps are 256 in all and 16
// per address) and reconnect as each is closed; a token holder's request
// on a new connection is still answered within a few seconds, again and
// again (docs/SPEC.md §5.3).
func TestIdleConnectionsDoNotLockOutTokenHolders(t *testing.T) {
	leakcheck.Check(t)
	e := start(t, config{})
	churn := hostile.Churn(e.addr.String(), 20, addrs(0, 20)...)
	defer churn.Stop()
	hostile.CheckNotLockedOut(t, churn, func(ctx context.Context) *http.Request {
		return e.request(ctx, "POST", e.res.path, ping, "Authorization", "Bearer "+validToken)
	}, lockoutBound, guard)
}

// TestAnAddressAtItsCapChurnsItsOwn: one address holding far more idle
// connections than its cap of 16 only ever has its own connections closed
// to make room (none refused); another client's kept-alive connection is
// never closed for it and stays usable (docs/SPEC.md §5.3).
func TestAnAddressAtItsCapChurnsItsOwn(t *testing.T) {
	leakcheck.Check(t)
	evictions := newCounter(500)
	var refused atomic.Int64
	e := start(t, config{limits: httpremote.Limits{
		OnConnEvicted: evictions.hit,
		OnConnRefused: func() { refused.Add(1) },
	}})
	mine := openConn(t, e, netip.MustParseAddr("127.0.0.1"))
	churn := hostile.Churn(e.addr.String(), 100, addrs(1, 1)...)
	defer churn.Stop()
	select {
	case <-evictions.reached:
	case <-time.After(4 * guard):
		t.Fatalf("only %d idle connections were closed for newcomers", evictions.count.Load())
	}
	if n := refused.Load(); n != 0 {
		t.Errorf("%d connections refused, want none: an address at its cap churns its own idle connections", n)
	}
	// The kept-alive connection of another address is still open and usable.
	_ = mine.SetDeadline(time.Now().Add(guard))
	if _, err := io.WriteString(mine, "GET "+e.res.metadataPath+" HTTP/1.1\r\nHost: "+e.res.host+"\r\n\r\n"); err != nil {
		t.Fatalf("the other client's connection: %v", err)
	}
	if status := readStatus(t, mine); status != 200 {
		t.Fatalf("the other client's kept-alive connection: status %d, want 200", status)
	}
}

// readStatus reads one response from c and returns its status (0: none).
func readStatus(t *testing.T, c net.Conn) int {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Logf("no response: %v", err)
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
