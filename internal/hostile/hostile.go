// Package hostile holds misbehaving clients for tests of the carriers: the
// kinds of docs/SPEC.md §8's "nothing a client sends can block other
// clients indefinitely". Each runs on goroutines of its own until stopped,
// keeps all its traffic on the address it is given (tests give
// 127.0.0.1) and leaves no goroutine behind once Stop has returned.
package hostile

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Churner holds idle TCP connections to a server without ever sending a
// byte, and reconnects as each is closed: a process without credentials
// trying to take every connection slot.
type Churner struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	dialled atomic.Int64 // connections established
	closed  atomic.Int64 // connections the server closed
	first   chan struct{}
	once    sync.Once
	firsts  atomic.Int64
}

// Churn starts n connections to addr (host:port), each redialled as soon as
// the server closes it; with locals, n connections from each of those
// local addresses (loopback addresses other than 127.0.0.1 stand for other
// clients). A failed dial is retried after a millisecond.
func Churn(addr string, n int, locals ...netip.Addr) *Churner {
	ctx, cancel := context.WithCancel(context.Background())
	dialers := []*net.Dialer{{}}
	if len(locals) > 0 {
		dialers = nil
		for _, a := range locals {
			dialers = append(dialers, &net.Dialer{LocalAddr: &net.TCPAddr{IP: a.AsSlice()}})
		}
	}
	total := n * len(dialers)
	c := &Churner{cancel: cancel, first: make(chan struct{})}
	for _, d := range dialers {
		for range n {
			c.wg.Add(1)
			go c.run(ctx, d, addr, total)
		}
	}
	return c
}

func (c *Churner) run(ctx context.Context, d *net.Dialer, addr string, total int) {
	defer c.wg.Done()
	counted := false
	for ctx.Err() == nil {
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Millisecond):
			}
			continue
		}
		c.dialled.Add(1)
		if !counted {
			counted = true
			if c.firsts.Add(1) == int64(total) {
				c.once.Do(func() { close(c.first) })
			}
		}
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		// Never write; read until the server closes the connection.
		_, _ = io.Copy(io.Discard, conn)
		stop()
		conn.Close()
		if ctx.Err() == nil {
			c.closed.Add(1)
		}
	}
}

// Established is closed once every one of the n connections was
// established at least once (the kernel completes a connection before the
// server accepts it, so this does not say the server took them).
func (c *Churner) Established() <-chan struct{} { return c.first }

// Dialled is how many connections were established so far.
func (c *Churner) Dialled() int64 { return c.dialled.Load() }

// Closed is how many connections the server closed so far.
func (c *Churner) Closed() int64 { return c.closed.Load() }

// Stop closes every connection and waits for the churner's goroutines.
func (c *Churner) Stop() {
	c.cancel()
	c.wg.Wait()
}

// SmallReceiveBuffer is the receive buffer a [Dial]led client asks for:
// the kernel rounds it up to its minimum, a few KiB.
const SmallReceiveBuffer = 1024

// DialSmall connects to addr with a small receive buffer set before the
// connection is made (so the window the server sees is small from the
// start).
func DialSmall(ctx context.Context, addr string) (*net.TCPConn, error) {
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = setRecvBuf(fd, SmallReceiveBuffer)
		})
		return errors.Join(err, serr)
	}}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

// Loop runs one misbehaving client: f over and over on its own goroutine
// until Stop. f gets a context that Stop cancels.
type Loop struct {
	cancel context.CancelFunc
	done   chan struct{}
	rounds atomic.Int64
	errs   atomic.Int64
}

// Repeat starts f in a loop.
func Repeat(f func(ctx context.Context) error) *Loop {
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loop{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for ctx.Err() == nil {
			if err := f(ctx); err != nil && ctx.Err() == nil {
				l.errs.Add(1)
			}
			l.rounds.Add(1)
		}
	}()
	return l
}

// Rounds is how many times f has returned; Errors how many of those with
// an error.
func (l *Loop) Rounds() int64 { return l.rounds.Load() }
func (l *Loop) Errors() int64 { return l.errs.Load() }

// Stop cancels f and waits for the loop to end.
func (l *Loop) Stop() {
	l.cancel()
	<-l.done
}

// NeverRead connects to addr with a tiny receive buffer, writes request
// (a whole HTTP request whose answer is large) and never reads; after hold
// it closes the connection. Use it with Repeat.
func NeverRead(ctx context.Context, addr string, request []byte, hold time.Duration) error {
	c, err := DialSmall(ctx, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Write(request); err != nil {
		return err
	}
	t := time.NewTimer(hold)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

// Abandon sends req with c on a goroutine of its own, for a client that
// goes away (cancels req's context) while the request waits for its
// answer. The channel receives Do's error: nil means an answer came after
// all.
func Abandon(c *http.Client, req *http.Request) <-chan error {
	left := make(chan error, 1)
	go func() {
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		left <- err
	}()
	return left
}

// CheckNotLockedOut checks that idle connections do not lock a token
// holder out (docs/SPEC.md §5.2, §5.3: "a few seconds"). Once churn's
// connections are established (within guard), it sends five requests,
// each built by request on a new connection, and fails t unless each is
// answered 200 within bound.
func CheckNotLockedOut(t testing.TB, churn *Churner, request func(context.Context) *http.Request, bound, guard time.Duration) {
	t.Helper()
	select {
	case <-churn.Established():
	case <-time.After(guard):
		t.Fatal("the idle connections were not established")
	}
	for i := range 5 {
		tr := &http.Transport{DisableKeepAlives: true}
		client := &http.Client{Transport: tr}
		ctx, cancel := context.WithTimeout(t.Context(), 4*bound)
		begin := time.Now()
		resp, err := client.Do(request(ctx))
		took := time.Since(begin)
		if err != nil {
			cancel()
			t.Fatalf("request %d: %v after %v (%d idle connections closed so far)", i, err, took.Round(time.Millisecond), churn.Closed())
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
		if took > bound {
			t.Errorf("request %d took %v with idle connections churning, want ≤ %v", i, took.Round(time.Millisecond), bound)
		}
		t.Logf("request %d answered in %v; %d idle connections closed so far", i, took.Round(time.Millisecond), churn.Closed())
	}
}

// SendAndLeave writes b on c and closes it at once, the way a client that
// sends a request and goes away does. On Linux the data and the close
// leave in one TCP segment (TCP_CORK), so the server finds the end of the
// connection queued behind the request the moment it reads it: the race
// between the server's answer and the client's leaving is decided for the
// client, every run. Elsewhere it is a write and a close.
func SendAndLeave(c *net.TCPConn, b []byte) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = cork(fd) }); err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	if _, err := c.Write(b); err != nil {
		return err
	}
	return c.Close()
}
