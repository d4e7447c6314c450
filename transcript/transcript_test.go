package transcript_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentmcp/agentmcp/adapters/stdio"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/ports"
	"github.com/agentmcp/agentmcp/transcript"
)

func mustParse(t *testing.T, text string) *transcript.File {
	t.Helper()
	f, err := transcript.Parse("test.txt", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestParse(t *testing.T) {
	f := mustParse(t, `What it pins.
rows: a b
rows: c
ignore: result._meta error.data
bug: something is wrong
ask-client: on
-- client --
{"jsonrpc":"2.0","id":1,"method":"ping"}

# a comment
#raw "\r\n"
#fill 4MiB+1 a
#repeat 3 {"id":{{n}}}
#wait 1
#wait "a"
#wait-idless
#wait-started slow 2
#wait-ended submit
#release
#set-tools [{"name":"x","description":"","inputSchema":{"type":"object"}}]
#answer elicitation/create {"action":"decline"}
#answer-error elicitation/create {"code":-32603,"message":"no UI"}
#wait-request elicitation/create
{"id":3,"params":{"requestState":"{{state 1}}","other":"{{state "a" tampered}}"}}
#close
-- server --
#absent 14
{"jsonrpc":"2.0",
 "id":1,"result":{}}
{"jsonrpc":"2.0","method":"x"}
#calls slow echo
`)
	if got, want := strings.Join(f.Rows, " "), "a b c"; got != want {
		t.Errorf("rows %q, want %q", got, want)
	}
	if got := strings.Join(f.Ignore, " "); got != "result._meta error.data" {
		t.Errorf("ignore %q", got)
	}
	if len(f.Bugs) != 1 {
		t.Errorf("bugs %q", f.Bugs)
	}
	var kinds []string
	for _, s := range f.Steps {
		kinds = append(kinds, s.Kind)
	}
	want := "send send fill send send send wait wait wait-idless wait-started wait-ended release set-tools answer answer-error wait-request send close"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("steps\n got %s\nwant %s", got, want)
	}
	if s := f.Steps[1]; string(s.Data) != "\r\n" {
		t.Errorf("#raw: %q", s.Data)
	}
	if s := f.Steps[2]; s.N != 4<<20+1 || s.Arg != "a" {
		t.Errorf("#fill: %d %q", s.N, s.Arg)
	}
	if s := f.Steps[4]; string(s.Data) != "{\"id\":2}\n" {
		t.Errorf("#repeat: %q", s.Data)
	}
	if s := f.Steps[7]; s.Arg != `"a"` {
		t.Errorf("#wait \"a\": %q", s.Arg)
	}
	if s := f.Steps[9]; s.Arg != "slow" || s.N != 2 {
		t.Errorf("#wait-started: %q %d", s.Arg, s.N)
	}
	if !f.AskClient {
		t.Error("ask-client: on not parsed")
	}
	if s := f.Steps[14]; s.Arg != "elicitation/create" || string(s.Data) != `{"code":-32603,"message":"no UI"}` {
		t.Errorf("#answer-error: %q %s", s.Arg, s.Data)
	}
	if s := f.Steps[15]; s.Arg != "elicitation/create" {
		t.Errorf("#wait-request: %q", s.Arg)
	}
	want2 := []transcript.StateRef{{Text: "{{state 1}}", ID: "1", Member: "requestState"}, {Text: `{{state "a" tampered}}`, ID: `"a"`, Tampered: true, Member: "requestState"}}
	if s := f.Steps[16]; len(s.States) != 2 || s.States[0] != want2[0] || s.States[1] != want2[1] {
		t.Errorf("state references: %+v, want %+v", s.States, want2)
	}
	if len(f.Server) != 2 || strings.Join(f.Absent, " ") != "14" || strings.Join(f.Calls, " ") != "echo slow" || !f.HasCalls {
		t.Errorf("server: %d messages, absent %q, calls %q", len(f.Server), f.Absent, f.Calls)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"no comment", "-- client --\n-- server --\n", "starts with a comment"},
		{"no server", "c\n-- client --\n", "want a client and a server section"},
		{"unknown section", "c\n-- client --\n-- tools --\n", "unknown section"},
		{"duplicate section", "c\n-- client --\n-- client --\n", "duplicate section"},
		{"server first", "c\n-- server --\n-- client --\n", "must follow"},
		{"unknown directive", "c\n-- client --\n#sleep 1\n-- server --\n", "unknown client directive"},
		{"bad raw", "c\n-- client --\n#raw abc\n-- server --\n", "Go-quoted"},
		{"bad fill", "c\n-- client --\n#fill lots a\n-- server --\n", "#fill"},
		{"bad wait", "c\n-- client --\n#wait abc\n-- server --\n", "#wait"},
		{"bad server json", "c\n-- client --\n-- server --\n{\"a\":\n", "server section"},
		{"unknown server directive", "c\n-- client --\n-- server --\n#wait 1\n", "unknown server directive"},
		{"carriage return", "c\r\rx\n-- client --\n-- server --\n", "carriage return"},
		{"bad ask-client", "c\nask-client: yes\n-- client --\n-- server --\n", "ask-client: wants on or off"},
		{"state without wait", "c\n-- client --\n#wait 2\n{\"s\":\"{{state 1}}\"}\n-- server --\n", "needs a #wait 1 before it"},
		{"state before its wait", "c\n-- client --\n{\"s\":\"{{state 1}}\"}\n#wait 1\n-- server --\n", "needs a #wait 1 before it"},
		{"state malformed", "c\n-- client --\n#wait 1\n{\"s\":\"{{state 1 twice}}\"}\n-- server --\n", "malformed {{state"},
		{"state no id", "c\n-- client --\n{\"s\":\"{{state}}\"}\n-- server --\n", "malformed {{state"},
		{"state bad id", "c\n-- client --\n{\"s\":\"{{state abc}}\"}\n-- server --\n", "want an id"},
		{"answer-error not an object", "c\n-- client --\n#answer-error elicitation/create [1]\n-- server --\n", "#answer-error wants"},
		{"answer-error no JSON", "c\n-- client --\n#answer-error elicitation/create\n-- server --\n", "#answer-error wants"},
		{"wait-request no method", "c\n-- client --\n#wait-request\n-- server --\n", "#wait-request wants"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := transcript.Parse("x.txt", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestCompare proves the matcher can fail: every mutation of a matching
// output must be reported.
func TestCompare(t *testing.T) {
	f := mustParse(t, `c
ignore: result.volatile
-- client --
{"jsonrpc":"2.0","id":1,"method":"ping"}
{"jsonrpc":"2.0","id":2,"method":"ping"}
-- server --
#absent 9
{"jsonrpc":"2.0","id":1,"result":{"volatile":1}}
{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}
{"jsonrpc":"2.0","id":2,"result":{}}
{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}
{"jsonrpc":"2.0","id":"a","result":{}}
#calls echo
`)
	ok := []string{
		`{"jsonrpc":"2.0","id":2,"result":{}}`,
		`{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`,
		`{"id":1,"jsonrpc":"2.0","result":{"volatile":2}}`,
		`{"jsonrpc":"2.0","id":"a","result":{}}`,
	}
	res := func(msgs ...string) transcript.Result {
		r := transcript.Result{Calls: []string{"echo"}}
		for _, m := range msgs {
			r.Messages = append(r.Messages, []byte(m))
		}
		return r
	}
	if p := transcript.Compare(f, res(ok...)); len(p) != 0 {
		t.Fatalf("a matching output (ids in another order, ignored member changed) reported: %q", p)
	}
	for _, tc := range []struct {
		name string
		res  transcript.Result
		want string
	}{
		{"id-less order", res(ok[0], ok[2], ok[1], ok[3], ok[4]), "without an id"},
		{"missing", res(ok[0], ok[1], ok[2], ok[4]), "missing message with id 1"},
		{"extra", res(append(ok, `{"jsonrpc":"2.0","id":3,"result":{}}`)...), "unexpected message with id 3"},
		{"extra id-less", res(append(ok, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"x"}}`)...), "unexpected message without an id"},
		{"id not an integer", res(strings.Replace(ok[0], `"id":2`, `"id":2.0`, 1), ok[1], ok[2], ok[3], ok[4]), "neither a string nor an integer"},
		{"id not byte for byte", res(ok[0], ok[1], ok[2], ok[3], `{"jsonrpc":"2.0","id":"\u0061","result":{}}`), `with id "\u0061"`},
		{"string id for an integer", res(strings.Replace(ok[0], `"id":2`, `"id":"2"`, 1), ok[1], ok[2], ok[3], ok[4]), `with id "2"`},
		{"value differs", res(strings.Replace(ok[0], `{}`, `{"x":1}`, 1), ok[1], ok[2], ok[3], ok[4]), "differs"},
		{"number text differs", res(ok[0], ok[1], strings.Replace(ok[2], `1}`, `1.0}`, 1), ok[3], ok[4]), "differs"},
		{"not a JSON-RPC message", res(append(ok, `{"jsonrpc":"2.0","id":5}`)...), "exactly one of result and error"},
		{"absent id answered", res(append(ok, `{"jsonrpc":"2.0","id":9,"result":{}}`)...), "must never be answered"},
		{"calls", transcript.Result{Messages: res(ok...).Messages, Calls: []string{"echo", "slow"}}, "the session's calls"},
		{"not compact", res(strings.Replace(ok[0], `,`, `, `, 1), ok[1], ok[2], ok[3], ok[4]), "not one compact JSON-RPC message"},
		{"not JSON", res(append(ok, `hello`)...), "not one compact JSON-RPC message"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := transcript.Compare(f, tc.res)
			if !strings.Contains(strings.Join(p, "\n"), tc.want) {
				t.Errorf("problems %q, want one mentioning %q", p, tc.want)
			}
		})
	}
}

func TestUpdateOrder(t *testing.T) {
	f := mustParse(t, `c
-- client --
{"jsonrpc":"2.0","id":"a","method":"ping"}
[{"jsonrpc":"2.0","id":"b","method":"ping"}]
{"jsonrpc":"2.0","id":"c","method":"ping"}
-- server --
`)
	in := []string{
		`{"id":"c"}`, `{"id":"a"}`, `{"error":1}`, `{"id":"z"}`, `{"id":"c","n":2}`, `{"id":"b"}`,
	}
	var msgs [][]byte
	for _, m := range in {
		msgs = append(msgs, []byte(m))
	}
	var got []string
	for _, m := range transcript.UpdateOrder(f, msgs) {
		got = append(got, string(m))
	}
	want := `{"id":"a"} {"id":"c"} {"error":1} {"id":"b"} {"id":"c","n":2} {"id":"z"}`
	if strings.Join(got, " ") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, " "), want)
	}
}

// TestStdioRunCanFail plays real exchanges through the stdio carrier with
// wrong expectations and checks the runner notices each.
func TestStdioRunCanFail(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"wrong result", `c
-- client --
{"jsonrpc":"2.0","id":1,"method":"ping"}
-- server --
{"jsonrpc":"2.0","id":1,"result":{"x":1}}
`, "differs"},
		{"answer expected absent", `c
-- client --
{"jsonrpc":"2.0","id":1,"method":"ping"}
-- server --
#absent 1
{"jsonrpc":"2.0","id":1,"result":{}}
`, "must never be answered"},
		{"missing answer", `c
-- client --
{"jsonrpc":"2.0","method":"ping"}
-- server --
{"jsonrpc":"2.0","id":1,"result":{}}
`, "missing message"},
		{"session called", `c
-- client --
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}
-- server --
{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"success\":true,\"toolName\":\"echo\",\"result\":{},\"executionId\":\"exec-1\"}"}],"isError":false}}
#calls
`, "the session's calls"},
		// Without ask-client: on the carrier serves with AskClient off, so
		// the elicitation this transcript expects never comes.
		{"ask-client off", `c
-- client --
{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":{}}}
#wait 1
-- server --
{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}},"serverInfo":{"name":"agentmcp-test","version":"1.2.3"}}}
{"jsonrpc":"2.0","id":"srv-1","method":"elicitation/create","params":{"mode":"form","message":"Allow the tool \"write\" to run once?\n\"write text\"","requestedSchema":{"type":"object","properties":{"decision":{"type":"string","title":"Decision","oneOf":[{"const":"allow_once","title":"Allow once"},{"const":"deny","title":"Deny"}]}},"required":["decision"]}}}
{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"success\":false,\"toolName\":\"write\",\"error\":\"Permission denied\"}"}],"isError":true}}
`, `missing message request with id "srv-1"`},
		// With it, a modern write is parked; a transcript expecting the
		// closed answer fails.
		{"ask-client on", `c
