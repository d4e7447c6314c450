package stdio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/stdio"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/hostile"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
	"github.com/agentmcp/agentmcp/internal/load"
)

// mux is a client end of a stdio stream shared by many goroutines: each
// request waits for the answer with its id.
type mux struct {
	w       io.Writer
	writeMu sync.Mutex
	mu      sync.Mutex
	waiting map[string]chan []byte
	strays  []string // answers nobody waits for (a cancelled id answered)
}

func (m *mux) send(line string) error {
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	_, err := io.WriteString(m.w, line+"\n")
	return err
}

// call sends line (whose id is id) and waits for its answer.
func (m *mux) call(ctx context.Context, id, line string) ([]byte, error) {
	ch := make(chan []byte, 1)
	m.mu.Lock()
	m.waiting[id] = ch
	m.mu.Unlock()
	if err := m.send(line); err != nil {
		return nil, err
	}
	select {
	case b := <-ch:
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// read dispatches every line of r to whoever waits for its id.
func (m *mux) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var a struct{ ID json.RawMessage }
		line := append([]byte(nil), sc.Bytes()...)
		_ = json.Unmarshal(line, &a)
		id := strings.Trim(string(a.ID), `"`)
		m.mu.Lock()
		ch := m.waiting[id]
		delete(m.waiting, id)
		if ch == nil {
			m.strays = append(m.strays, string(line))
		}
		m.mu.Unlock()
		if ch != nil {
			ch <- line
		}
	}
}

// TestLoad: 64 clients share one stdio stream and send 10⁵ tools/call, 5 %
// of them malformed (answered -32600 with their id), while a client on the
// same stream abandons input-required rounds and cancels calls it started.
// Every answer is checked: no valid call refused as busy, none answered
// wrongly, nothing ever written for a cancelled id; afterwards no goroutine
// is left and the live heap is back within 10 % (docs/SPEC.md §4, §5.1,
// §8). The stream's in-flight bound is 128 here so the 64 clients and the
// misbehaving one fit (the default, 64, would refuse the 65th).
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	goroutines := leakcheck.Snapshot()
	eng, err := engine.New(load.Session{}, engine.Options{AskClient: true})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tr, err := stdio.New(eng, stdio.Options{Stdin: inR, Stdout: outW, MaxInFlight: 128})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	m := &mux{w: inW, waiting: make(map[string]chan []byte)}
	readDone := make(chan struct{})
	go func() { defer close(readDone); m.read(outR) }()

	var round int
	misbehave := func() func() string {
		abandons := hostile.Repeat(func(ctx context.Context) error {
			round++
			id := fmt.Sprintf("a-%d", round)
			b, err := m.call(ctx, id, `{"jsonrpc":"2.0","id":"`+id+`","method":"tools/call","params":{"name":"write","arguments":{"text":"x"},`+askMeta+`}}`)
			if err != nil || !strings.Contains(string(b), `"input_required"`) {
				return fmt.Errorf("write: %s %v", b, err)
			}
			// Never retried. Then a call it cancels while it runs: nothing
			// may ever be written for its id (the reader counts strays).
			sid := fmt.Sprintf("s-%d", round)
			if err := m.send(`{"jsonrpc":"2.0","id":"` + sid + `","method":"tools/call","params":{"name":"slow","arguments":{},` + askMeta + `}}`); err != nil {
				return err
			}
			return m.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"` + sid + `"}}`)
		})
		return func() string {
			abandons.Stop()
			if abandons.Rounds() == 0 || abandons.Errors() > 0 {
				t.Errorf("the misbehaving client did not run as meant: %d rounds, %d failed", abandons.Rounds(), abandons.Errors())
			}
			return fmt.Sprintf("%d abandoned rounds and cancelled calls", abandons.Rounds())
		}
	}
	call := func(ctx context.Context, client, seq int) (load.Outcome, string) {
		text := fmt.Sprintf("c%d-s%d", client, seq)
		id := fmt.Sprint(seq)
		if seq%20 == 0 {
			b, err := m.call(ctx, id, `{"jsonrpc":"1.0","id":`+id+`,"method":"tools/call","params":{"name":"echo"}}`)
			var a struct {
				ID    json.RawMessage
				Error *struct{ Code int }
			}
			if err != nil || json.Unmarshal(b, &a) != nil || string(a.ID) != id || a.Error == nil || a.Error.Code != engine.CodeInvalidRequest {
				return load.Wrong, fmt.Sprintf("malformed: %s %v", b, err)
			}
			return load.OK, ""
		}
		b, err := m.call(ctx, id, load.EchoCall(seq, text, seq%2 == 1))
		if err != nil {
			return load.Wrong, err.Error()
		}
		if strings.Contains(string(b), "server is busy") {
			return load.Refused, "server is busy"
		}
		return load.JudgeEcho(b, seq, text)
	}
	// 10⁵ calls; a tenth under the race detector, which slows each several
	// times, so the suite stays quick.
	total := load.Requests(100_000, 10_000)
	rep := load.Scenario{Name: "stdio", Clients: load.Clients, Total: total, Call: call, Misbehave: misbehave, Idle: func() {}}.Run(t)
	inW.Close()
	if err := tr.Wait(); err != nil {
		t.Errorf("Wait: %v", err)
	}
	outW.Close()
	<-readDone
	load.Stop(t, load.Stopper{What: "engine Shutdown", Stop: eng.Shutdown})
	goroutines.Verify(t)
	rep.Check(t, "stdio", total)
	if len(m.strays) > 0 {
		t.Errorf("%d answers nobody asked for (a cancelled id answered?): %q", len(m.strays), m.strays[:min(3, len(m.strays))])
	}
}
