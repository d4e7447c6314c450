package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/ports"
	"github.com/agentmcp/agentmcp/transcript"
)

// boundedSession is the fake session with its progress tool capped at 16
// steps, so that a fuzzed {"n":1e9} does not turn into a false hang.
type boundedSession struct{ *fake.Session }

func (s boundedSession) InvokeTool(ctx context.Context, name string, args json.RawMessage, c ports.Caller) (domain.Envelope, error) {
	if name == "progress" {
		args = json.RawMessage(`{"n":16}`)
	}
	return s.Session.InvokeTool(ctx, name, args, c)
}

// FuzzDecode feeds arbitrary bytes to a stream (so a sequence can
// initialize, then send a batch, then cancel), then ends the input.
// ServeConn must never panic or hang; every write must be exactly one
// compact JSON-RPC message or batch answer; every id (and progressToken)
// written must be one the input carried, byte for byte; and once ServeConn
// has returned nothing more is written.
func FuzzDecode(f *testing.F) {
	for _, seed := range fuzzSeeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// A fresh session each time: the fake records every call.
		eng, err := engine.New(boundedSession{fake.New()}, engine.Options{Name: "fuzz", Version: "1"})
		if err != nil {
			t.Fatal(err)
		}
		w := &checkingWriter{t: t, input: data}
		served := make(chan error, 1)
		go func() {
			// A call left when the input ends is not waited for: the drain
			// ends at once and the call is cancelled (Shutdown below waits
			// for it). Waiting even a millisecond made every input holding
			// a slow call cost 1.8 ms instead of 0.1 ms, and the fuzzing
			// engine's minimization of a new-coverage input runs it up to
			// n²/2 times (n its length): at 1.8 ms a 2 KB input kept a worker
			// minimizing, reporting no execs, for the whole 60 s
			// -fuzzminimizetime.
			served <- eng.ServeConn(context.Background(), bytes.NewReader(data), w, engine.ConnOptions{DrainTimeout: time.Nanosecond})
		}()
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Fatal("ServeConn did not return")
		}
		w.mu.Lock()
		w.closed = true
		w.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := eng.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown: %v (calls still running)", err)
		}
	})
}

// checkingWriter checks every frame the engine writes.
type checkingWriter struct {
	t      *testing.T
	input  []byte
	mu     sync.Mutex
	closed bool
}

func (w *checkingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := bytes.TrimSuffix(p, []byte("\n"))
	if w.closed {
		w.t.Errorf("write after ServeConn returned: %s", b)
	}
	if err := transcript.CheckServerFrame(b); err != nil {
		w.t.Errorf("bad frame (%v): %q", err, b)
		return len(p), nil
	}
	for _, id := range writtenIDs(b) {
		if !bytes.Contains(w.input, id) {
			w.t.Errorf("id %s is not in the input byte for byte: %s", id, b)
		}
	}
	return len(p), nil
}

// writtenIDs returns the ids (raw) of the messages in a frame, and the
// progressTokens its notifications echo.
func writtenIDs(b []byte) []json.RawMessage {
	var msgs []map[string]json.RawMessage
	if b[0] == '[' {
		_ = json.Unmarshal(b, &msgs)
	} else {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(b, &m)
		msgs = append(msgs, m)
	}
	var ids []json.RawMessage
	for _, m := range msgs {
		if id, ok := m["id"]; ok {
			ids = append(ids, id)
		}
		// notifications/progress echoes the request's progressToken.
		var p struct {
			Token json.RawMessage `json:"progressToken"`
		}
		if raw, ok := m["params"]; ok && json.Unmarshal(raw, &p) == nil && p.Token != nil {
			ids = append(ids, p.Token)
		}
	}
	return ids
}

// fuzzSeeds are the client lines of every transcript, one seed each, plus
// the whole client section of each transcript as one multi-line seed.
func fuzzSeeds(f *testing.F) [][]byte {
	sections, err := transcript.ClientSections(filepath.Join("..", "..", "testdata", "transcripts"))
	if err != nil {
		f.Fatal(err)
	}
	seeds := [][]byte{
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}` + "\n" +
			`[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}]`),
		[]byte(`{"jsonrpc":"2.0","id":"<&>","method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"<p>"}}}`),
	}
	for _, lines := range sections {
		for _, line := range lines {
			seeds = append(seeds, []byte(line))
		}
		seeds = append(seeds, []byte(strings.Join(lines, "\n")))
	}
	return seeds
}
