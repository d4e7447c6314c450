package stdio_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/stdio"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
)

// pingOf returns a ping with id that is exactly n bytes long (padded in
// params).
func pingOf(id, n int) string {
	head := `{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"ping","params":{"pad":"`
	tail := `"}}`
	return head + strings.Repeat("a", n-len(head)-len(tail)) + tail
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestLineBoundIgnoresTheLineEnding: the line bound counts the message, not
// its line ending (docs/SPEC.md §4 "stdio framing"; K4): a message of
// exactly the bound is served whether it ends in LF or CR LF; one byte more
// is -32600 with no id, and the stream goes on. Checked at the default
// bound (4 MiB) and at a small one.
func TestLineBoundIgnoresTheLineEnding(t *testing.T) {
	for _, bound := range []int{0, 300} {
		t.Run(itoa(bound), func(t *testing.T) {
			leakcheck.Check(t)
			n := bound
			if n == 0 {
				n = 4 << 20
			}
			p := newTransport(t, fake.New(), stdio.Options{MaxLineBytes: bound})
			if err := p.tr.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			cases := []struct {
				name, frame string
				id          int // 0: the answer is -32600 with no id
			}{
				{"exactly the bound, CR LF", pingOf(1, n) + "\r\n", 1},
				{"exactly the bound, LF", pingOf(2, n) + "\n", 2},
				{"one more, CR LF", pingOf(3, n+1) + "\r\n", 0},
				{"one more, LF", pingOf(4, n+1) + "\n", 0},
				{"one less, CR LF", pingOf(5, n-1) + "\r\n", 5},
			}
			for _, c := range cases {
				if len(strings.TrimRight(c.frame, "\r\n")) < n-1 {
					t.Fatalf("%s: frame of %d bytes", c.name, len(c.frame))
				}
				go func() { _, _ = p.in.Write([]byte(c.frame)) }()
				m := p.recv(t)
				if c.id != 0 {
					if m["id"] != float64(c.id) || m["result"] == nil {
						t.Errorf("%s: answer %v, want ping's result for id %d", c.name, m, c.id)
					}
					continue
				}
				e, _ := m["error"].(map[string]any)
				if _, has := m["id"]; has || e == nil || e["code"] != float64(engine.CodeInvalidRequest) {
					t.Errorf("%s: answer %v, want -32600 with no id", c.name, m)
				}
			}
			p.in.Close()
			if err := p.tr.Wait(); err != nil {
				t.Errorf("Wait: %v", err)
			}
		})
	}
}