ask-client: on
-- client --
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}
#wait 1
-- server --
{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"{\"success\":false,\"toolName\":\"write\",\"error\":\"Permission denied\"}"}],"isError":true,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"agentmcp-test","version":"1.2.3"}}}}
`, `input_required`},
		{"state of another round", `c
ask-client: on
-- client --
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}
#wait 1
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write","arguments":{},"requestState":"{{state 1 tampered}}","inputResponses":{"prompt":{"action":"accept","content":{"decision":"allow_once"}}},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}
#wait 2
-- server --
{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{"prompt":{"method":"elicitation/create","params":{"mode":"form","message":"Allow the tool \"write\" to run once?\n\"write text\"","requestedSchema":{"type":"object","properties":{"decision":{"type":"string","title":"Decision","oneOf":[{"const":"allow_once","title":"Allow once"},{"const":"deny","title":"Deny"}]}},"required":["decision"]}}}},"requestState":"{{requestState}}","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"agentmcp-test","version":"1.2.3"}}}}
{"jsonrpc":"2.0","id":2,"result":{"resultType":"complete","content":[{"type":"text","text":"{\"success\":true,\"toolName\":\"write\"}"}],"isError":false,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"agentmcp-test","version":"1.2.3"}}}}
`, `-32602`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustParse(t, tc.text)
			synctest.Test(t, func(t *testing.T) {
				res, err := transcript.Play(t, stdioCarrier, f, transcript.Options{Timeout: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				p := transcript.Compare(f, res)
				if !strings.Contains(strings.Join(p, "\n"), tc.want) {
					t.Errorf("problems %q, want one mentioning %q", p, tc.want)
				}
			})
		})
	}
}

// TestStdioRunTimesOut checks that a wait that can never be satisfied fails
// the run (after the fake timeout) instead of hanging, and that the runner
// still stops the server.
func TestStdioRunTimesOut(t *testing.T) {
	for _, step := range []string{"#wait 1", "#wait-started slow", "#wait-ended echo", "#wait-idless", "#wait-request elicitation/create", "#answer elicitation/create {}"} {
		t.Run(step, func(t *testing.T) {
			f := mustParse(t, "c\n-- client --\n{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n"+step+"\n-- server --\n")
			synctest.Test(t, func(t *testing.T) {
				_, err := transcript.Play(t, stdioCarrier, f, transcript.Options{Timeout: time.Minute})
				if err == nil || !strings.Contains(err.Error(), "timed out") {
					t.Errorf("err = %v, want a timeout", err)
				}
			})
		})
	}
}

// TestOversizeLineMemory is docs/SPEC.md K4's memory half: 64 MiB of "a" on one line are
// read past, not buffered; the allocation during the exchange stays far
// below the line's size, and the next line is served.
func TestOversizeLineMemory(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	eng, err := engine.New(fake.New(), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := stdio.New(eng, stdio.Options{Stdin: inR, Stdout: outW})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()

	const lineSize = 64 << 20
	chunk := []byte(strings.Repeat("a", 64<<10))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sendErr := make(chan error, 1)
	go func() {
		for n := 0; n < lineSize; n += len(chunk) {
			if _, err := inW.Write(chunk); err != nil {
				sendErr <- err
				return
			}
		}
		_, err := io.WriteString(inW, "\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n")
		sendErr <- err
	}()
	for _, want := range []string{
		`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: message exceeds the line limit of 4194304 bytes (4 MiB)"}}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
	} {
		select {
		case got := <-lines:
			var g, w any
			if json.Unmarshal([]byte(got), &g) != nil || json.Unmarshal([]byte(want), &w) != nil || !jsonEqual(g, w) {
				t.Errorf("got %s, want %s", got, want)
			}
		case <-time.After(time.Minute):
			t.Fatal("no answer within a minute")
		}
	}
	runtime.ReadMemStats(&after)
	if err := <-sendErr; err != nil {
		t.Fatal(err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d KiB while reading past a %d MiB line (heap in use %d KiB)", alloc>>10, lineSize>>20, after.HeapInuse>>10)
	// Filling the 4 MiB line buffer by append allocates about 20 MiB in all
	// (large slices grow by 1.25x); buffering the 64 MiB line would allocate
	// several times 64 MiB.
	if alloc > 40<<20 {
		t.Errorf("allocated %d MiB while reading past a 64 MiB line: the line is being buffered", alloc>>20)
	}
	inW.Close()
	if err := tr.Wait(); err != nil {
		t.Errorf("Wait = %v, want nil", err)
	}
	outW.Close()
	for range lines {
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// scriptedCarrier is a stand-in server for testing the runner itself: it
// sends one server-to-client request, then answers each line it receives
// with {"jsonrpc":"2.0","id":"echo","result":{"got":<line>}}.
type scriptedCarrier struct{}

func (scriptedCarrier) Name() string { return "scripted" }

func (scriptedCarrier) Connect(testing.TB, ports.Session, transcript.Config) (transcript.Conn, error) {
	c := newLineConn(func(line string) []byte {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "echo", "result": map[string]string{"got": line}})
		return b
	})
	c.out <- []byte(`{"jsonrpc":"2.0","id":"srv-1","method":"elicitation/create","params":{}}`)
	return c, nil
}

// lineConn is a stand-in connection for the test carriers: each whole line
// sent is passed to answer, whose reply, unless nil, is the next message
// received. CloseSend and Abort end the messages; Wait returns after that.
type lineConn struct {
	answer func(line string) []byte
	out    chan []byte
	done   chan struct{}
	once   sync.Once
	buf    []byte
}

func newLineConn(answer func(line string) []byte) *lineConn {
	return &lineConn{answer: answer, out: make(chan []byte, 16), done: make(chan struct{})}
}

func (c *lineConn) Send(p []byte) error {
	c.buf = append(c.buf, p...)
	for {
		line, rest, ok := strings.Cut(string(c.buf), "\n")
		if !ok {
			return nil
		}
		c.buf = []byte(rest)
		if b := c.answer(line); b != nil {
			c.out <- b
		}
	}
}
func (c *lineConn) CloseSend() error { c.end(); return nil }
func (c *lineConn) end()             { c.once.Do(func() { close(c.out); close(c.done) }) }
func (c *lineConn) Recv() ([]byte, error) {
	b, ok := <-c.out
	if !ok {
		return nil, io.EOF
	}
	return b, nil
}
func (c *lineConn) Wait() error { <-c.done; return nil }
func (c *lineConn) Abort()      { c.end() }

// TestAnswerDirective checks that #answer replies to the server's request
// with its own id, and that server requests are matched by id.
func TestAnswerDirective(t *testing.T) {
	f := mustParse(t, `c
-- client --
#answer elicitation/create {"action":"decline"}
-- server --
{"jsonrpc":"2.0","id":"srv-1","method":"elicitation/create","params":{}}
{"jsonrpc":"2.0","id":"echo","result":{"got":"{\"id\":\"srv-1\",\"jsonrpc\":\"2.0\",\"result\":{\"action\":\"decline\"}}"}}
`)
	res, err := transcript.Play(t, scriptedCarrier{}, f, transcript.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if p := transcript.Compare(f, res); len(p) != 0 {
		t.Errorf("%q", p)
	}
	f.Server[1] = json.RawMessage(strings.Replace(string(f.Server[1]), "decline", "accept", 1))
	if p := transcript.Compare(f, res); len(p) == 0 {
		t.Error("a wrong answer was not noticed")
	}
}

// token returns a valid requestState: 32 bytes of b, base64url.
func token(b byte) string {
	return base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32))
}

