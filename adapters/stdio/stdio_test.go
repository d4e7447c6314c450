package stdio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentmcp/agentmcp/adapters/stdio"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/enginetest"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
	"github.com/agentmcp/agentmcp/ports"
)

// pipes is a client's end of a stdio transport under test.
type pipes struct {
	in  *io.PipeWriter // the client writes requests here
	out *bufio.Scanner // and reads answers here
	tr  *stdio.Transport
}

func newTransport(t *testing.T, s ports.Session, opts stdio.Options) *pipes {
	t.Helper()
	leakcheck.Check(t) // first: its cleanup runs after the transport's and the engine's
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	opts.Stdin, opts.Stdout = inR, outW
	tr, err := stdio.New(newEngine(t, s), opts)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	t.Cleanup(func() { inW.Close(); outR.Close() })
	return &pipes{in: inW, out: sc, tr: tr}
}

// newEngine builds the engine for s and shuts it down when the test ends.
func newEngine(t testing.TB, s ports.Session) *engine.Engine {
	t.Helper()
	return enginetest.New(t, s, engine.Options{}, 10*time.Second)
}

func (p *pipes) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		t.Fatalf("write %s: %v", line, err)
	}
}

func (p *pipes) recv(t *testing.T) map[string]any {
	t.Helper()
	if !p.out.Scan() {
		t.Fatalf("no answer: %v", p.out.Err())
	}
	var m map[string]any
	if err := json.Unmarshal(p.out.Bytes(), &m); err != nil {
		t.Fatalf("answer is not JSON: %q", p.out.Text())
	}
	return m
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// The lifecycle is carriertest's (carriertest_test.go); stdio's own are
// below: frames kept during start-up, stdin ending then, the 15 s bound.

func TestNewNeedsAnEngine(t *testing.T) {
	if _, err := stdio.New(nil, stdio.Options{}); err == nil {
		t.Error("New without an engine succeeded")
	}
}

// gate is a session whose RuntimeTools blocks until released, so start-up
// can be observed in progress.
type gate struct {
	*fake.Session
	entered chan struct{}
	open    chan struct{}
}

func newGate() *gate {
	return &gate{Session: fake.New(), entered: make(chan struct{}, 1), open: make(chan struct{})}
}

func (g *gate) RuntimeTools(ctx context.Context) ([]domain.Tool, error) {
	select {
	case g.entered <- struct{}{}:
	default:
	}
	select {
	case <-g.open:
		return g.Session.RuntimeTools(ctx)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func TestFramesDuringStartupAreKept(t *testing.T) {
	g := newGate()
	p := newTransport(t, g, stdio.Options{})
	started := make(chan error, 1)
	go func() { started <- p.tr.Start(context.Background()) }()
	<-g.entered
	p.send(t, initialize) // arrives while the catalog is being validated
	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	close(g.open)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if m := p.recv(t); m["id"] != 1.0 || m["result"] == nil {
		t.Errorf("first answer = %v, want initialize's result", m)
	}
	if m := p.recv(t); m["id"] != 2.0 {
		t.Errorf("second answer = %v, want ping's", m)
	}
	p.in.Close()
	if err := p.tr.Wait(); err != nil {
		t.Errorf("Wait after EOF = %v", err)
	}
}

func TestInputClosedDuringStartup(t *testing.T) {
	g := newGate()
	p := newTransport(t, g, stdio.Options{})
	started := make(chan error, 1)
	go func() { started <- p.tr.Start(context.Background()) }()
	<-g.entered
	p.in.Close()
	if err := <-started; !errors.Is(err, engine.ErrInputClosed) {
		t.Errorf("Start = %v, want ErrInputClosed", err)
	}
}

func TestStartIsBoundedTo15s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate()
		p := newTransport(t, g, stdio.Options{})
		begin := time.Now()
		err := p.tr.Start(context.Background())
		if !errors.Is(err, engine.ErrStartTimeout) {
			t.Fatalf("Start = %v, want ErrStartTimeout", err)
		}
		if d := time.Since(begin); d != 15*time.Second {
			t.Errorf("Start gave up after %v, want 15s", d)
		}
		p.in.Close()
	})
}

func TestCatalogViolationFailsStart(t *testing.T) {
	s := fake.New()
	s.SetTools([]domain.Tool{{Name: "agent_submit", InputSchema: json.RawMessage(`{"type":"object"}`)}})
	p := newTransport(t, s, stdio.Options{})
	var ce *domain.CatalogError
	if err := p.tr.Start(context.Background()); !errors.As(err, &ce) || ce.Message != "Duplicate or reserved MCP tool name: agent_submit" {
		t.Errorf("Start = %v, want the reserved-name catalog error", err)
	}
}

// brokenWriter fails every write, like a stdout whose reader went away.
type brokenWriter struct{}

func (brokenWriter) Write([]byte) (int, error) { return 0, errors.New("output pipe closed") }

