package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/bubblewrap"
	"github.com/agentmcp/agentmcp/adapters/landlock"
	"github.com/agentmcp/agentmcp/app"
	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/internal/syncbuf"
)

const elicitInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`

// callAllowing sends a tools/call (id 2) and answers every elicitation/create
// the server sends meanwhile with accept + allow_once, as a person
// approving in a client's dialog would; it returns the call's answer and
// the elicitations' messages.
func (r *stdioRun) callAllowing(t *testing.T, line string) (string, []string) {
	t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
	var messages []string
	for r.out.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Message string `json:"message"`
			} `json:"params"`
		}
		if err := json.Unmarshal(r.out.Bytes(), &m); err != nil {
			t.Fatalf("server wrote %s: %v", r.out.Text(), err)
		}
		switch {
		case m.Method == "elicitation/create":
			messages = append(messages, m.Params.Message)
			fmt.Fprintf(r.in, `{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"decision":"allow_once"}}}`+"\n", m.ID)
		case string(m.ID) == "2":
			return r.out.Text(), messages
		}
	}
	t.Fatalf("the server ended before answering (stderr: %s)", r.stderr.String())
	return "", nil
}

// TestServeStdioAgentTools: one agent turn through the stdio carrier, an
// MCP client that approves through elicitation, and a scripted model:
// the model edits one line of a 10,000-line file (one approval, the
// client's dialog showing the diff), finds files by a ** pattern, runs a
// checker with approval (in the default sandbox: bubblewrap, Landlock
// inside) and reads its output.
func TestServeStdioAgentTools(t *testing.T) {
	if _, err := landlock.Available(); err != nil {
		t.Skip(err)
	}
	root := t.TempDir()
	var big strings.Builder
	for i := 1; i <= 10000; i++ {
		fmt.Fprintf(&big, "line %05d\n", i)
	}
	for name, content := range map[string]string{
		"big.txt":           big.String(),
		"go.mod":            "module example.com/m\n\ngo 1.22\n",
		"main.go":           "package main\n\nfunc main() {}\n",
		"pkg/ok.go":         "package pkg\n",
		"pkg/sub/bad.go":    "package sub\nfunc  Bad( ) {}\n",
		"ignored/x.go":      "package x\n",
		".gitignore":        "ignored/\n",
		"pkg/sub/notes.txt": "",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	check := `gofmt -l . ; echo "more: $(ls -a "$TMPDIR" | wc -l)"; touch /usr/agentmcp-should-not-exist-$$ || echo sandboxed`
	srv := chatscript.Script(t,
		chatscript.Reply{Calls: []chatscript.Call{{ID: "e", Name: "edit_file", Arguments: `{"path":"big.txt","old_text":"line 05000\n","new_text":"line five thousand\n"}`}}},
		chatscript.Reply{Calls: []chatscript.Call{{ID: "f", Name: "find_files", Arguments: `{"pattern":"**/*.go"}`}}},
		chatscript.Reply{Calls: []chatscript.Call{{ID: "r", Name: "run_command", Arguments: fmt.Sprintf(`{"command":%q}`, check)}}},
		chatscript.Reply{Text: "done"})
	t.Setenv("OPENAI_API_KEY", fakeKey)
	r := serveStdio(t, "--root", root, "--ask-client", "--allow-commands", "--model", "m", "--model-url", srv.URL)
	if init := r.roundTrip(t, elicitInit); !strings.Contains(init, "run_command runs a shell command") {
		t.Errorf("instructions do not name run_command: %s", init)
	}
	answer, dialogs := r.callAllowing(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"fix it"}}}`)
	if text, isErr := submitText(t, answer); isErr || text != "done" {
		t.Fatalf("agent_submit = %q (error %v); stderr %s", text, isErr, r.stderr.String())
	}
	if len(dialogs) != 2 || !strings.Contains(dialogs[0], `"-line 05000"`) || !strings.Contains(dialogs[0], `"+line five thousand"`) ||
		!strings.Contains(dialogs[1], fmt.Sprintf("%q", check)) || !strings.Contains(dialogs[1], "sandboxed") {
		t.Errorf("dialogs %q, want edit_file's diff then run_command's command", dialogs)
	}
	got, _ := os.ReadFile(filepath.Join(root, "big.txt"))
	if string(got) != strings.Replace(big.String(), "line 05000\n", "line five thousand\n", 1) {
		t.Error("big.txt is not the original with one line changed")
	}

	// The tool results the model read, in the last request.
	reqs := srv.Requests()
	results := map[string]string{}
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "tool" {
			results[m.ToolCallID] = m.Content
		}
	}
	for id, want := range map[string][]string{
		"e": {`"success":true`, `"replacements":1`},
		"f": {`"files":["main.go","pkg/ok.go","pkg/sub/bad.go"]`, `"ignored":1`},
		"r": {`"exitCode":0`, `pkg/sub/bad.go\n`, `sandboxed\n`, `"sandboxed":true`, `"sandbox":"bubblewrap"`},
	} {
		for _, w := range want {
			if !strings.Contains(results[id], w) {
				t.Errorf("result of %s lacks %s: %s", id, w, results[id])
			}
		}
	}
	if strings.Contains(results["r"], fakeKey) {
		t.Error("the command saw the API key")
	}
}

