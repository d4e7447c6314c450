package transcript_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentmcp/agentmcp/adapters/stdio"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/transcript"
	"github.com/agentmcp/agentmcp/ports"
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
	want := "send send fill send send send wait wait wait-idless wait-started wait-ended release set-tools answer close"
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustParse(t, tc.text)
			synctest.Test(t, func(t *testing.T) {
				res, err := transcript.Play(t, stdioCarrier{}, f, time.Minute)
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
	for _, step := range []string{"#wait 1", "#wait-started slow", "#wait-ended echo", "#wait-idless"} {
		t.Run(step, func(t *testing.T) {
			f := mustParse(t, "c\n-- client --\n{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n"+step+"\n-- server --\n")
			synctest.Test(t, func(t *testing.T) {
				_, err := transcript.Play(t, stdioCarrier{}, f, time.Minute)
				if err == nil || !strings.Contains(err.Error(), "timed out") {
					t.Errorf("err = %v, want a timeout", err)
				}
			})
		})
	}
}

// TestOversizeLineMemory is K4's memory half: 64 MiB of "a" on one line are
// read past, not buffered; the allocation during the exchange stays far
// below the line's size, and the next line is served.
func TestOversizeLineMemory(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tr, err := stdio.New(stdio.Options{Stdin: inR, Stdout: outW})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Attach(fake.New()); err != nil {
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
		`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request: message exceeds the line limit"}}`,
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

func (scriptedCarrier) Connect(testing.TB, ports.Session) (transcript.Conn, error) {
	c := &scriptedConn{out: make(chan []byte, 16), done: make(chan struct{})}
	c.out <- []byte(`{"jsonrpc":"2.0","id":"srv-1","method":"elicitation/create","params":{}}`)
	return c, nil
}

type scriptedConn struct {
	out  chan []byte
	done chan struct{}
	buf  []byte
}

func (c *scriptedConn) Send(p []byte) error {
	c.buf = append(c.buf, p...)
	for {
		line, rest, ok := strings.Cut(string(c.buf), "\n")
		if !ok {
			return nil
		}
		c.buf = []byte(rest)
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "echo", "result": map[string]string{"got": line}})
		c.out <- b
	}
}
func (c *scriptedConn) CloseSend() error { close(c.out); close(c.done); return nil }
func (c *scriptedConn) Recv() ([]byte, error) {
	b, ok := <-c.out
	if !ok {
		return nil, io.EOF
	}
	return b, nil
}
func (c *scriptedConn) Wait() error { <-c.done; return nil }
func (c *scriptedConn) Abort()      {}

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
	res, err := transcript.Play(t, scriptedCarrier{}, f, time.Minute)
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
