// Package submit benchmarks agent_submit of the reference agent with and
// without a named conversation (docs/SPEC.md §2, §9): the same short turn,
// one model step answered at once, through the engine and adapters/stdio
// over an io.Pipe pair. It is a package of its own so that the bench
// table's in-process rows ("go test -bench ." in bench/) do not run it:
//
//	cd bench && go test -run '^$' -bench Submit ./submit/
package submit

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/bench/internal/servers"
	"github.com/agentmcp/agentmcp/ports"
)

// instantModel answers every step at once with a short text, as a model
// that needs no tool would: the turn's cost is agentmcp's.
type instantModel struct{}

func (instantModel) Step(context.Context, ports.ModelRequest) (ports.AssistantMessage, error) {
	return ports.AssistantMessage{Content: "done", FinishReason: "stop", Usage: &ports.TokenUsage{InputTokens: 20, OutputTokens: 1}}, nil
}

func (instantModel) Describe() ports.ModelDescription {
	return ports.ModelDescription{Model: "instant", Endpoint: "http://127.0.0.1/v1"}
}

// client is one stdio client of the served agent, one request at a time.
type client struct {
	w  io.Writer
	r  *bufio.Scanner
	id int
}

// open serves a fresh agent (the workspace on a temporary root, its
// conversations in memory) over stdio and initializes a 2025-11-25 client.
func open(tb testing.TB) *client {
	w, r, closeAll, err := servers.ServeAgentPipes(tb.TempDir(), workspace.NoResources, instantModel{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(closeAll)
	c := &client{w: w, r: r}
	c.roundTrip(tb, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	io.WriteString(c.w, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	return c
}

func (c *client) roundTrip(tb testing.TB, line string) string {
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		tb.Fatal(err)
	}
	if !c.r.Scan() {
		tb.Fatalf("no answer to %s", line)
	}
	return c.r.Text()
}

// submit runs one turn: args are agent_submit's arguments; the answer must
// be the model's text with its structured result.
func (c *client) submit(tb testing.TB, args string) {
	c.id++
	line := c.roundTrip(tb, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"agent_submit","arguments":%s}}`, c.id, args))
	var r struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
			SC      *struct {
				Response string `json:"response"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if json.Unmarshal([]byte(line), &r) != nil || len(r.Result.Content) != 1 || r.Result.Content[0].Text != "done" ||
		r.Result.SC == nil || r.Result.SC.Response != "done" {
		tb.Fatalf("agent_submit %s answered %s", args, line)
	}
}

// BenchmarkSubmitConversation times a short turn of the default
// conversation ({prompt}) and of a named one ({prompt, conversation}),
// interleaved in one loop on one server so both see the same machine and
// the same history length, and reports each one's time per turn and their
// ratio (named/default; the goal is within 5%, 0.95–1.05).
func BenchmarkSubmitConversation(b *testing.B) {
	c := open(b)
	const plain, named = `{"prompt":"say done"}`, `{"prompt":"say done","conversation":"bench-named"}`
	c.submit(b, plain) // warm both conversations
	c.submit(b, named)
	var tPlain, tNamed time.Duration
	n := 0
	for b.Loop() {
		first, second := plain, named
		if n%2 == 1 { // alternate which goes first
			first, second = named, plain
		}
		t0 := time.Now()
		c.submit(b, first)
		t1 := time.Now()
		c.submit(b, second)
		t2 := time.Now()
		if first == plain {
			tPlain, tNamed = tPlain+t1.Sub(t0), tNamed+t2.Sub(t1)
		} else {
			tNamed, tPlain = tNamed+t1.Sub(t0), tPlain+t2.Sub(t1)
		}
		n++
	}
	b.ReportMetric(float64(tPlain.Nanoseconds())/float64(n), "ns/default-turn")
	b.ReportMetric(float64(tNamed.Nanoseconds())/float64(n), "ns/named-turn")
	b.ReportMetric(float64(tNamed)/float64(tPlain), "named/default")
	b.ReportMetric(0, "ns/op")
}

// TestSubmitAnswers is the benchmark's check without timing (the module's
// smoke run): both submissions answer the model's text and a structured
// result, each in its own conversation.
func TestSubmitAnswers(t *testing.T) {
	c := open(t)
	for range 2 {
		c.submit(t, `{"prompt":"say done"}`)
		c.submit(t, `{"prompt":"say done","conversation":"bench-named"}`)
	}
}
