package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const (
	rawClientInfo = `{"name":"agentmcp-interop-raw","version":"0"}`
	rawModernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
)

// rawExchange is a scripted conversation of one era: the lines a client
// sends and what each request must be answered with.
type rawExchange struct {
	name  string
	lines []string
	// want maps the raw JSON id of every request to a check of its result.
	want map[string]func(result json.RawMessage, ws workspace) error
}

func rawExchanges() []rawExchange {
	readFile := func(result json.RawMessage, ws workspace) error {
		var r struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		}
		if err := json.Unmarshal(result, &r); err != nil {
			return err
		}
		if len(r.Content) != 1 || r.IsError {
			return fmt.Errorf("want one text block and no isError")
		}
		var env envelope
		if err := json.Unmarshal([]byte(r.Content[0].Text), &env); err != nil {
			return fmt.Errorf("text is not an envelope: %v", err)
		}
		if got, err := fileContent(env.Result); err != nil || got != ws.content {
			return fmt.Errorf("envelope result does not hold the file's content")
		}
		return nil
	}
	hasMember := func(name string) func(json.RawMessage, workspace) error {
		return func(result json.RawMessage, _ workspace) error {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(result, &m); err != nil {
				return err
			}
			if _, ok := m[name]; !ok {
				return fmt.Errorf("want a %q member", name)
			}
			return nil
		}
	}
	isObject := func(result json.RawMessage, _ workspace) error {
		var m map[string]json.RawMessage
		return json.Unmarshal(result, &m)
	}
	return []rawExchange{{
		name: "2025-11-25",
		lines: []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":` + rawClientInfo + `}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
			`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"read_file","arguments":{"path":"greeting.txt"}}}`,
			`{"jsonrpc":"2.0","id":4,"method":"ping"}`,
		},
		want: map[string]func(json.RawMessage, workspace) error{
			`1`: hasMember("protocolVersion"), `2`: hasMember("tools"), `"three"`: readFile, `4`: isObject,
		},
	}, {
		name: "2026-07-28",
		lines: []string{
			`{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{` + rawModernMeta + `}}`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + rawModernMeta + `}}`,
			`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"greeting.txt"},` + rawModernMeta + `}}`,
		},
		want: map[string]func(json.RawMessage, workspace) error{
			`"d"`: hasMember("supportedVersions"), `2`: hasMember("tools"), `3`: readFile,
		},
	}}
}

// checkAnswers checks that answered holds exactly the wanted results.
func checkAnswers(t *testing.T, x rawExchange, ws workspace, answered map[string]rawMessage) {
	t.Helper()
	for id, check := range x.want {
		msg, ok := answered[id]
		switch {
		case !ok:
			t.Errorf("no response for id %s", id)
		case msg.Error != nil || len(msg.Result) == 0:
			t.Errorf("id %s: want a result, got %s", id, msg.raw)
		default:
			if err := check(msg.Result, ws); err != nil {
				t.Errorf("id %s: %v: %.500s", id, err, msg.raw)
			}
		}
	}
	for id, msg := range answered {
		if _, ok := x.want[id]; !ok {
			t.Errorf("unexpected response %s", msg.raw)
		}
	}
}

// TestStdoutCarriesOnlyMCP talks to the binary line by line, as a client
// does, one exchange per era: it sends each message, reads stdout up to the
// answer of each request, then closes stdin. Every byte on stdout must belong
// to a compact JSON-RPC 2.0 message, one per line (logs belong on stderr),
// nothing may follow the last answer, and the server must exit 0. The SDK
// clients would fail on garbage too, but only on the lines they happen to read.
func TestStdoutCarriesOnlyMCP(t *testing.T) {
	for _, x := range rawExchanges() {
		t.Run(x.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			ws := newWorkspace(t)
			stderr := serverStderr(t)

			cmd := serverCommand(ctx, ws)
			cmd.Stderr = stderr
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdoutPipe, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait() // after a failure; CommandContext kills it when ctx ends
			defer cancel()
			stdout := bufio.NewReader(stdoutPipe)

			answered := map[string]rawMessage{}
			n := 0
			for _, line := range x.lines {
				var req struct {
					ID json.RawMessage `json:"id"`
				}
				if err := json.Unmarshal([]byte(line), &req); err != nil {
					t.Fatal(err)
				}
				if _, err := io.WriteString(stdin, line+"\n"); err != nil {
					t.Fatalf("writing %s: %v", line, err)
				}
				if req.ID == nil {
					continue // a notification: nothing to wait for
				}
				for {
					out, err := stdout.ReadBytes('\n')
					if err != nil {
						t.Fatalf("reading the answer to %s: %v (stdout so far ended with %q)", line, err, out)
					}
					n++
					msg, err := parseLine(n, out)
					if err != nil {
						t.Fatal(err)
					}
					if msg.Method != "" {
						continue // the server's own notification or request
					}
					if _, dup := answered[string(msg.ID)]; dup {
						t.Fatalf("stdout line %d answers id %s again: %s", n, msg.ID, msg.raw)
					}
					answered[string(msg.ID)] = msg
					if bytes.Equal(msg.ID, req.ID) {
						break
					}
				}
			}
			if err := stdin.Close(); err != nil {
				t.Fatal(err)
			}
			rest, err := io.ReadAll(stdout)
			if err != nil {
				t.Fatalf("reading stdout to its end: %v", err)
			}
			if len(rest) > 0 {
				t.Errorf("stdout after the last answer and stdin EOF: %q", rest)
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("server exit after stdin EOF: %v, want status 0", err)
			}
			checkAnswers(t, x, ws, answered)
		})
	}
}

