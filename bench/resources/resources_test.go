// Package resources benchmarks the reference session's server features
// beside the tools they stand next to (docs/SPEC.md §2): resources/read of
// a small workspace file beside tools/call read_file of the same file, and
// prompts/list beside tools/list. The session is the CLI's: the reference
// agent over the workspace, its files served through the file:// template
// (its conversations in memory, a model that is never asked), through the
// engine and adapters/stdio over an io.Pipe pair, on both eras. It is a
// package of its own so that the bench table's in-process rows
// ("go test -bench ." in bench/) do not run it:
//
//	cd bench && go test -run '^$' -bench Features -count 6 ./resources/
package resources

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/bench/internal/servers"
	"github.com/agentmcp/agentmcp/ports"
)

// fileText is the small file both reads read: the workspace rows' notes.txt.
const fileText = "hello world\n"

// silentModel is never asked: no request here submits a turn.
type silentModel struct{}

func (silentModel) Step(context.Context, ports.ModelRequest) (ports.AssistantMessage, error) {
	return ports.AssistantMessage{}, fmt.Errorf("the bench's model is never asked")
}

func (silentModel) Describe() ports.ModelDescription {
	return ports.ModelDescription{Model: "silent", Endpoint: "http://127.0.0.1/v1"}
}

// client is one stdio client of the served agent, one request at a time,
// on one era: a 2026-07-28 client stamps every request's _meta.
type client struct {
	w      io.Writer
	r      *bufio.Scanner
	id     int
	modern bool
	uri    string // the file's resource URI
	line   []byte
}

