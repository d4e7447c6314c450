package stdio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/stdio"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/enginetest"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
	"github.com/agentmcp/agentmcp/ports"
)

// askMeta is a 2026-07-28 request's _meta declaring form elicitation, so
// its calls run under input-required rounds when asking is on.
const askMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`

func heldCall(id, args string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"slow","arguments":` + args + `,` + askMeta + `}}`
}

func cancelled(id string) string {
	return `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `,"reason":"user"}}`
}

// askPipes are pipes whose output end the test can close.
type askPipes struct {
	*pipes
	outW *io.PipeWriter
}

// askingTransport serves s over stdio with asking on.
func askingTransport(t *testing.T, s ports.Session) askPipes {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	eng := enginetest.New(t, s, engine.Options{AskClient: true}, 10*time.Second)
	tr, err := stdio.New(eng, stdio.Options{Stdin: inR, Stdout: outW})
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	t.Cleanup(func() { inW.Close(); outR.Close() })
	if err := tr.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return askPipes{&pipes{in: inW, out: sc, tr: tr}, outW}
}

// awaitCtxEnd waits for the held tool's context to end after
// notifications/cancelled named its call, and checks the call was not
// ended as shutting down.
func awaitCtxEnd(t *testing.T, s *fake.Held) {
	t.Helper()
	enginetest.AwaitCtxEnd(t, s, 5*time.Second, "notifications/cancelled")
}

// noneWritten fails t for each of lines that holds idField (`"id":7`): a
// cancelled call's id must never be written.
func noneWritten(t *testing.T, lines []string, idField, what string) {
	t.Helper()
	for _, l := range lines {
		if strings.Contains(l, idField) {
			t.Errorf("written for the cancelled %s: %s", what, l)
		}
	}
}

// rest closes the input, waits for the transport and returns every line
// written after what was read so far.
func (p askPipes) rest(t *testing.T) []string {
	t.Helper()
	lines := make(chan []string, 1)
	go func() {
		var out []string
		for p.out.Scan() {
			out = append(out, p.out.Text())
		}
		lines <- out
	}()
	p.in.Close()
	if err := p.tr.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.tr.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	// Wait has returned: nothing more is written. Close the pipe so the
	// scanner ends.
	p.outW.Close()
	return <-lines
}

// TestCancelledUnderAskingEndsTheCall: with asking on, a 2026-07-28
// tools/call declaring elicitation runs on a context of its own (it may be
// parked in a round). notifications/cancelled naming it ends the tool's
// context at once, not as shutting down, and nothing is ever written for
// its id (docs/SPEC.md §3, §6; K5).
func TestCancelledUnderAskingEndsTheCall(t *testing.T) {
	leakcheck.Check(t)
	s := fake.NewHeld()
	started := s.Started()
	p := askingTransport(t, s)
	p.send(t, heldCall("7", `{}`))
	<-started
	p.send(t, cancelled("7"))
	awaitCtxEnd(t, s)
	s.Let()
	<-s.Returned()
	p.send(t, `{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	if m := p.recv(t); m["id"] != 8.0 {
		t.Fatalf("answer %v, want ping's (id 8)", m)
	}
	noneWritten(t, p.rest(t), `"id":7`, "id")
}

// TestCancelledParkedChainEndsTheCall: a call parked in a round (its prompt
// answered input_required; no request waits for it) ends at once when
// notifications/cancelled names the chain's latest id.
func TestCancelledParkedChainEndsTheCall(t *testing.T) {
	leakcheck.Check(t)
	s := fake.NewHeld()
	started := s.Started()
	p := askingTransport(t, s)
	p.send(t, heldCall("9", `{"ask":true}`))
	<-started
	m := p.recv(t)
	r, _ := m["result"].(map[string]any)
	if m["id"] != 9.0 || r["resultType"] != "input_required" {
		t.Fatalf("answer %v, want input_required for id 9", m)
	}
	p.send(t, cancelled("9"))
	<-s.Asked() // the prompt settled closed
	awaitCtxEnd(t, s)
	s.Let()
	<-s.Returned()
	noneWritten(t, p.rest(t), `"id":9`, "chain")
}

// TestCancelledCallCountsUntilItReturns: on a stream with one request in
// flight at most, a cancelled call whose tool is slow to return keeps its
// place: a tools/call meanwhile is refused as busy; once the goroutine has
// returned, calls are served again (docs/SPEC.md §4, §5.2).
func TestCancelledCallCountsUntilItReturns(t *testing.T) {
	leakcheck.Check(t)
	s := fake.NewHeld()
	started := s.Started()
	eng, err := engine.New(s, engine.Options{AskClient: true})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- eng.ServeConn(context.Background(), inR, outW, engine.ConnOptions{MaxInFlight: 1})
	}()
	out := bufio.NewScanner(outR)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	echo := func(id string) string {
		send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
		if !out.Scan() {
			t.Fatalf("no answer: %v", out.Err())
		}
		var m struct {
			ID     json.RawMessage
			Result struct {
				Content []struct{ Text string }
				IsError bool
			}
		}
		if err := json.Unmarshal(out.Bytes(), &m); err != nil || string(m.ID) != id || len(m.Result.Content) != 1 {
			t.Fatalf("answer %s, want the tool result for id %s", out.Bytes(), id)
		}
		if m.Result.IsError {
			return m.Result.Content[0].Text
		}
		return ""
	}
	send(heldCall("1", `{}`))
	<-started
	send(cancelled("1"))
	awaitCtxEnd(t, s)
	if got := echo("2"); got != "server is busy" {
		t.Fatalf("a call while the cancelled one has not returned: %q, want server is busy", got)
	}
	s.Let()
	<-s.Returned()
	deadline := time.Now().Add(5 * time.Second)
	for i := 3; ; i++ {
		got := echo(strings.Repeat("3", i))
		if got == "" {
			break
		}
		if got != "server is busy" || time.Now().After(deadline) {
			t.Fatalf("after the cancelled call returned: %q, want the echo", got)
		}
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Errorf("ServeConn: %v", err)
	}
	outW.Close()
	if err := eng.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}
