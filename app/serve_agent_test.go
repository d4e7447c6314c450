package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/app"
	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/internal/syncbuf"
)

const fakeKey = "sk-agentmcp-FAKEKEY-0123456789abcdef"

// stdioRun is one "agentmcp serve stdio" in this process, driven over
// pipes.
type stdioRun struct {
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *syncbuf.Buffer
	code   chan int
}

func serveStdio(t *testing.T, args ...string) *stdioRun {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := &stdioRun{in: inW, out: bufio.NewScanner(outR), stderr: &syncbuf.Buffer{}, code: make(chan int, 1)}
	go func() {
		code := app.Main(context.Background(), append([]string{"serve", "stdio"}, args...), inR, outW, r.stderr)
		outW.Close()
		r.code <- code
	}()
	t.Cleanup(func() {
		inW.Close()
		go io.Copy(io.Discard, outR)
		select {
		case <-r.code:
		case <-time.After(10 * time.Second):
			t.Error("serve stdio did not end")
		}
	})
	return r
}

// roundTrip sends one line and returns the next line the server writes.
func (r *stdioRun) roundTrip(t *testing.T, line string) string {
	t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		t.Fatalf("write: %v (stderr: %s)", err, r.stderr.String())
	}
	if !r.out.Scan() {
		t.Fatalf("no answer to %s (stderr: %s)", line, r.stderr.String())
	}
	return r.out.Text()
}

func submitText(t *testing.T, answer string) (string, bool) {
	t.Helper()
	var resp struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
			IsError bool                    `json:"isError"`
		} `json:"result"`
		Error *struct{ Message string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(answer), &resp); err != nil {
		t.Fatalf("answer %s: %v", answer, err)
	}
	if resp.Error != nil {
		return resp.Error.Message, true
	}
	if len(resp.Result.Content) != 1 {
		t.Fatalf("answer %s has %d content blocks", answer, len(resp.Result.Content))
	}
	return resp.Result.Content[0].Text, resp.Result.IsError
}

