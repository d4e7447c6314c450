package streamable

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/waitfor"
	"github.com/agentmcp/agentmcp/ports"
)

// eventWriter is a response writer that reports its header and each
// write and, when stall is set, blocks every write until stall is closed.
type eventWriter struct {
	header http.Header
	writes chan string
	stall  chan struct{}
}

func newEventWriter(stall chan struct{}) *eventWriter {
	return &eventWriter{header: http.Header{}, writes: make(chan string, 64), stall: stall}
}

func (w *eventWriter) Header() http.Header { return w.header }
func (w *eventWriter) WriteHeader(int)     { w.report(w.header.Get("Content-Type")) }
func (w *eventWriter) Flush()              {}
func (w *eventWriter) Write(b []byte) (int, error) {
	if w.stall != nil {
		<-w.stall
	}
	w.report(string(b))
	return len(b), nil
}

func (w *eventWriter) report(s string) {
	select {
	case w.writes <- s:
	default: // the test reads only the first few
	}
}

func newTestResponder(w *eventWriter) *responder {
	return &responder{w: w, out: stallWriter{w: w, rc: *http.NewResponseController(w), stall: time.Minute}}
}

// TestSSEClockTicks drives a Handler's clock by hand (its own timer is
// hours away): a response's stream starts SSEAfter's ticks plus one after
// it was added, its keep-alives come every KeepAlive's ticks, a removed
// response is no longer timed, and the clock disarms once nothing is in
// flight.
func TestSSEClockTicks(t *testing.T) {
	c := newSSEClock(8*time.Hour, 16*time.Hour) // a tick of one hour
	c.dispatch = c.tickOne                      // in line: each fire has written when it returns
	if c.startIn != 9 || c.keepEvery != 16 {
		t.Fatalf("startIn %d, keepEvery %d: want 9 and 16", c.startIn, c.keepEvery)
	}
	w := newEventWriter(nil)
	r := newTestResponder(w)
	c.add(r)
	// Nothing is written until its tick, then exactly one thing.
	expect := func(ticks uint64, want string) {
		t.Helper()
		for range ticks - 1 {
			c.fire()
			select {
			case got := <-w.writes:
				t.Fatalf("wrote %q a tick or more early", got)
			default:
			}
		}
		c.fire()
		select {
		case got := <-w.writes:
			if got != want {
				t.Fatalf("wrote %q, want %q", got, want)
			}
		default:
			t.Fatalf("nothing written after %d ticks, want %q", ticks, want)
		}
	}
	expect(c.startIn, "text/event-stream")
	expect(c.keepEvery, ": keep-alive\n\n")
	expect(c.keepEvery, ": keep-alive\n\n")

	c.remove(r)
	for range c.keepEvery {
		c.fire()
	}
	select {
	case got := <-w.writes:
		t.Fatalf("wrote %q after remove", got)
	default:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.head != nil || c.armed {
		t.Fatalf("after remove: head %p, armed %v: want empty and disarmed", c.head, c.armed)
	}
}

// TestSSEClockStalledClient: a response whose client stopped reading
// (its keep-alive write blocks) does not hold up another's keep-alives.
func TestSSEClockStalledClient(t *testing.T) {
	c := newSSEClock(time.Millisecond, time.Millisecond)
	stall := make(chan struct{})
	stalled := newTestResponder(newEventWriter(stall))
	live := newEventWriter(nil)
	other := newTestResponder(live)
	c.add(stalled)
	c.add(other)
	defer func() {
		c.remove(stalled)
		c.remove(other)
		close(stall)
	}()
	keepAlives := 0
	for keepAlives < 3 {
		if got := waitfor.Value(t, live.writes, 5*time.Second, "the live response's keep-alives"); strings.HasPrefix(got, ": keep-alive") {
			keepAlives++
		}
	}
	// The stalled response has one tick under way, blocked in its write,
	// and no more queued behind it.
	base := runtime.NumGoroutine()
	for range 20 {
		if got := waitfor.Value(t, live.writes, 5*time.Second, "more keep-alives"); !strings.HasPrefix(got, ": keep-alive") {
			t.Fatalf("wrote %q, want keep-alives", got)
		}
	}
	if n := runtime.NumGoroutine(); n > base+2 {
		t.Fatalf("%d goroutines after 20 more ticks, %d before: ticks pile up behind the stalled write", n, base)
	}
}

// panicSession has one tool; panicObserver panics when a request starts.
// The engine recovers a session's panics (docs/SPEC.md §1 "A session that
// panics"), so the panic that escapes a call here is an Observer's.
type panicSession struct{}

func (panicSession) RuntimeTools(context.Context) ([]domain.Tool, error) {
	return []domain.Tool{{Name: "panic", Description: "Panics", InputSchema: json.RawMessage(`{"type":"object"}`)}}, nil
}
func (panicSession) InvokeTool(context.Context, string, json.RawMessage, ports.Caller) (domain.Envelope, error) {
	return domain.Envelope{Success: true, ToolName: "panic"}, nil
}
func (panicSession) Submit(context.Context, ports.Submission, ports.Caller) (ports.TurnResult, error) {
	return ports.TurnResult{}, ports.Refused("no turns")
}

type panicObserver struct{ ports.NopObserver }

func (panicObserver) StartRequest(context.Context, ports.ObservedRequest) (context.Context, func(ports.RequestEnd)) {
	panic("the observer broke")
}

// TestPanickingCallLeavesTheClock: a call that panics (net/http recovers
// it) leaves the SSE clock like any other, and the clock disarms: no tick
// writes to the abandoned response later.
func TestPanickingCallLeavesTheClock(t *testing.T) {
	eng, err := engine.New(panicSession{}, engine.Options{Observer: panicObserver{}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHandler(eng, Options{SSEAfter: time.Hour, KeepAlive: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"panic","arguments":{}}}`
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the call did not panic")
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), r)
	}()
	h.sse.fire()
	h.sse.mu.Lock()
	defer h.sse.mu.Unlock()
	if h.sse.head != nil || h.sse.armed {
		t.Fatalf("after the panic: head %p, armed %v: want the response gone and the clock disarmed", h.sse.head, h.sse.armed)
	}
}