// TestServeCommandFlags: --sandbox, --no-sandbox (the same as --sandbox
// none) and --command-network need --allow-commands, --no-sandbox excludes
// --sandbox, --command-network needs a sandbox and --sandbox takes
// bubblewrap, landlock or none (each a usage error, exit 2); a sandbox this
// machine cannot run fails start-up in one line that says what to install
// or choose; serve remote takes bubblewrap only.
func TestServeCommandFlags(t *testing.T) {
	serve := func(args ...string) (int, string) {
		t.Helper()
		var stderr syncbuf.Buffer
		code := app.Main(context.Background(), append([]string{"serve", "stdio", "--root", t.TempDir()}, args...), strings.NewReader(""), io.Discard, &stderr)
		return code, stderr.String()
	}
	oneLine := func(name string, code int, stderr string, want ...string) {
		t.Helper()
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 1 || len(lines) != 1 {
			t.Errorf("%s: exit %d, stderr %q; want 1 and one line", name, code, stderr)
			return
		}
		for _, w := range want {
			if !strings.Contains(lines[0], w) {
				t.Errorf("%s: %q does not name %s", name, lines[0], w)
			}
		}
	}
	usage := func(name string, code int, stderr string, want string) {
		t.Helper()
		if code != 2 || !strings.Contains(strings.SplitN(stderr, "\n", 2)[0], want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and the usage error naming %s", name, code, stderr, want)
		}
	}
	for _, args := range [][]string{{"--no-sandbox"}, {"--sandbox", "landlock"}, {"--command-network"}} {
		code, stderr := serve(args...)
		usage(strings.Join(args, " ")+" alone", code, stderr, "needs --allow-commands")
	}
	if code, stderr := serve("--allow-commands", "--sandbox", "docker"); code != 2 || !strings.Contains(stderr, "must be bubblewrap, landlock or none") {
		t.Errorf("--sandbox docker: exit %d, stderr %q; want the usage error", code, stderr)
	}
	code, stderr := serve("--allow-commands", "--no-sandbox", "--sandbox", "landlock")
	usage("--no-sandbox --sandbox landlock", code, stderr, "--sandbox none")
	code, stderr = serve("--allow-commands", "--sandbox", "none", "--command-network")
	usage("--sandbox none --command-network", code, stderr, "--command-network opens")
	for _, args := range [][]string{{"--no-sandbox"}, {"--sandbox", "none"}} {
		if code, stderr := serve(append([]string{"--allow-commands"}, args...)...); code != 0 || !strings.Contains(stderr, "WITHOUT a sandbox") {
			t.Errorf("--allow-commands %s: exit %d, stderr %q", args, code, stderr)
		}
	}

	restore := app.SetNewBubblewrap(func(bubblewrap.Options) (*bubblewrap.Sandbox, error) {
		return nil, fmt.Errorf("%w: bwrap is not on PATH (install the bubblewrap package: apt-get install bubblewrap)", bubblewrap.ErrUnavailable)
	})
	code, stderr = serve("--allow-commands")
	oneLine("no bubblewrap", code, stderr, "apt-get install bubblewrap", "--sandbox landlock")
	if code, stderr := serve("--allow-commands", "--sandbox", "landlock"); code != 0 || !strings.Contains(stderr, "Landlock alone") {
		t.Errorf("no bubblewrap, --sandbox landlock: exit %d, stderr %q; want it served", code, stderr)
	}
	restore()

	restore = app.SetLandlockAvailable(func() (int, error) { return 0, fmt.Errorf("Landlock is not available on this kernel") })
	defer restore()
	for _, args := range [][]string{nil, {"--sandbox", "landlock"}} {
		code, stderr := serve(append([]string{"--allow-commands"}, args...)...)
		oneLine("no Landlock", code, stderr, "Landlock is not available", "--sandbox none")
	}
}