// TestPipedInputThenEOF sends each exchange at once and closes stdin right
// away, as "printf ... | agentmcp serve stdio" does: every request that was
// sent before the end of input must get its real answer (docs/SPEC.md §3 Ending: on
// stdin EOF in-flight calls finish and write; §5.1: frames that arrive during
// start-up are kept), stdout must hold only MCP messages, and the server
// must exit 0.
func TestPipedInputThenEOF(t *testing.T) {
	for _, x := range rawExchanges() {
		t.Run(x.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			ws := newWorkspace(t)
			stderr := serverStderr(t)

			var stdout bytes.Buffer
			cmd := serverCommand(ctx, ws)
			cmd.Stdin = strings.NewReader(strings.Join(x.lines, "\n") + "\n")
			cmd.Stdout = &stdout
			cmd.Stderr = stderr
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("server stdout:\n%s", stdout.String())
				}
			})
			if err := cmd.Run(); err != nil {
				var exitErr *exec.ExitError
				switch {
				case ctx.Err() != nil:
					t.Fatalf("server did not exit within %v of stdin EOF: %v", testTimeout, err)
				case errors.As(err, &exitErr):
					t.Errorf("server exit after stdin EOF: %v, want status 0", err)
				default:
					t.Fatalf("running the server: %v", err)
				}
			}
			answered, err := parseStdout(stdout.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			checkAnswers(t, x, ws, answered)
		})
	}
}

// rawMessage is one line of the server's stdout.
type rawMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
	raw     string
}

// parseLine checks that stdout line n (with its newline) is one compact
// JSON-RPC 2.0 object.
func parseLine(n int, line []byte) (rawMessage, error) {
	line, ok := bytes.CutSuffix(line, []byte("\n"))
	if !ok {
		return rawMessage{}, fmt.Errorf("stdout line %d does not end with a newline: %q", n, line)
	}
	if !json.Valid(line) {
		return rawMessage{}, fmt.Errorf("stdout line %d is not JSON: %q", n, line)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, line); err != nil || !bytes.Equal(compact.Bytes(), line) {
		return rawMessage{}, fmt.Errorf("stdout line %d is not compact JSON: %q", n, line)
	}
	var msg rawMessage
	if err := json.Unmarshal(line, &msg); err != nil {
		return rawMessage{}, fmt.Errorf("stdout line %d is not a JSON object: %q", n, line)
	}
	if msg.JSONRPC != "2.0" {
		return rawMessage{}, fmt.Errorf("stdout line %d is not a JSON-RPC 2.0 message: %q", n, line)
	}
	msg.raw = string(line)
	return msg, nil
}

// parseStdout checks that out is a sequence of newline-terminated compact
// JSON-RPC 2.0 objects and returns the responses by raw id.
func parseStdout(out []byte) (map[string]rawMessage, error) {
	answered := map[string]rawMessage{}
	for n := 1; len(out) > 0; n++ {
		line := out
		if i := bytes.IndexByte(out, '\n'); i >= 0 {
			line = out[:i+1]
		}
		out = out[len(line):]
		msg, err := parseLine(n, line)
		if err != nil {
			return nil, err
		}
		if msg.Method != "" {
			continue // the server's own notification or request
		}
		if _, dup := answered[string(msg.ID)]; dup {
			return nil, fmt.Errorf("stdout line %d answers id %s again: %s", n, msg.ID, msg.raw)
		}
		answered[string(msg.ID)] = msg
	}
	return answered, nil
}
