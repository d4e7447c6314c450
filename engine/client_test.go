package engine_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/enginetest"
)

// client is a test's end of one engine.ServeConn stream, over io.Pipes (so
// it also runs inside a synctest bubble).
type client struct {
	t      testing.TB
	in     *io.PipeWriter
	out    chan []byte
	cancel context.CancelFunc
	done   chan error
}

func newClient(t testing.TB, e *engine.Engine) *client {
	return newClientOpts(t, e, engine.ConnOptions{})
}

// newClientOpts serves a stream with opts until the test ends: its input is
// then closed (an end of input, so a drain) and the stream's end awaited.
func newClientOpts(t testing.TB, e *engine.Engine, opts engine.ConnOptions) *client {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	c := &client{t: t, in: inW, out: make(chan []byte, 256), cancel: cancel, done: make(chan error, 1)}
	opts.Close = inR.Close
	go func() {
		c.done <- e.ServeConn(ctx, inR, outW, opts)
		outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			c.out <- append([]byte(nil), sc.Bytes()...)
		}
		close(c.out)
		io.Copy(io.Discard, outR)
	}()
	t.Cleanup(func() {
		c.in.Close()
		c.cancel()
		<-c.done
	})
	return c
}

func (c *client) send(line string) {
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Errorf("send: %v", err)
	}
}

// stop ends serving as a carrier's Stop does (ServeConn's ctx) and returns
// ServeConn's result.
func (c *client) stop() error {
	c.cancel()
	err := <-c.done
	c.done <- err // for the cleanup
	return err
}

// recv returns the next message the engine wrote, decoded.
func (c *client) recv() map[string]any {
	c.t.Helper()
	select {
	case b, ok := <-c.out:
		if !ok {
			c.t.Fatal("the stream ended")
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			c.t.Fatalf("not JSON: %s", b)
		}
		return m
	case <-time.After(10 * time.Second):
		c.t.Fatal("no message from the engine")
		return nil
	}
}

// emptyIndex fails t unless e's call index is empty: nothing a client
// could no longer reach is left named (docs/ARCHITECTURE.md "A call's
// life").
func emptyIndex(t testing.TB, e *engine.Engine) {
	t.Helper()
	if s := e.Stats(); s != (engine.Stats{}) {
		t.Errorf("the call index holds %+v, want it empty", s)
	}
}

// shutdown shuts e down, failing the test if calls are left running or
// anything is left in its call index (enginetest.Shutdown).
func shutdown(t testing.TB, e *engine.Engine) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := enginetest.Shutdown(ctx, e); err != nil {
		t.Error(err)
	}
}

// waitCalls waits until n more calls of name have returned from the
// session (ended is the fake's Ended channel, taken before serving).
func waitCalls(t testing.TB, ended <-chan string, name string, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for n > 0 {
		select {
		case got := <-ended:
			if got == name {
				n--
			}
		case <-deadline:
			t.Fatalf("the session's %s call did not return", name)
		}
	}
}
