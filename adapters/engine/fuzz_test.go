package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/engine"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/transcript"
	"github.com/agentmcp/agentmcp/ports"
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

// FuzzDecode feeds arbitrary bytes to a stream, one frame per line (so a
// sequence can initialize, then send a batch, then cancel). Handle must never
// panic or block; every write must be exactly one compact JSON-RPC message or
// batch answer; every id (and progressToken) written must be one the input
// carried, byte for byte; and once Stop has returned (it must, promptly)
// nothing more is written.
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
		var mu sync.Mutex
		stopped := false
		send := func(b []byte) error {
			mu.Lock()
			defer mu.Unlock()
			if stopped {
				t.Errorf("write after Stop returned: %s", b)
			}
			if err := transcript.CheckServerFrame(b); err != nil {
				t.Errorf("bad frame (%v): %q", err, b)
				return nil
			}
			for _, id := range writtenIDs(b) {
				if !bytes.Contains(data, id) {
					t.Errorf("id %s is not in the input byte for byte: %s", id, b)
				}
			}
			return nil
		}
		s := eng.NewStream(send, engine.StreamOptions{})
		handled := make(chan struct{})
		go func() {
			defer close(handled)
			for line := range bytes.SplitSeq(data, []byte("\n")) {
				s.Handle(line)
			}
		}()
		select {
		case <-handled:
		case <-time.After(10 * time.Second):
			t.Fatal("Handle blocked")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Fatalf("Stop: %v (calls still running)", err)
		}
		mu.Lock()
		stopped = true
		mu.Unlock()
	})
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
	paths, err := filepath.Glob(filepath.Join("..", "..", "testdata", "transcripts", "*.txt"))
	if err != nil {
		f.Fatal(err)
	}
	seeds := [][]byte{
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}` + "\n" +
			`[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}},{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}]`),
		[]byte(`{"jsonrpc":"2.0","id":"<&>","method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"<p>"}}}`),
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		_, rest, _ := strings.Cut(string(data), "-- client --\n")
		client, _, _ := strings.Cut(rest, "-- server --\n")
		var all []string
		for line := range strings.SplitSeq(client, "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			seeds = append(seeds, []byte(line))
			all = append(all, line)
		}
		seeds = append(seeds, []byte(strings.Join(all, "\n")))
	}
	return seeds
}
