//go:build linux

package app_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/internal/syncbuf"
)

// TestSandboxRemoteOtherPrincipal: on serve remote --allow-commands, a
// command alice approves for herself cannot read bob's conversation in the
// state directory (reads were allowed everywhere under Landlock alone).
// A real serve remote process, a real authorization server over TLS (its
// certificate trusted through SSL_CERT_FILE), the model a script.
func TestSandboxRemoteOtherPrincipal(t *testing.T) {
	const secret = "BOB-PRIVATE-7f3a91"
	srv := chatscript.New(t, func(req *chatscript.Request) chatscript.Reply {
		return chatscript.Reply{Text: "noted: " + req.LastUser()}
	})
	iss := newTestIssuer(t)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "issuer.pem")
	if err := os.WriteFile(caFile, iss.CertificatePEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	root, state := t.TempDir(), visibleDir(t, "agentmcp-remote-state-")
	cmd := exec.Command(os.Args[0], "serve", "remote", "--root", root,
		"--public-url", remotePublicURL, "--issuer", iss.URL(), "--scope", remoteScope,
		"--allowed-subject", "alice", "--allowed-subject", "bob", "--ask-client", "--allow-commands",
		"--model", "m", "--model-url", srv.URL, "--no-model-probe", "--state-dir", state)
	cmd.Env = append(os.Environ(), serveEnv+"=1", "SSL_CERT_FILE="+caFile, "HOME="+visibleDir(t, "agentmcp-home-"))
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || !addrLine.MatchString(lines.Text()) {
		t.Fatalf("serve remote printed %q; stderr:\n%s", lines.Text(), stderr.String())
	}
	addr := lines.Text()
	go func() {
		for lines.Scan() {
		}
	}()

	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`
	header := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}
	call := func(sub, tool, params string) string {
		t.Helper()
		tok := iss.token(t, false, func(c map[string]any) { c["sub"] = sub })
		header["Mcp-Name"] = tool
		_, body := postMCP(t, addr, tok, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`",`+params+`,`+meta+`}}`, header)
		return body
	}
	if got := call("bob", "agent_submit", `"arguments":{"prompt":"remember `+secret+`"}`); !strings.Contains(got, "noted: remember "+secret) {
		t.Fatalf("bob's turn = %s", got)
	}
	var stored []byte
	for _, name := range []string{"conversations.db", "conversations.db-wal"} {
		b, _ := os.ReadFile(filepath.Join(state, name))
		stored = append(stored, b...)
	}
	if !bytes.Contains(stored, []byte(secret)) {
		t.Fatalf("bob's conversation is not in %s: nothing to protect", state)
	}

	// alice asks for a command that looks for bob's words in the store, and
	// approves it herself (an input_required round).
	args := `"arguments":` + mustJSON(t, map[string]any{"command": "ls -a " + state + "; cat " + state + "/conversations.db* | grep -c " + secret})
	first := call("alice", "run_command", args)
	var round struct {
		Result struct {
			RequestState  string                     `json:"requestState"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(first), &round); err != nil || round.Result.RequestState == "" || len(round.Result.InputRequests) != 1 {
		t.Fatalf("alice's run_command = %s, want one input request (%v)", first, err)
	}
	var answers []string
	for key := range round.Result.InputRequests {
		answers = append(answers, `"`+key+`":{"action":"accept","content":{"decision":"allow_once"}}`)
	}
	got := call("alice", "run_command", args+`,"requestState":"`+round.Result.RequestState+`","inputResponses":{`+strings.Join(answers, ",")+`}`)
	var res struct {
		Result struct {
			Content []struct{ Text string } `json:"content"`
		} `json:"result"`
	}
	var env struct {
		Result *commandResult `json:"result"`
	}
	if json.Unmarshal([]byte(got), &res) != nil || len(res.Result.Content) != 1 ||
		json.Unmarshal([]byte(res.Result.Content[0].Text), &env) != nil || env.Result == nil {
		t.Fatalf("alice's approved run_command did not run: %s\nstderr:\n%s", got, stderr.String())
	}
	out := env.Result.Output
	if !strings.HasPrefix(out, ".\n..\n") || strings.Contains(out, "conversations.db\n") {
		t.Errorf("alice's command sees the store's files:\n%s", out)
	}
	if strings.Contains(out, secret) || !strings.HasSuffix(out, "\n0\n") {
		t.Errorf("alice's command read bob's conversation:\n%s", out)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