func TestBrokenStdoutIsACarrierFailure(t *testing.T) {
	inR, inW := io.Pipe()
	defer inW.Close()
	tr, _ := stdio.New(newEngine(t, fake.New()), stdio.Options{Stdin: inR, Stdout: brokenWriter{}})
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(inW, initialize+"\n"); err != nil {
		t.Fatal(err)
	}
	err := tr.Wait()
	if err == nil || !strings.Contains(err.Error(), "output pipe closed") {
		t.Errorf("Wait = %v, want the write failure", err)
	}
}

// slowCallInFlight starts a transport, initializes it, and leaves the fake
// session's slow tool running under request id.
func slowCallInFlight(t *testing.T, id int) (*pipes, *fake.Session) {
	t.Helper()
	s := fake.New()
	started := s.Started()
	p := newTransport(t, s, stdio.Options{})
	if err := p.tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.send(t, initialize)
	p.recv(t)
	p.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow"}}`, id))
	<-started
	return p, s
}

// TestStopAnswersShuttingDown: a call in flight at Stop is cancelled and
// answered with the shutting-down tool error; Stop returns once it ended.
func TestStopAnswersShuttingDown(t *testing.T) {
	p, _ := slowCallInFlight(t, 9)
	answer := make(chan map[string]any, 1)
	go func() { answer <- p.recv(t) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.tr.Stop(ctx); err != nil {
		t.Fatalf("Stop = %v", err)
	}
	m := <-answer
	res, _ := m["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if m["id"] != 9.0 || res["isError"] != true || len(content) != 1 || content[0].(map[string]any)["text"] != "server is shutting down" {
		t.Errorf("answer = %v, want the shutting-down tool error for id 9", m)
	}
}

// TestEOFLetsCallsFinish: after stdin ends, a call in flight may still
// finish and write its answer; Wait then returns nil.
func TestEOFLetsCallsFinish(t *testing.T) {
	p, s := slowCallInFlight(t, 4)
	p.in.Close()
	s.Release()
	m := p.recv(t)
	res, _ := m["result"].(map[string]any)
	if m["id"] != 4.0 || res["isError"] != false {
		t.Errorf("answer after EOF = %v, want the call's own result", m)
	}
	if err := p.tr.Wait(); err != nil {
		t.Errorf("Wait = %v", err)
	}
}

// TestEOFGraceIsBounded: a call that ignores the end of input is cancelled
// after the 5 s grace, and Wait still returns nil.
func TestEOFGraceIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := fake.New()
		started := s.Started()
		p := newTransport(t, s, stdio.Options{})
		go func() {
			for p.out.Scan() {
			}
		}()
		if err := p.tr.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		p.send(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"slow"}}`)
		<-started
		begin := time.Now()
		p.in.Close()
		if err := p.tr.Wait(); err != nil {
			t.Errorf("Wait = %v", err)
		}
		if d := time.Since(begin); d != 5*time.Second {
			t.Errorf("Wait returned after %v, want the 5s grace", d)
		}
	})
}

// TestPipedInputThenEOFDuringStartup: a client that writes its requests and
// closes stdin while the catalog is still being validated gets every answer,
// the calls' real results (not "shutting down"), then Wait returns nil.
func TestPipedInputThenEOFDuringStartup(t *testing.T) {
	g := newGate()
	p := newTransport(t, g, stdio.Options{})
	started := make(chan error, 1)
	go func() { started <- p.tr.Start(context.Background()) }()
	<-g.entered
	p.send(t, initialize)
	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
	p.send(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"hi"}}}`)
	p.in.Close()
	close(g.open)
	if err := <-started; err != nil {
		t.Fatalf("Start = %v, want the early frames served", err)
	}
	got := map[float64]string{}
	for range 3 {
		m := p.recv(t)
		b, _ := json.Marshal(m["result"])
		got[m["id"].(float64)] = string(b)
	}
	if !strings.Contains(got[2], `\"success\":true`) || !strings.Contains(got[3], "echo: hi") {
		t.Errorf("answers = %v, want the calls' own results", got)
	}
	if err := p.tr.Wait(); err != nil {
		t.Errorf("Wait = %v", err)
	}
}

// TestEmptyInputNeverStopsStartUp: with stdin empty, start-up either sees
// the end of input first (ErrInputClosed) or finishes first, and then
// serving ends at once; it is never reported as stopped, which nobody
// asked for (the CLI would exit 1 for a client that merely closed its
// end). Whichever finishes first is up to the scheduler, so it is tried
// many times.
func TestEmptyInputNeverStopsStartUp(t *testing.T) {
	eng := newEngine(t, fake.New())
	for range 5000 {
		tr, err := stdio.New(eng, stdio.Options{Stdin: strings.NewReader(""), Stdout: io.Discard})
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Start(t.Context()); err != nil && !errors.Is(err, engine.ErrInputClosed) {
			t.Fatalf("Start = %v, want nil or ErrInputClosed", err)
		}
		if err := tr.Wait(); err != nil {
			t.Fatalf("Wait = %v, want nil (the input ended)", err)
		}
	}
}
