package stdio_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/stdio"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/transcript"
)

// lineSink is the carrier's stdout: it records what is written and flags
// any write after Wait returned.
type lineSink struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
	closed bool
	late   []byte
}

func (w *lineSink) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		w.late = append(w.late, p...)
		return 0, errors.New("closed")
	}
	w.writes++
	w.buf.Write(p)
	return len(p), nil
}

// FuzzFraming writes arbitrary bytes into a real stdio transport's stdin and
// closes it. The transport must never panic; Wait must return nil; stdout
// must hold only whole lines, each one compact JSON-RPC message (or batch
// answer), one per write; nothing may be written after Wait returned. The
// line bound is fuzzed too (0 means the 4 MiB default) so that oversize
// lines are read past at every offset.
func FuzzFraming(f *testing.F) {
	for _, seed := range framingSeeds(f) {
		f.Add(seed, uint16(0))
		f.Add(seed, uint16(16))
	}
	f.Add([]byte("\n\n\r\n   \n"), uint16(1))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), uint16(0))
	f.Add([]byte(strings.Repeat("a", 300)+"\n"+`{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n"), uint16(64))
	f.Fuzz(func(t *testing.T, data []byte, maxLine uint16) {
		inR, inW := io.Pipe()
		out := &lineSink{}
		tr, err := stdio.New(newEngine(t, fake.NewQuick(4)), stdio.Options{Stdin: inR, Stdout: out, MaxLineBytes: int(maxLine)})
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		go func() {
			_, _ = inW.Write(data)
			_ = inW.Close()
		}()
		waited := make(chan error, 1)
		go func() { waited <- tr.Wait() }()
		select {
		case err := <-waited:
			if err != nil {
				t.Fatalf("Wait = %v, want nil", err)
			}
		case <-time.After(20 * time.Second):
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = tr.Stop(ctx)
			t.Fatal("Wait did not return after stdin closed")
		}
		out.mu.Lock()
		out.closed = true
		written, writes := out.buf.Bytes(), out.writes
		out.mu.Unlock()

		if len(written) > 0 && written[len(written)-1] != '\n' {
			t.Errorf("stdout does not end with a newline: %q", tail(written))
		}
		lines := bytes.Split(bytes.TrimSuffix(written, []byte("\n")), []byte("\n"))
		if len(written) == 0 {
			lines = nil
		}
		if len(lines) != writes {
			t.Errorf("%d lines in %d writes: a message must be one whole line per write", len(lines), writes)
		}
		for _, l := range lines {
			if err := transcript.CheckServerFrame(l); err != nil {
				t.Errorf("stdout line is not one JSON-RPC message (%v): %q", err, tail(l))
			}
		}
		// A goroutine that outlived Wait and wrote meanwhile lands here.
		out.mu.Lock()
		late := out.late
		out.mu.Unlock()
		if len(late) > 0 {
			t.Errorf("written after Wait returned: %q", tail(late))
		}
	})
}

func tail(b []byte) []byte {
	if len(b) > 300 {
		return b[:300]
	}
	return b
}

// framingSeeds: the client section of every transcript as one byte stream
// (directives dropped), so the fuzzer starts from real exchanges.
func framingSeeds(f *testing.F) [][]byte {
	sections, err := transcript.ClientSections(filepath.Join("..", "..", "testdata", "transcripts"))
	if err != nil {
		f.Fatal(err)
	}
	var seeds [][]byte
	for _, lines := range sections {
		var b strings.Builder
		for _, line := range lines {
			b.WriteString(line + "\n")
		}
		seeds = append(seeds, []byte(b.String()))
	}
	return seeds
}