// TestTokenPlaceholder proves "{{requestState}}" in an expected message
// accepts any well-formed, fresh token and nothing else.
func TestTokenPlaceholder(t *testing.T) {
	f := mustParse(t, `c
-- client --
-- server --
{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":"{{requestState}}"}}
{"jsonrpc":"2.0","id":2,"result":{"resultType":"input_required","requestState":"{{requestState}}"}}
`)
	msg := func(id int, state string) []byte {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"result":{"resultType":"input_required","requestState":%q}}`, id, state)
	}
	res := func(msgs ...[]byte) transcript.Result { return transcript.Result{Messages: msgs} }
	if p := transcript.Compare(f, res(msg(1, token(1)), msg(2, token(2)))); len(p) != 0 {
		t.Fatalf("two fresh tokens reported: %q", p)
	}
	for _, tc := range []struct {
		name string
		res  transcript.Result
		want string
	}{
		{"same token twice", res(msg(1, token(1)), msg(2, token(1))), "minted 2 times"},
		{"too short", res(msg(1, token(1)[:42]), msg(2, token(2))), "differs"},
		{"padded", res(msg(1, token(1)+"="), msg(2, token(2))), "differs"},
		{"standard base64", res(msg(1, "+"+token(1)[1:]), msg(2, token(2))), "differs"},
		{"not canonical", res(msg(1, token(1)[:42]+"B"), msg(2, token(2))), "differs"},
		{"missing", res([]byte(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}`), msg(2, token(2))), "differs"},
		{"not a string", res([]byte(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","requestState":7}}`), msg(2, token(2))), "differs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := transcript.Compare(f, tc.res)
			if !strings.Contains(strings.Join(p, "\n"), tc.want) {
				t.Errorf("problems %q, want one mentioning %q", p, tc.want)
			}
		})
	}
	if transcript.ValidToken(token(1)[:42]+"B") || !transcript.ValidToken(token(1)) {
		t.Error("ValidToken accepts a non-canonical token or refuses a canonical one")
	}
}