const (
	initLine   = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	submitLine = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"Read a.txt"}}}`
)

// TestServeStdioWithModel: --model turns the agent on; the key comes from
// OPENAI_API_KEY, the base URL from --model-url; the start-up log names
// the model and the endpoint and never the key.
func TestServeStdioWithModel(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha"), 0o644)
	prompt := filepath.Join(t.TempDir(), "prompt.txt")
	os.WriteFile(prompt, []byte("You are a test agent."), 0o644)
	srv := chatscript.Script(t,
		chatscript.Reply{Calls: []chatscript.Call{{ID: "c1", Name: "read_file", Arguments: `{"path":"a.txt"}`}}},
		chatscript.Reply{Text: "a.txt says alpha"})
	t.Setenv("OPENAI_API_KEY", fakeKey)
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1") // --model-url wins
	r := serveStdio(t, "--root", root, "--model", "test-model", "--model-url", srv.URL, "--system-prompt-file", prompt)
	init := r.roundTrip(t, initLine)
	if !strings.Contains(init, "follow-up prompts continue") {
		t.Errorf("instructions do not describe the agent: %s", init)
	}
	if text, isErr := submitText(t, r.roundTrip(t, submitLine)); isErr || text != "a.txt says alpha" {
		t.Errorf("agent_submit = %q (error %v)", text, isErr)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].Model != "test-model" || reqs[0].Header.Get("Authorization") != "Bearer "+fakeKey {
		t.Fatalf("requests: %d, model %q", len(reqs), reqs[0].Model)
	}
	if reqs[0].Messages[0].Content != "You are a test agent." {
		t.Errorf("system prompt = %q, want the file's", reqs[0].Messages[0].Content)
	}
	log := r.stderr.String()
	if !strings.Contains(log, "model=test-model") || !strings.Contains(log, "endpoint="+srv.URL) {
		t.Errorf("the start-up log does not name the model and the endpoint:\n%s", log)
	}
	if strings.Contains(log, "FAKEKEY") {
		t.Errorf("the log shows the key:\n%s", log)
	}
}

// TestServeStdioModelURLFromEnvironment: OPENAI_BASE_URL is the default.
func TestServeStdioModelURLFromEnvironment(t *testing.T) {
	srv := chatscript.Script(t, chatscript.Reply{Text: "from the environment's endpoint"})
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", srv.URL)
	r := serveStdio(t, "--root", t.TempDir(), "--model", "m")
	r.roundTrip(t, initLine)
	if text, _ := submitText(t, r.roundTrip(t, submitLine)); text != "from the environment's endpoint" {
		t.Errorf("agent_submit = %q", text)
	}
	if auth := srv.Requests()[0].Header.Get("Authorization"); auth != "" {
		t.Errorf("Authorization %q without a key", auth)
	}
}

// TestServeStdioWithoutModel: agent_submit is refused with a message that
// names both flags, and the instructions say so.
func TestServeStdioWithoutModel(t *testing.T) {
	r := serveStdio(t, "--root", t.TempDir())
	if init := r.roundTrip(t, initLine); !strings.Contains(init, "started without a model (--model)") {
		t.Errorf("instructions do not say agent_submit is refused: %s", init)
	}
	text, isErr := submitText(t, r.roundTrip(t, submitLine))
	if !isErr || !strings.Contains(text, "--model NAME") || !strings.Contains(text, "--model-url") {
		t.Errorf("agent_submit = %q (error %v), want a refusal naming --model and --model-url", text, isErr)
	}
}

// TestServeModelFlagErrors: a system prompt file that cannot be used
// fails start-up (exit 1) with a log line; the agent's flags themselves
// are usage errors (TestUsageErrors), and none repeats a URL's
// credentials.
func TestServeModelFlagErrors(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.txt")
	os.WriteFile(empty, nil, 0o644)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"--model", "m", "--model-url", "http://127.0.0.1/v1", "--system-prompt-file", empty}, 1},
		{[]string{"--model", "m", "--model-url", "http://127.0.0.1/v1", "--system-prompt-file", filepath.Join(t.TempDir(), "missing")}, 1},
		{[]string{"--model", "m", "--model-url", "http://user:secret@127.0.0.1/v1"}, 2},
	} {
		var stderr syncbuf.Buffer
		code := app.Main(context.Background(), append([]string{"serve", "stdio", "--root", t.TempDir()}, c.args...), strings.NewReader(""), io.Discard, &stderr)
		if code != c.code {
			t.Errorf("%q: exit %d, want %d (stderr %s)", c.args, code, c.code, stderr.String())
		}
		if strings.Contains(stderr.String(), "secret") {
			t.Errorf("%q: the error repeats the URL's credentials: %s", c.args, stderr.String())
		}
	}
}

// TestServeModelEndpointChecks: at start the model endpoint is probed once
// (a GET of /models): an endpoint that answers is logged as such, one that
// is down is a warning naming the cause — at start, not at the first
// agent_submit — and --no-model-probe skips the probe. The hosted default
// without OPENAI_API_KEY is a warning. Start-up goes on in every case.
func TestServeModelEndpointChecks(t *testing.T) {
	up := chatscript.Script(t)
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String() + "/v1"
	l.Close()
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	for _, c := range []struct {
		name      string
		args      []string
		want, not []string
	}{
		{"up", []string{"--model-url", up.URL}, []string{`msg="the model endpoint answers" endpoint=` + up.URL}, []string{"does not answer"}},
		{"down", []string{"--model-url", down}, []string{"level=WARN", "the model endpoint does not answer", "connection refused"}, []string{"answers\""}},
		{"skipped", []string{"--model-url", down, "--no-model-probe"}, nil, []string{"the model endpoint"}},
		{"hosted, no key", []string{"--no-model-probe"}, []string{"level=WARN", "no OPENAI_API_KEY", "endpoint=https://api.openai.com/v1"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := serveStdio(t, append([]string{"--root", t.TempDir(), "--model", "m"}, c.args...)...)
			r.roundTrip(t, initLine) // started
			log := r.stderr.String()
			for _, w := range c.want {
				if !strings.Contains(log, w) {
					t.Errorf("the log lacks %q:\n%s", w, log)
				}
			}
			for _, n := range c.not {
				if strings.Contains(log, n) {
					t.Errorf("the log holds %q:\n%s", n, log)
				}
			}
		})
	}
}
