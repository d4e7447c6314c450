//go:build linux

package app_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/postgres"
	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/internal/pgtest"
	"github.com/agentmcp/agentmcp/internal/syncbuf"
	"github.com/agentmcp/agentmcp/ports"
)

// TestServePostgresStore: two serve processes (two replicas) on one
// PostgreSQL --store share a conversation: the second's turn is sent the
// first's. The first reads the password from --store-password-file; the
// second from PGPASSWORD, which its re-execution moves off its environment
// (/proc/PID/environ) like the API key and still hands to the store. The
// log names the store without a password; conversations list --store
// lists both turns.
func TestServePostgresStore(t *testing.T) {
	c := pgtest.Start(t)
	url := c.URL(c.CreateDatabase(t))
	root := t.TempDir()
	real, _ := filepath.EvalSymlinks(root)
	pwFile := filepath.Join(t.TempDir(), "pgpass")
	if err := os.WriteFile(pwFile, []byte(c.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := chatscript.Script(t, chatscript.Reply{Text: "first answer"}, chatscript.Reply{Text: "second answer"})

	_, submitA, logA := startReplica(t, url, srv.URL, root, nil, "--store-password-file", pwFile)
	if got := submitA("one"); !strings.Contains(got, "first answer") {
		t.Fatalf("replica A: %s (log %s)", got, logA)
	}
	pidB, submitB, logB := startReplica(t, url, srv.URL, root, []string{"PGPASSWORD=" + c.Password})
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pidB))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(environ, []byte("PGPASSWORD=")) || bytes.Contains(environ, []byte(c.Password)) {
		t.Error("replica B's /proc/PID/environ holds PGPASSWORD")
	}
	if got := submitB("two"); !strings.Contains(got, "second answer") {
		t.Fatalf("replica B: %s (log %s)", got, logB)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	var sent []string
	for _, m := range reqs[1].Messages {
		sent = append(sent, m.Content)
	}
	if !strings.Contains(strings.Join(sent, "|"), "one|first answer|two") {
		t.Errorf("replica B's turn was sent %q, want replica A's turn before its prompt", sent)
	}
	for _, log := range []*syncbuf.Buffer{logA, logB} {
		if !strings.Contains(log.String(), "tasks and rounds are kept in "+url) || strings.Contains(log.String(), c.Password) {
			t.Errorf("the log does not name the store, or shows its password:\n%s", log)
		}
	}

	t.Setenv("PGPASSWORD", c.Password)
	code, out, errOut := runCLI(t, "conversations", "list", "--store", url)
	if code != 0 || !strings.HasPrefix(out, real+"\tlocal\tdefault\t2 turns\t") {
		t.Errorf("conversations list --store: exit %d\n%s%s", code, out, errOut)
	}
	s, err := postgres.Open(context.Background(), url, postgres.Options{Password: c.Password})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if turns, err := s.Load(context.Background(), ports.RefOf(real, ports.Principal{})); err != nil || len(turns) != 2 {
		t.Errorf("the store holds %d turns (%v), want 2", len(turns), err)
	}
}

// startReplica starts "agentmcp serve stdio" on store url (this test
// binary, re-executed as main does, so the secrets move off its
// environment), initializes it, and returns its pid, a function that
// submits one prompt and returns the answer line, and its stderr.
func startReplica(t *testing.T, url, modelURL, root string, env []string, args ...string) (pid int, submit func(prompt string) string, stderr *syncbuf.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "stdio", "--root", root, "--model", "m", "--model-url", modelURL, "--store", url}, args...)...)
	cmd.Env = append(append(os.Environ(), serveEnv+"=1", "OPENAI_API_KEY="+fakeKey), env...)
	in, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	stderr = &syncbuf.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	out := bufio.NewScanner(stdout)
	io.WriteString(in, initLine+"\n")
	if !out.Scan() {
		in.Close()
		cmd.Wait()
		t.Fatalf("no answer to initialize: %s", stderr)
	}
	var mu sync.Mutex
	return cmd.Process.Pid, func(prompt string) string {
		mu.Lock()
		defer mu.Unlock()
		io.WriteString(in, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":%q}}}`, prompt)+"\n")
		if !out.Scan() {
			t.Errorf("no answer to agent_submit: %s", stderr)
			return ""
		}
		return out.Text()
	}, stderr
}