// TestServeRemoteCommandsNeedBubblewrap: serve remote --allow-commands
// refuses any sandbox but bubblewrap (a usage error) (under Landlock alone one principal's
// command could read another's conversations), before it reaches out to
// the issuer.
func TestServeRemoteCommandsNeedBubblewrap(t *testing.T) {
	for _, sandbox := range []string{"landlock", "none"} {
		var stderr syncbuf.Buffer
		code := app.Main(context.Background(), []string{"serve", "remote", "--root", t.TempDir(), "--public-url", "https://mcp.example.com/mcp",
			"--issuer", "https://issuer.example.com", "--scope", "mcp", "--allowed-subject", "alice", "--allow-commands", "--sandbox", sandbox},
			strings.NewReader(""), io.Discard, &stderr)
		first := strings.SplitN(stderr.String(), "\n", 2)[0]
		if code != 2 || !strings.Contains(first, "needs --sandbox bubblewrap") {
			t.Errorf("--sandbox %s: exit %d, stderr %q; want the usage error saying remote needs bubblewrap", sandbox, code, stderr.String())
		}
	}
}

// TestWriteRefusalSaysWhy: a write nobody approved says why, for the
// person reading it: declined in the dialog (asking on, the client asked)
// is the person's refusal and advises nothing; asking off advises
// --ask-client; asking on with a client that cannot be asked (no form
// elicitation) says so and does not advise --ask-client again (issue 33).
func TestWriteRefusalSaysWhy(t *testing.T) {
	const write = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"a.txt","content":"x"}}}`
	plainInit := strings.Replace(elicitInit, `"capabilities":{"elicitation":{}}`, `"capabilities":{}`, 1)
	for _, c := range []struct {
		name      string
		args      []string
		init      string
		want, not string
	}{
		{"declined", []string{"--ask-client"}, elicitInit, "The person declined it", "--ask-client"},
		{"asking off", nil, elicitInit, "--ask-client", "declined"},
		{"client cannot be asked", []string{"--ask-client"}, plainInit, "this client cannot be asked", "--ask-client"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := serveStdio(t, append([]string{"--root", t.TempDir()}, c.args...)...)
			r.roundTrip(t, c.init)
			if _, err := io.WriteString(r.in, write+"\n"); err != nil {
				t.Fatal(err)
			}
			var answer string
			for answer == "" && r.out.Scan() {
				var m struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				if err := json.Unmarshal(r.out.Bytes(), &m); err != nil {
					t.Fatalf("server wrote %s: %v", r.out.Text(), err)
				}
				switch {
				case m.Method == "elicitation/create":
					fmt.Fprintf(r.in, `{"jsonrpc":"2.0","id":%s,"result":{"action":"decline"}}`+"\n", m.ID)
				case string(m.ID) == "2":
					answer = r.out.Text()
				}
			}
			if !strings.Contains(answer, "Permission denied") || !strings.Contains(answer, c.want) || strings.Contains(answer, c.not) {
				t.Errorf("write_file refusal %s; want it to say %q and not %q", answer, c.want, c.not)
			}
		})
	}
}