// open serves a fresh agent over a workspace holding notes.txt, as the CLI
// serves it locally (workspace.FileURIs), over stdio, and opens a client
// of era version (initialize for 2025-11-25; none for 2026-07-28).
func open(tb testing.TB, version string) *client {
	root := tb.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte(fileText), 0o644); err != nil {
		tb.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		tb.Fatal(err)
	}
	w, r, closeAll, err := servers.ServeAgentPipes(root, workspace.FileURIs, silentModel{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(closeAll)
	c := &client{w: w, r: r, modern: version == "2026-07-28", uri: "file://" + real + "/notes.txt"}
	if !c.modern {
		c.roundTrip(tb, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
		io.WriteString(c.w, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	}
	return c
}

// modernMeta is what a 2026-07-28 client's request carries in its params.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// request is the next request of method with params (members, without
// braces; "" for none), stamped for the client's era.
func (c *client) request(method, params string) []byte {
	c.id++
	b := append(c.line[:0], `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, int64(c.id), 10)
	b = append(append(append(b, `,"method":"`...), method...), `","params":{`...)
	b = append(b, params...)
	if c.modern {
		if params != "" {
			b = append(b, ',')
		}
		b = append(b, modernMeta...)
	}
	c.line = append(b, "}}\n"...)
	return c.line
}

func (c *client) roundTrip(tb testing.TB, line string) []byte {
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		tb.Fatal(err)
	}
	if !c.r.Scan() {
		tb.Fatalf("no answer to %s", line)
	}
	return c.r.Bytes()
}

// do sends one request and returns its answer (valid until the next).
func (c *client) do(tb testing.TB, method, params string) []byte {
	if _, err := c.w.Write(c.request(method, params)); err != nil {
		tb.Fatal(err)
	}
	if !c.r.Scan() {
		tb.Fatalf("no answer to %s", method)
	}
	return c.r.Bytes()
}

// The four requests, each with the check of its answer (run outside the
// timed part).
type op struct {
	name, method string
	params       func(c *client) string
	check        func(answer []byte) error
}

var (
	readResource = op{"resources/read", "resources/read",
		func(c *client) string { return `"uri":` + strconv.Quote(c.uri) },
		func(a []byte) error {
			var r struct {
				Result struct {
					Contents []struct{ URI, MIMEType, Text string }
				}
			}
			if json.Unmarshal(a, &r) != nil || len(r.Result.Contents) != 1 || r.Result.Contents[0].Text != fileText {
				return fmt.Errorf("resources/read answered %.300s", a)
			}
			return nil
		}}
	readFile = op{"read_file", "tools/call",
		func(*client) string { return `"name":"read_file","arguments":{"path":"notes.txt"}` },
		func(a []byte) error {
			var r struct {
				Result struct {
					Content []struct{ Text string }
					IsError bool
				}
			}
			if json.Unmarshal(a, &r) != nil || r.Result.IsError || len(r.Result.Content) != 1 {
				return fmt.Errorf("read_file answered %.300s", a)
			}
			var env struct {
				Success bool
				Result  struct{ Content string }
			}
			if json.Unmarshal([]byte(r.Result.Content[0].Text), &env) != nil || !env.Success || env.Result.Content != fileText {
				return fmt.Errorf("read_file's envelope is %.300s", r.Result.Content[0].Text)
			}
			return nil
		}}
	listPrompts = op{"prompts/list", "prompts/list",
		func(*client) string { return "" },
		func(a []byte) error {
			var r struct {
				Result struct{ Prompts []struct{ Name string } }
			}
			if json.Unmarshal(a, &r) != nil || len(r.Result.Prompts) != 3 || r.Result.Prompts[0].Name != "delegate" {
				return fmt.Errorf("prompts/list answered %.300s", a)
			}
			return nil
		}}
	listTools = op{"tools/list", "tools/list",
		func(*client) string { return "" },
		func(a []byte) error {
			var r struct {
				Result struct{ Tools []struct{ Name string } }
			}
			if json.Unmarshal(a, &r) != nil || len(r.Result.Tools) < 2 || r.Result.Tools[len(r.Result.Tools)-1].Name != "agent_submit" {
				return fmt.Errorf("tools/list answered %.300s", a)
			}
			return nil
		}}
)

// timed runs o once on c and returns how long its round trip took, after
// checking the answer.
func (c *client) timed(tb testing.TB, o op) time.Duration {
	params := o.params(c)
	t0 := time.Now()
	a := c.do(tb, o.method, params)
	d := time.Since(t0)
	if err := o.check(a); err != nil {
		tb.Fatal(err)
	}
	return d
}

// pair times a and b interleaved in one loop on one server, alternating
// which goes first, so both see the same machine; it reports each one's
// time per request and their ratio a/b.
func pair(b *testing.B, a, other op, ratio string) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		b.Run(version, func(b *testing.B) {
			c := open(b, version)
			c.timed(b, a) // warm both
			c.timed(b, other)
			var tA, tB time.Duration
			n := 0
			for b.Loop() {
				if n%2 == 0 {
					tA += c.timed(b, a)
					tB += c.timed(b, other)
				} else {
					tB += c.timed(b, other)
					tA += c.timed(b, a)
				}
				n++
			}
			b.ReportMetric(float64(tA.Nanoseconds())/float64(n), "ns/"+a.name)
			b.ReportMetric(float64(tB.Nanoseconds())/float64(n), "ns/"+other.name)
			b.ReportMetric(float64(tA)/float64(tB), ratio)
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkFeaturesRead times resources/read of notes.txt beside
// tools/call read_file of the same file and reports read/read_file (the
// goal: at most 1.2).
func BenchmarkFeaturesRead(b *testing.B) {
	pair(b, readResource, readFile, "read/read_file")
}

// BenchmarkFeaturesPromptsList times prompts/list beside tools/list and
// reports prompts/tools (the goal: at most 1, prompts/list at least as
// fast).
func BenchmarkFeaturesPromptsList(b *testing.B) {
	pair(b, listPrompts, listTools, "prompts/tools")
}

// TestFeaturesAnswers is the benchmarks' check without timing (the
// module's smoke run): on both eras every request the benchmarks time
// answers what its check wants, and a modern resources/read carries ttlMs
// 0.
func TestFeaturesAnswers(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		c := open(t, version)
		for range 2 {
			for _, o := range []op{readResource, readFile, listPrompts, listTools} {
				a := c.do(t, o.method, o.params(c))
				if err := o.check(a); err != nil {
					t.Fatalf("%s: %v", version, err)
				}
				if o.name == "resources/read" && bytes.Contains(a, []byte(`"ttlMs":0`)) != c.modern {
					t.Errorf("%s: resources/read answered %s; ttlMs 0 only on 2026-07-28", version, a)
				}
			}
		}
	}
}
