package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/app"
	"github.com/agentmcp/agentmcp/transcript"
)

// serveEnv is the variable under which TestMain (main_test.go) runs
// app.Main instead of the tests.
const serveEnv = "AGENTMCP_APP_TEST_MAIN"

// testClient is a client's side of the pass-through: it writes lines and
// reads the server's messages, one per line.
type testClient struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Reader
}

func (c *testClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// await reads messages until the response with id, returning it.
func (c *testClient) await(id string) map[string]json.RawMessage {
	c.t.Helper()
	for {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			c.t.Fatalf("waiting for id %s: %v", id, err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil {
			c.t.Fatalf("not JSON: %q", line)
		}
		if string(m["id"]) == id && m["method"] == nil {
			return m
		}
	}
}

// TestRecord records a client's session with the reference server through
// agentmcp record, replays the recording against the same server (green)
// and against a changed one (a diff naming the message), and checks that
// no secret the exchange carried is in the file.
func TestRecord(t *testing.T) {
	const apiKey = "sk-test-0123456789abcdef"
	t.Setenv("OPENAI_API_KEY", apiKey)
	t.Setenv(serveEnv, "1")
	root := func() string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("hello\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	out := filepath.Join(t.TempDir(), "session.txt")
	serverArgs := []string{"serve", "stdio", "--root", root(), "--ask-client"}

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	code := make(chan int, 1)
	var stderr strings.Builder
	go func() {
		code <- app.Main(context.Background(), append([]string{"record", "--out", out, "--"}, append([]string{os.Args[0]}, serverArgs...)...), inR, outW, &stderr)
		outW.Close()
	}()
	c := &testClient{t: t, in: inW, out: bufio.NewReader(outR)}
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	c.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta + `}}`)
	c.await("1")
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + meta + `}}`)
	c.await("2")
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"notes.txt"},` + meta + `}}`)
	c.await("3")
	// An approval: input_required, then the retry with the token and the
	// user's answer (and something the user typed, which must not be kept).
	c.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"out.txt","content":"hello"},` + meta + `}}`)
	r4 := c.await("4")
	var res struct {
		RequestState string `json:"requestState"`
	}
	if err := json.Unmarshal(r4["result"], &res); err != nil || res.RequestState == "" {
		t.Fatalf("id 4: no requestState in %s", r4["result"])
	}
	c.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"out.txt","content":"hello"},"requestState":"` + res.RequestState + `","inputResponses":{"prompt":{"action":"accept","content":{"decision":"allow_once","note":"my password is hunter2"}}},` + meta + `}}`)
	c.await("5")
	inW.Close()
	if _, err := io.Copy(io.Discard, c.out); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-code:
		if got != 0 {
			t.Fatalf("record exited %d: %s", got, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("record did not end after the client closed its output")
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{apiKey, res.RequestState, "hunter2"} {
		if strings.Contains(string(data), secret) {
			t.Errorf("the recording holds the secret %q:\n%s", secret, data)
		}
	}
	for _, want := range []string{`"{{state 4}}"`, `"{{requestState}}"`, "#wait 4\n", "ask-client: on\n"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the recording lacks %q:\n%s", want, data)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the recording:\n%s", data)
		}
	})
	f, err := transcript.Parse(out, data)
	if err != nil {
		t.Fatalf("the recording does not parse: %v\n%s", err, data)
	}

	t.Run("same server", func(t *testing.T) {
		res, err := transcript.Play(t, transcript.Command{Path: os.Args[0], Args: []string{"serve", "stdio", "--root", root(), "--ask-client"}}, f, transcript.Options{Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if p := transcript.Compare(f, res); len(p) != 0 {
			t.Errorf("replayed against the server it was recorded from: %s", strings.Join(p, "\n"))
		}
	})
	t.Run("changed server", func(t *testing.T) {
		res, err := transcript.Play(t, transcript.Command{Path: os.Args[0], Args: []string{"serve", "stdio", "--root", root(), "--ask-client", "--submit-name", "ask"}}, f, transcript.Options{Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		p := transcript.Compare(f, res)
		if len(p) == 0 || !strings.Contains(strings.Join(p, "\n"), "message with id 2") {
			t.Errorf("replayed against a server with another submission tool: problems %q, want a diff naming id 2", p)
		}
	})
}

// TestRecordOutIsReplacedSafely: --out FILE is written as a new file of
// mode 0600 renamed over FILE (an existing 0644 file does not keep its
// mode), and a symbolic link at FILE is refused, its target untouched
// (issue 32).
func TestRecordOutIsReplacedSafely(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "session.txt")
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(out, 0o644)
	var stderr strings.Builder
	if code := app.Main(context.Background(), []string{"record", "--out", out, "--", "/bin/true"}, strings.NewReader(""), io.Discard, &stderr); code != 0 {
		t.Fatalf("record: exit %d: %s", code, stderr.String())
	}
	fi, err := os.Stat(out)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("--out over an existing 0644 file: %v, mode %v; want 0600", err, fi.Mode())
	}
	if data, _ := os.ReadFile(out); !strings.Contains(string(data), "-- client --") {
		t.Errorf("FILE holds %q", data)
	}

	target := filepath.Join(dir, "elsewhere")
	os.WriteFile(target, []byte("keep me"), 0o644)
	link := filepath.Join(dir, "link.txt")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	code := app.Main(context.Background(), []string{"record", "--out", link, "--", "/bin/true"}, strings.NewReader(""), io.Discard, &stderr)
	if data, _ := os.ReadFile(target); code != 2 || string(data) != "keep me" || !strings.Contains(stderr.String(), "symbolic link") {
		t.Errorf("--out a symbolic link: exit %d, target %q, stderr %q", code, data, stderr.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("the directory holds %d entries, want 3 (no temporary file left)", len(entries))
	}
}

// TestRecordSecretNames: the values redacted include those of the names
// outside the old rule (SECRET_KEY_BASE, GITHUB_PAT, *_PAT, DATABASE_URL)
// and the password of a URL in any variable.
func TestRecordSecretNames(t *testing.T) {
	got := app.SecretValues([]string{"SECRET_KEY_BASE=rails-base-0123", "GITHUB_PAT=ghp_0123456789", "GITLAB_PAT=glpat-0123456789",
		"DATABASE_URL=postgres://app:hunter22@db/x", "REDIS_URL=redis://:cachepw@cache:6379", "HOME=/root/homedir", "MINE=mine-0123456"}, []string{"MINE"})
	for _, want := range []string{"rails-base-0123", "ghp_0123456789", "glpat-0123456789", "postgres://app:hunter22@db/x", "hunter22", "cachepw", "mine-0123456"} {
		if !slices.Contains(got, want) {
			t.Errorf("secretValues lacks %q: %q", want, got)
		}
	}
	if slices.Contains(got, "/root/homedir") {
		t.Errorf("secretValues redacts HOME: %q", got)
	}
}