// TestReplicasBusy: a turn of a conversation runs on one replica at a
// time: while replica A's turn waits on the model, replica B refuses a
// submission to the same conversation as busy on another replica (the
// model never asked), and serves another conversation; once A's turn
// ends, B's next submission runs, sent A's turn.
func TestReplicasBusy(t *testing.T) {
	c := pgtest.Start(t)
	url := c.URL(c.CreateDatabase(t))
	root := t.TempDir()
	arrived, finish := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv := chatscript.New(t, func(req *chatscript.Request) chatscript.Reply {
		if req.LastUser() == "slow" {
			once.Do(func() { close(arrived) })
			<-finish
		}
		return chatscript.Reply{Text: "answered " + req.LastUser()}
	})
	env := []string{"PGPASSWORD=" + c.Password}
	_, submitA, _ := startReplica(t, url, srv.URL, root, env)
	_, submitB, logB := startReplica(t, url, srv.URL, root, env)
	doneA := make(chan string, 1)
	go func() { doneA <- submitA("slow") }()
	<-arrived
	if got := submitB("meanwhile"); !strings.Contains(got, "running on another replica") {
		t.Errorf("replica B during A's turn of the same conversation: %s\n%s", got, logB)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("the model got %d requests, want A's only", n)
	}
	close(finish)
	if got := <-doneA; !strings.Contains(got, "answered slow") {
		t.Fatalf("replica A: %s", got)
	}
	if got := submitB("after"); !strings.Contains(got, "answered after") {
		t.Fatalf("replica B after A's turn: %s\n%s", got, logB)
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	var sent []string
	for _, m := range last.Messages {
		sent = append(sent, m.Content)
	}
	if !strings.Contains(strings.Join(sent, "|"), "slow|answered slow|after") {
		t.Errorf("replica B's turn was sent %q, want A's turn first", sent)
	}
}

// TestStoreRefusals: a --store URL with a password, a server that is not
// there and a schema newer than the binary each end serve with one line
// (exit 1) that never shows the password.
func TestStoreRefusals(t *testing.T) {
	c := pgtest.Start(t)
	db := c.CreateDatabase(t)
	t.Setenv("PGPASSWORD", c.Password)
	s, err := postgres.Open(context.Background(), c.URL(db), postgres.Options{Password: c.Password})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	c.SQL(t, db, "UPDATE agentmcp.schema_version SET version = 99, min_version = 99, written_by = 'agentmcp 9.9.9'")
	stopped := pgtest.Start(t)
	stoppedURL := stopped.URL("postgres")
	stopped.Stop(t)
	for _, c := range []struct {
		url, want string
	}{
		{"postgres://agentmcp:hunter22@127.0.0.1:1/db", "holds a password, which a command line shows to every local user"},
		{stoppedURL, "conversation store " + stoppedURL + ": cannot connect"},
		{c.URL(db), "which needs an agentmcp that knows schema 99; this one knows " + fmt.Sprint(postgres.SchemaVersion) + ": upgrade agentmcp"},
	} {
		code, _, stderr := runCLI(t, "serve", "stdio", "--root", t.TempDir(), "--model", "m", "--model-url", "http://127.0.0.1:1/v1", "--no-model-probe", "--store", c.url)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		last := lines[len(lines)-1]
		if code != 1 || !strings.Contains(last, c.want) || strings.Contains(stderr, "hunter22") || strings.Contains(stderr, "\n"+c.url+"\n") {
			t.Errorf("--store %s: exit %d, last line %q; want exit 1 and %q\n%s", c.url, code, last, c.want, stderr)
		}
	}
}

// TestWorkspaceID: replicas that mount one workspace at different paths
// share its conversations when given the same --workspace-id (the key's
// workspace part), and not without it (each root's real path is its own
// key); agentmcp conversations finds them by the id.
func TestWorkspaceID(t *testing.T) {
	c := pgtest.Start(t)
	url := c.URL(c.CreateDatabase(t))
	srv := chatscript.New(t, func(req *chatscript.Request) chatscript.Reply {
		return chatscript.Reply{Text: "answered " + req.LastUser()}
	})
	env := []string{"PGPASSWORD=" + c.Password}
	rootA, rootB := t.TempDir(), t.TempDir() // the one workspace, mounted at two paths
	_, submitA, _ := startReplica(t, url, srv.URL, rootA, env, "--workspace-id", "team/agent")
	_, submitB, _ := startReplica(t, url, srv.URL, rootB, env, "--workspace-id", "team/agent")
	_, submitC, _ := startReplica(t, url, srv.URL, rootB, env)
	submitA("one")
	submitB("two")
	submitC("three")
	var sent [][]string
	for _, r := range srv.Requests() {
		sent = append(sent, r.UserPrompts())
	}
	if len(sent) != 3 || strings.Join(sent[1], ",") != "one,two" || strings.Join(sent[2], ",") != "three" {
		t.Errorf("the prompts each turn was sent: %q; want B's after A's (one id), C's alone (its root's path)", sent)
	}
	t.Setenv("PGPASSWORD", c.Password)
	code, out, errOut := runCLI(t, "conversations", "list", "--store", url, "--workspace-id", "team/agent")
	if code != 0 || !strings.Contains(out, "team/agent\tlocal\tdefault\t2 turns") || strings.Count(out, "\n") != 1 {
		t.Errorf("conversations list --workspace-id: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "conversations", "list", "--workspace-id", "team/agent", "--root", rootA); code != 2 ||
		!strings.Contains(errOut, "--workspace-id and --root exclude each other") {
		t.Errorf("--workspace-id with --root: exit %d, %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "serve", "stdio", "--model", "m", "--workspace-id", "a b"); code != 2 || !strings.Contains(errOut, "--workspace-id") {
		t.Errorf("a workspace id with a space: exit %d, %s", code, errOut)
	}
}