func TestMaskTokens(t *testing.T) {
	in := `{"id":1,"result":{"requestState":"` + token(7) + `","note":"` + token(8) + `"}}`
	want := `{"id":1,"result":{"requestState":"{{requestState}}","note":"` + token(8) + `"}}`
	if got := string(transcript.MaskTokens(json.RawMessage(in))); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	bad := `{"result":{"requestState":"` + token(7)[:42] + `B"}}`
	if got := string(transcript.MaskTokens(json.RawMessage(bad))); got != bad {
		t.Errorf("a malformed token was masked: %s", got)
	}
}

// tokenCarrier is a stand-in server for testing {{state ID}}: it answers
// each line {"id":ID,...} with {"jsonrpc":"2.0","id":ID,"result":{
// "requestState":mint(n),"got":<line>}} (n counts from 1); mint returning
// "" leaves requestState out. It records the Config it was given.
type tokenCarrier struct {
	mint func(n int) string
	cfg  *transcript.Config
}

func (tokenCarrier) Name() string { return "token" }

func (c tokenCarrier) Connect(_ testing.TB, _ ports.Session, cfg transcript.Config) (transcript.Conn, error) {
	if c.cfg != nil {
		*c.cfg = cfg
	}
	n := 0
	return newLineConn(func(line string) []byte {
		var m struct{ ID json.RawMessage }
		if json.Unmarshal([]byte(line), &m) != nil {
			return nil
		}
		n++
		r := map[string]any{"got": line}
		if tok := c.mint(n); tok != "" {
			r["requestState"] = tok
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": r})
		return b
	}), nil
}

// gotOf returns what the token carrier saw for the last message with id.
func gotOf(t *testing.T, res transcript.Result, id string) string {
	t.Helper()
	var line string
	for _, m := range res.Messages {
		var v struct {
			ID     json.RawMessage
			Result struct{ Got string }
		}
		if json.Unmarshal(m, &v) == nil && string(v.ID) == id {
			line = v.Result.Got
		}
	}
	if line == "" {
		t.Fatalf("no answer for id %s in %q", id, res.Messages)
	}
	return line
}

// TestStateSubstitution proves {{state ID}} sends the token of the response
// the latest #wait ID consumed, that "tampered" changes it, and that a
// missing or malformed token fails the run.
func TestStateSubstitution(t *testing.T) {
	fresh := func(n int) string { return token(byte(n)) }
	f := mustParse(t, `c
ask-client: on
-- client --
{"id":1}
#wait 1
{"id":2,"s":"{{state 1}}"}
#wait 2
{"id":1}
#wait 1
{"id":3,"s":"{{state 1}}","t":"{{state 2 tampered}}","u":"{{state 1}}"}
#wait 3
-- server --
`)
	var cfg transcript.Config
	res, err := transcript.Play(t, tokenCarrier{mint: fresh, cfg: &cfg}, f, transcript.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.AskClient {
		t.Error("ask-client: on did not reach the carrier's Config")
	}
	if got, want := gotOf(t, res, "2"), `{"id":2,"s":"`+token(1)+`"}`; got != want {
		t.Errorf("first substitution sent %s, want %s", got, want)
	}
	// The second #wait 1 consumed the 3rd response (token 3); id 2's token
	// (2) tampered changes its first character only.
	tampered := "B" + token(2)[1:]
	if token(2)[0] == 'B' {
		tampered = "A" + token(2)[1:]
	}
	if got, want := gotOf(t, res, "3"), `{"id":3,"s":"`+token(3)+`","t":"`+tampered+`","u":"`+token(3)+`"}`; got != want {
		t.Errorf("second substitution sent %s\nwant %s", got, want)
	}
	if !transcript.ValidToken(tampered) || tampered == token(2) {
		t.Errorf("tampered token %q is not a different well-formed token", tampered)
	}

	for _, tc := range []struct {
		name string
		mint func(int) string
		want string
	}{
		{"no requestState", func(int) string { return "" }, "has no string result.requestState"},
		{"short", func(n int) string { return token(byte(n))[:42] }, "is not 32 bytes of base64url"},
		{"padded", func(n int) string { return token(byte(n)) + "=" }, "is not 32 bytes of base64url"},
		{"non-canonical", func(n int) string { return token(byte(n))[:42] + "B" }, "is not 32 bytes of base64url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustParse(t, "c\n-- client --\n{\"id\":1}\n#wait 1\n{\"id\":2,\"s\":\"{{state 1}}\"}\n-- server --\n")
			_, err := transcript.Play(t, tokenCarrier{mint: tc.mint}, f, transcript.Options{Timeout: time.Minute})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// TestAnswerErrorAndWaitRequest checks #answer-error replies to the
// server's request with an error member, and #wait-request waits for a
// request without answering it.
func TestAnswerErrorAndWaitRequest(t *testing.T) {
	f := mustParse(t, `c
-- client --
#wait-request elicitation/create
#answer-error elicitation/create {"code":-32603,"message":"no UI"}
-- server --
{"jsonrpc":"2.0","id":"srv-1","method":"elicitation/create","params":{}}
{"jsonrpc":"2.0","id":"echo","result":{"got":"{\"error\":{\"code\":-32603,\"message\":\"no UI\"},\"id\":\"srv-1\",\"jsonrpc\":\"2.0\"}"}}
`)
	res, err := transcript.Play(t, scriptedCarrier{}, f, transcript.Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if p := transcript.Compare(f, res); len(p) != 0 {
		t.Errorf("%q", p)
	}
	f.Server[1] = json.RawMessage(strings.Replace(string(f.Server[1]), `\"error\"`, `\"result\"`, 1))
	if p := transcript.Compare(f, res); len(p) == 0 {
		t.Error("an error answer taken for a result")
	}
	// The scripted server sends one request: a second #wait-request for it
	// cannot be satisfied.
	f = mustParse(t, "c\n-- client --\n#wait-request elicitation/create\n#wait-request elicitation/create\n-- server --\n")
	synctest.Test(t, func(t *testing.T) {
		_, err := transcript.Play(t, scriptedCarrier{}, f, transcript.Options{Timeout: time.Minute})
		if err == nil || !strings.Contains(err.Error(), "timed out") {
			t.Errorf("err = %v, want a timeout", err)
		}
	})
}

// TestOwnSession runs a transcript against a session from Options.Session
// (a host's own), and refuses a transcript that drives the built-in one.
func TestOwnSession(t *testing.T) {
	made := 0
	opts := transcript.Options{Timeout: time.Minute, Session: func(testing.TB) ports.Session { made++; return fake.New() }}
	f := mustParse(t, `tools/call of echo on a host's own session.
format: 1
-- client --
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}
-- server --
{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"success\":true,\"toolName\":\"echo\",\"result\":{\"text\":\"hi\"},\"executionId\":\"exec-1\"}"}],"isError":false}}
`)
	res, err := transcript.Play(t, stdioCarrier, f, opts)
	if err != nil {
		t.Fatal(err)
	}
	if p := transcript.Compare(f, res); len(p) != 0 {
		t.Errorf("own session: %q", p)
	}
	if made != 1 || res.Calls != nil {
		t.Errorf("sessions made %d, calls %v; want 1 and nil", made, res.Calls)
	}
	f.HasCalls = true
	if _, err := transcript.Play(t, stdioCarrier, f, opts); err == nil || !strings.Contains(err.Error(), "#calls") {
		t.Errorf("a transcript with #calls against Options.Session: err = %v, want one naming #calls", err)
	}
	if _, err := transcript.Parse("v2.txt", []byte("A future file.\nformat: 2\n-- client --\n-- server --\n")); err == nil || !strings.Contains(err.Error(), "format") {
		t.Errorf("format: 2 parsed: err = %v, want a format error", err)
	}
}
