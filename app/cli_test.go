package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/app"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/syncbuf"
)

// runCLI runs the command line with args and an empty stdin.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut syncbuf.Buffer
	code = app.Main(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestHelp: every help form prints on stdout, nothing on stderr, and exits
// 0; the forms that name the same command print the same text, which holds
// the key lines of that command.
func TestHelp(t *testing.T) {
	tests := []struct {
		name  string
		forms [][]string
		want  []string // lines (or line starts) the text must hold
	}{
		{"top level", [][]string{{"help"}, {"-h"}, {"--help"}, {"-help"}}, []string{
			"Usage:\n  agentmcp <command> [flags]\n",
			"\n  serve stdio           Serve the reference session over stdio",
			"\n  serve http            Serve the reference session over Streamable HTTP",
			"\n  serve remote          Serve the reference session to remote clients",
			"\n  conversations list    List the stored conversations",
			"\n  version               Print the version",
			"\n  help                  Print help",
			"\n  --version    print the version",
			"Examples:\n  agentmcp serve stdio --root ~/project\n  agentmcp serve http --root ~/project --port 8931",
			"\n  agentmcp serve remote --public-url https://mcp.example.com/team/agent/mcp \\\n",
			"\n  agentmcp version\n  agentmcp help serve http\n",
			"\nExit status: 0 on a clean end, 1 on a failure, 2 on a usage error.\n",
		}},
		{"serve", [][]string{{"serve", "--help"}, {"serve", "-h"}, {"help", "serve"}}, []string{
			"Usage:\n  agentmcp serve <carrier> [flags]\n",
			"Carriers:\n  stdio    Serve",
			"\nFlags every carrier takes:\n  --allow-commands ",
			"\n  --root DIR                    serve the files under DIR (default \".\")\n",
			"\n  agentmcp serve http --root ~/project",
			"Run 'agentmcp help serve <carrier>' or 'agentmcp serve <carrier> --help' for a carrier's flags.\n",
		}},
		{"serve stdio", [][]string{{"serve", "stdio", "--help"}, {"serve", "stdio", "-h"}, {"help", "serve", "stdio"}, {"serve", "stdio", "--root", "x", "-help"}}, []string{
			"Usage:\n  agentmcp serve stdio [flags]\n\nServe the reference session over stdio",
			"\nFlags:\n  --allow-commands ",
			"\n  --root DIR ",
			"\n  --submit-name NAME ",
			"\n  --submit-description TEXT ",
			"\n  --max-task-result-bytes N ",
			"\n  --max-task-result-bytes-per-client N\n",
			"\n  --max-tasks N ",
			"\n  --max-tasks-per-client N ",
			"\n  --task-poll-interval DURATION\n",
			"\n  --task-ttl DURATION ",
			"\n  -h, --help ",
			"\nExample:\n  agentmcp serve stdio --root ~/project\n",
		}},
		{"serve http", [][]string{{"serve", "http", "--help"}, {"help", "serve", "http"}}, []string{
			"Usage:\n  agentmcp serve http [flags]\n",
			"\n  --port N                      TCP port N on 127.0.0.1; 0 picks a free one\n",
			"\n  --token-file PATH ",
			"\n  --root DIR ",
			"\nExample:\n  agentmcp serve http --root ~/project --port 8931 --token-file ~/.agentmcp-token\n",
		}},
		{"serve remote", [][]string{{"serve", "remote", "--help"}, {"help", "serve", "remote"}}, []string{
			"Usage:\n  agentmcp serve remote --public-url URL --issuer URL --scope S...\n",
			"\n  --public-url URL ",
			"\n  --issuer URL ",
			"\n  --scope S ",
			"\n  --allowed-subject SUB ",
			"\n  --allowed-client ID ",
			"\n  --listen IP:PORT ",
			"(default \"127.0.0.1:0\")",
			"\n  --trusted-proxy IP ",
			"\n  --root DIR ",
			"refused: <refusal> (<loopback|private|public|unknown>[, throttled])",
			"\nExample:\n  agentmcp serve remote --public-url",
		}},
		{"version", [][]string{{"version", "--help"}, {"help", "version"}}, []string{
			"Usage:\n  agentmcp version\n",
			"\nExample:\n  agentmcp version\n",
		}},
		{"help", [][]string{{"help", "help"}, {"help", "-h"}}, []string{
			"Usage:\n  agentmcp help [COMMAND...]\n",
			"\nExample:\n  agentmcp help serve http\n",
		}},
	}
	for _, tt := range tests {
		var first string
		for i, args := range tt.forms {
			code, stdout, stderr := runCLI(t, args...)
			if code != 0 || stderr != "" || stdout == "" {
				t.Errorf("%q: exit %d, stdout %d bytes, stderr %q; want 0, help, nothing", args, code, len(stdout), stderr)
				continue
			}
			if i == 0 {
				first = stdout
				for _, w := range tt.want {
					if !strings.Contains(stdout, w) {
						t.Errorf("%s help (%q) lacks %q:\n%s", tt.name, args, w, stdout)
					}
				}
				checkFlagLines(t, args, stdout)
			} else if stdout != first {
				t.Errorf("%q prints other help than %q:\n%s\n--- want\n%s", args, tt.forms[0], stdout, first)
			}
		}
	}
}

// checkFlagLines: in a flag list, every flag is written with two dashes
// (only -h comes with one, beside --help) and no line is wider than 80
// columns.
func checkFlagLines(t *testing.T, args []string, help string) {
	t.Helper()
	inFlags := false
	for _, line := range strings.Split(help, "\n") {
		switch {
		case strings.HasPrefix(line, "Flags"):
			inFlags = true
			continue
		case line == "":
			inFlags = false
		}
		if !inFlags {
			continue
		}
		if strings.HasPrefix(line, "  -") && !strings.HasPrefix(line, "  --") && !strings.HasPrefix(line, "  -h, --help ") {
			t.Errorf("%q: flag with one dash: %q", args, line)
		}
		if len([]rune(line)) > 80 {
			t.Errorf("%q: flag line wider than 80 columns: %q", args, line)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 || stderr != "" {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		if len(lines) != 4 {
			t.Fatalf("%q: %d lines, want 4:\n%s", args, len(lines), stdout)
		}
		if want := "agentmcp " + app.Version; lines[0] != want {
			t.Errorf("%q: first line %q, want %q (serverInfo.version)", args, lines[0], want)
		}
		// A test binary has build information without VCS data.
		if want := "module github.com/agentmcp/agentmcp (devel)"; lines[1] != want {
			t.Errorf("%q: %q, want %q", args, lines[1], want)
		}
		if want := "revision unknown"; lines[2] != want {
			t.Errorf("%q: %q, want %q", args, lines[2], want)
		}
		if !strings.HasPrefix(lines[3], "go go1.") {
			t.Errorf("%q: %q, want the Go version", args, lines[3])
		}
	}
	if app.Version != "0.1.0" {
		t.Errorf("Version = %q in a build that is not a release, want the base version 0.1.0", app.Version)
	}
}

// TestUsageErrors: every bad command line — an unknown command or flag, a
// missing command, an unexpected argument, a bad flag value or a bad
// combination of flags — exits 2 before anything is opened or logged, with
// one screen on stderr (at most 4 lines): the error line, saying what is
// wrong and what to do (the nearest command or flag for a misspelling),
// the usage line, and where the help is; nothing on stdout (issue 33).
func TestUsageErrors(t *testing.T) {
	const (
		stdio  = "agentmcp serve stdio [flags]"
		http   = "agentmcp serve http [flags]"
		remote = "agentmcp serve remote --public-url URL --issuer URL --scope S..."
		top    = "agentmcp <command> [flags]; commands: serve, record, conversations, version, help"
		serve  = "agentmcp serve <carrier> [flags]; carriers: stdio, http, unix, remote"
	)
	remoteArgs := []string{"serve", "remote", "--public-url", "https://mcp.example.com/mcp", "--issuer", "https://id.example.com", "--scope", "mcp", "--allowed-subject", "a"}
	tests := []struct {
		args  []string
		line  string // the first line of stderr
		usage string // the usage line that follows, after "Usage: "
	}{
		{nil, `agentmcp: missing command`, top},
		{[]string{"sevre"}, `agentmcp: unknown command "sevre" (did you mean "serve"?)`, top},
		{[]string{"bogus"}, `agentmcp: unknown command "bogus"`, top},
		{[]string{"--bogus"}, `agentmcp: unknown flag --bogus`, top},
		{[]string{"-root=x", "serve"}, `agentmcp: unknown flag --root`, top},
		{[]string{"serve"}, `agentmcp serve: missing carrier`, serve},
		{[]string{"serve", "unixx"}, `agentmcp serve: unknown carrier "unixx" (did you mean "unix"?)`, serve},
		// A carrier's flag before the carrier: where it goes.
		{[]string{"serve", "--root", ".", "stdio"}, `agentmcp serve: --root goes after the carrier, as in 'agentmcp serve stdio --root …'`, serve},
		{[]string{"serve", "--rooot", "."}, `agentmcp serve: unknown flag --rooot (did you mean --root? it goes after the carrier, as in 'agentmcp serve stdio --root …')`, serve},
		{[]string{"serve", "--frobnicate"}, `agentmcp serve: unknown flag --frobnicate`, serve},
		{[]string{"conversations", "--state-dir", "/tmp/x", "list"}, `agentmcp conversations: --state-dir goes after the command, as in 'agentmcp conversations list --state-dir …'`, "agentmcp conversations <command> [flags]; commands: list, show, clear"},
		{[]string{"serve", "htpt"}, `agentmcp serve: unknown carrier "htpt" (did you mean "http"?)`, serve},
		// An unknown or misspelt flag: one line, the nearest flag, not the flag list.
		{[]string{"serve", "stdio", "--rooot", "x"}, `agentmcp serve stdio: unknown flag --rooot (did you mean --root?)`, stdio},
		{[]string{"serve", "stdio", "-rooot", "x"}, `agentmcp serve stdio: unknown flag --rooot (did you mean --root?)`, stdio},
		{[]string{"serve", "http", "--tokenfile", "x"}, `agentmcp serve http: unknown flag --tokenfile (did you mean --token-file?)`, http},
		{[]string{"serve", "http", "--prot", "1"}, `agentmcp serve http: unknown flag --prot (did you mean --port?)`, http},
		{[]string{"serve", "stdio", "--frobnicate"}, `agentmcp serve stdio: unknown flag --frobnicate`, stdio},
		// --host on serve http: loopback is fixed; serve remote is for other addresses.
		{[]string{"serve", "http", "--host", "0.0.0.0"}, `agentmcp serve http: --host: serve http listens on 127.0.0.1 only, on --port N; to serve other addresses, use 'agentmcp serve remote --listen IP:PORT' behind a TLS proxy`, http},
		{[]string{"serve", "http", "--listen=0.0.0.0:80"}, `agentmcp serve http: --listen: serve http listens on 127.0.0.1 only, on --port N; to serve other addresses, use 'agentmcp serve remote --listen IP:PORT' behind a TLS proxy`, http},
		{[]string{"serve", "stdio", "extra"}, `agentmcp serve stdio: unexpected argument "extra"`, stdio},
		// Bad values say what the flag takes.
		{[]string{"serve", "stdio", "--ask-client=maybe"}, `agentmcp serve stdio: invalid value "maybe" for --ask-client: want true or false`, stdio},
		{[]string{"serve", "http", "--port"}, `agentmcp serve http: flag --port needs a value`, http},
		{[]string{"serve", "http", "--port", "abc"}, `agentmcp serve http: invalid value "abc" for --port: a port is a whole number from 0 to 65535 (0 picks a free one)`, http},
		{[]string{"serve", "http", "--port", "65536"}, `agentmcp serve http: invalid value "65536" for --port: a port is a whole number from 0 to 65535 (0 picks a free one)`, http},
		{[]string{"serve", "stdio", "--log-level", "loud"}, `agentmcp serve stdio: invalid value "loud" for --log-level: the levels are debug, info, warn and error`, stdio},
		{[]string{"serve", "stdio", "--log-format", "xml"}, `agentmcp serve stdio: invalid value "xml" for --log-format: the formats are text and json`, stdio},
		{[]string{"serve", "stdio", "--metrics-listen", ":9464x"}, `agentmcp serve stdio: invalid value ":9464x" for --metrics-listen: want a literal IP:PORT with a port, such as 127.0.0.1:9464`, stdio},
		{[]string{"serve", "remote"}, `agentmcp serve remote: --public-url is required`, remote},
		{[]string{"serve", "stdio", "--submit-name", "my tool"}, `agentmcp serve stdio: --submit-name "my tool": the name must match ^[A-Za-z0-9._-]{1,128}$`, stdio},
		{[]string{"serve", "stdio", "--model", ""}, `agentmcp serve stdio: --model needs a model NAME (leave --model out to serve without the agent)`, stdio},
		// The agent's flags: the value first, then what it needs.
		{[]string{"serve", "stdio", "--max-turns", "-1"}, `agentmcp serve stdio: invalid value "-1" for --max-turns: must be at least 1`, stdio},
		{[]string{"serve", "stdio", "--model", "m", "--max-turns", "0"}, `agentmcp serve stdio: invalid value "0" for --max-turns: must be at least 1`, stdio},
		{[]string{"serve", "stdio", "--max-turns", "many"}, `agentmcp serve stdio: invalid value "many" for --max-turns: want a whole number`, stdio},
		{[]string{"serve", "stdio", "--max-turns", "2"}, `agentmcp serve stdio: --max-turns needs --model: it configures the agent, which --model NAME turns on`, stdio},
		{[]string{"serve", "stdio", "--model", "m", "--approval-timeout", "31m"}, `agentmcp serve stdio: invalid value "31m" for --approval-timeout: must be at most 30m`, stdio},
		{[]string{"serve", "stdio", "--model", "m", "--approval-timeout", "0s"}, `agentmcp serve stdio: invalid value "0s" for --approval-timeout: must be more than 0`, stdio},
		{[]string{"serve", "stdio", "--approval-timeout", "soon"}, `agentmcp serve stdio: invalid value "soon" for --approval-timeout: want a duration such as 90s, 5m or 1h`, stdio},
		{[]string{"serve", "stdio", "--approval-timeout", "1s"}, `agentmcp serve stdio: --approval-timeout needs --model: it configures the agent, which --model NAME turns on`, stdio},
		{[]string{"serve", "http", "--model", "m", "--ui", "sometimes"}, `agentmcp serve http: invalid value "sometimes" for --ui: must be auto, always or never`, http},
		{[]string{"serve", "http", "--ui", "always"}, `agentmcp serve http: --ui needs --model: it configures the agent, which --model NAME turns on`, http},
		{[]string{"serve", "stdio", "--model-url", "http://127.0.0.1:11434/v1"}, `agentmcp serve stdio: --model-url needs --model: it configures the agent, which --model NAME turns on`, stdio},
		{[]string{"serve", "stdio", "--state-dir", "/tmp/x"}, `agentmcp serve stdio: --state-dir needs --model: it configures the agent, which --model NAME turns on`, stdio},
		{[]string{"serve", "stdio", "--model", "m", "--model-url", "http://user:secret@127.0.0.1/v1"}, `agentmcp serve stdio: --model-url: the base URL must not carry credentials: the key goes in OPENAI_API_KEY`, stdio},
		{[]string{"serve", "stdio", "--model", "m", "--model-url", "ftp://127.0.0.1/v1"}, `agentmcp serve stdio: --model-url: the base URL must be an absolute http or https URL, such as http://127.0.0.1:11434/v1`, stdio},
		// The conversation store's flags.
		{[]string{"serve", "stdio", "--model", "m", "--ephemeral", "--state-dir", "/tmp/x"}, `agentmcp serve stdio: --ephemeral and --state-dir exclude each other: --ephemeral keeps conversations in memory only: use one or the other`, stdio},
		{[]string{"serve", "stdio", "--model", "m", "--store", "sqlite:/tmp/x.db", "--state-dir", "/tmp/x"}, `agentmcp serve stdio: --store and --state-dir exclude each other: --store names the store itself (--state-dir DIR is --store sqlite:DIR/conversations.db): use one or the other`, stdio},
		{[]string{"serve", "stdio", "--model", "m", "--ephemeral", "--store", "sqlite:/tmp/x.db"}, `agentmcp serve stdio: --ephemeral and --store exclude each other: --ephemeral keeps conversations in memory only: use one or the other`, stdio},
		{[]string{"serve", "stdio", "--model", "m", "--store-password-file", "/tmp/pw"}, `agentmcp serve stdio: --store-password-file needs --store: it is the password of --store's PostgreSQL database`, stdio},
		{[]string{"serve", "stdio", "--model", "m", "--store", "mysql://db"}, `agentmcp serve stdio: invalid value "mysql://db" for --store: want sqlite:PATH or postgres://USER@HOST:PORT/DB`, stdio},
		{[]string{"serve", "stdio", "--store", "sqlite:/tmp/x.db"}, `agentmcp serve stdio: --store needs --model: it configures the agent, which --model NAME turns on`, stdio},
		// Replicas (docs/SPEC.md §14 "Replicas").
		{[]string{"serve", "stdio", "--model", "m", "--lease", "1s"}, `agentmcp serve stdio: --lease needs --store: it is the lease of a PostgreSQL --store's shared tasks and rounds`, stdio},
		{[]string{"serve", "stdio", "--model", "m", "--store", "sqlite:/tmp/x.db", "--lease", "1s"}, `agentmcp serve stdio: --lease is the lease of a PostgreSQL store's shared tasks and rounds: give --store postgres://…`, stdio},
		{[]string{"serve", "stdio", "--model", "m", "--store", "postgres://u@127.0.0.1:1/db", "--lease", "10ms"}, `agentmcp serve stdio: invalid value "10ms" for --lease: must be at least 100ms`, stdio},
		{[]string{"serve", "stdio", "--lease", "1s"}, `agentmcp serve stdio: --lease needs --model: it configures the agent, which --model NAME turns on`, stdio},
		{[]string{"serve", "stdio", "--workspace-id", "team"}, `agentmcp serve stdio: --workspace-id needs --model: it configures the agent, which --model NAME turns on`, stdio},
		{[]string{"serve", "stdio", "--model", "m", "--workspace-id", "a b"}, `agentmcp serve stdio: invalid value "a b" for --workspace-id: want 1 to 256 letters, digits and . _ - : / (the same on every replica of the workspace)`, stdio},
		{[]string{"conversations", "list", "--store", "sqlite:/tmp/x.db", "--state-dir", "/tmp/x"}, `agentmcp conversations list: --store and --state-dir exclude each other: --store names the store itself (--state-dir DIR is --store sqlite:DIR/conversations.db): use one or the other`, "agentmcp conversations list [flags]"},
		{[]string{"serve", "stdio", "--model", "m", "--ephemeral", "--history-bytes", "100"}, `agentmcp serve stdio: invalid value "100" for --history-bytes: must be at least 1024`, stdio},
		{[]string{"serve", "stdio", "--model", "m", "--max-conversations", "0"}, `agentmcp serve stdio: invalid value "0" for --max-conversations: must be at least 1`, stdio},
		{[]string{"serve", "stdio", "--model", "m", "--max-conversations-per-principal", "0"}, `agentmcp serve stdio: invalid value "0" for --max-conversations-per-principal: must be at least 1`, stdio},
		{[]string{"serve", "stdio", "--model", "m", "--max-store-bytes", "-5"}, `agentmcp serve stdio: invalid value "-5" for --max-store-bytes: must be at least 1`, stdio},
		{[]string{"serve", "stdio", "--model", "m", "--max-conversation-age", "-1h"}, `agentmcp serve stdio: invalid value "-1h" for --max-conversation-age: must be more than 0`, stdio},
		// The conversations command's flags.
		{[]string{"conversations", "list", "--limit", "-1"}, `agentmcp conversations list: invalid value "-1" for --limit: must be at least 0`, "agentmcp conversations list [flags]"},
		{[]string{"conversations", "show", "--conversation", "a b"}, `agentmcp conversations show: invalid value "a b" for --conversation: ` + domain.ConversationNameRule, "agentmcp conversations show [flags]"},
		{[]string{"conversations", "clear", "--conversation", "x/y"}, `agentmcp conversations clear: invalid value "x/y" for --conversation: ` + domain.ConversationNameRule, "agentmcp conversations clear [flags]"},
		// run_command's flags.
		{[]string{"serve", "stdio", "--no-sandbox"}, `agentmcp serve stdio: --no-sandbox needs --allow-commands: it configures run_command, which --allow-commands turns on`, stdio},
		// A bool flag given false, or a flag given the empty string, is not given.
		{[]string{"serve", "stdio", "--allow-commands=false", "--no-sandbox"}, `agentmcp serve stdio: --no-sandbox needs --allow-commands: it configures run_command, which --allow-commands turns on`, stdio},
		// The task flags (docs/SPEC.md §14): zero, negative, below the wire's millisecond, out of order, not a value.
		{[]string{"serve", "stdio", "--task-ttl", "0s"}, `agentmcp serve stdio: invalid value "0s" for --task-ttl: must be at least 1ms`, stdio},
		{[]string{"serve", "http", "--task-ttl", "-1h"}, `agentmcp serve http: invalid value "-1h" for --task-ttl: must be at least 1ms`, http},
		{[]string{"serve", "stdio", "--task-ttl", "soon"}, `agentmcp serve stdio: invalid value "soon" for --task-ttl: want a duration such as 90s, 5m or 1h`, stdio},
		{[]string{"serve", "stdio", "--task-poll-interval", "500us"}, `agentmcp serve stdio: invalid value "500us" for --task-poll-interval: must be at least 1ms`, stdio},
		{[]string{"serve", "stdio", "--task-ttl", "2s"}, `agentmcp serve stdio: --task-poll-interval (2s) must be shorter than --task-ttl (2s): a client polling at that pace could find a finished task already forgotten`, stdio},
		{[]string{"serve", "unix", "--socket", "/tmp/s", "--max-tasks-per-client", "0"}, `agentmcp serve unix: invalid value "0" for --max-tasks-per-client: must be at least 1`, "agentmcp serve unix [flags]"},
		{[]string{"serve", "stdio", "--max-tasks-per-client", "-3"}, `agentmcp serve stdio: invalid value "-3" for --max-tasks-per-client: must be at least 1`, stdio},
		{append(remoteArgs, "--max-tasks", "0"), `agentmcp serve remote: invalid value "0" for --max-tasks: must be at least 1`, remote},
		{[]string{"serve", "stdio", "--max-tasks", "many"}, `agentmcp serve stdio: invalid value "many" for --max-tasks: want a whole number`, stdio},
		{[]string{"serve", "stdio", "--max-task-result-bytes", "0"}, `agentmcp serve stdio: invalid value "0" for --max-task-result-bytes: must be at least 1`, stdio},
		{[]string{"serve", "http", "--max-task-result-bytes-per-client", "-1"}, `agentmcp serve http: invalid value "-1" for --max-task-result-bytes-per-client: must be at least 1`, http},
		// serve http's token flags.
		{[]string{"serve", "http", "--persistent-token"}, `agentmcp serve http: --persistent-token needs --token-file: the file that keeps the token`, http},
		{[]string{"serve", "http", "--token-file", "/tmp/t", "--rotate-token"}, `agentmcp serve http: --rotate-token needs --persistent-token: it writes a new token into the persistent token's file`, http},
		{[]string{"serve", "http", "--token-file", "", "--persistent-token"}, `agentmcp serve http: --persistent-token needs --token-file: the file that keeps the token`, http},
		{[]string{"serve", "http", "--token-file", "/tmp/t", "--persistent-token=false", "--rotate-token"}, `agentmcp serve http: --rotate-token needs --persistent-token: it writes a new token into the persistent token's file`, http},
		{[]string{"serve", "unix", "--socket", "/tmp/" + strings.Repeat("s", 200)}, `agentmcp serve unix: --socket is 205 bytes long; a socket path holds at most 107 bytes on this system (sun_path): use a shorter one, say under $XDG_RUNTIME_DIR`, "agentmcp serve unix [flags]"},
		// serve remote's identity and admission, checked before anything is opened.
		{[]string{"serve", "remote", "--public-url", "http://mcp.example.com/mcp", "--issuer", "https://id.example.com", "--scope", "mcp", "--allowed-subject", "a"},
			`agentmcp serve remote: --public-url: must be an absolute https URL in canonical form (the scheme is not https (in lower case))`, remote},
		{[]string{"serve", "remote", "--public-url", "https://mcp.example.com/mcp", "--issuer", "http://id.example.com", "--scope", "mcp", "--allowed-subject", "a"},
			`agentmcp serve remote: issuer must be an absolute https URL with a host and no user info, query or fragment`, remote},
		{[]string{"serve", "remote", "--public-url", "https://mcp.example.com/mcp", "--issuer", "https://id.example.com", "--scope", "a b", "--allowed-subject", "a"},
			`agentmcp serve remote: required scope "a b" is not an RFC 6749 scope token`, remote},
		{append(remoteArgs, "--trusted-proxy", "nginx"), `agentmcp serve remote: --trusted-proxy: must be a literal IP address (got "nginx")`, remote},
		{append(remoteArgs, "--listen", "localhost:8080"), `agentmcp serve remote: --listen must be a literal IP:PORT, such as 127.0.0.1:8080 or [::1]:8080`, remote},
		{[]string{"version", "extra"}, `agentmcp version: unexpected argument "extra"`, "agentmcp version"},
		{[]string{"--version", "extra"}, `agentmcp version: unexpected argument "extra"`, "agentmcp version"},
		{[]string{"help", "sevre"}, `agentmcp help: unknown command "sevre" (did you mean "serve"?)`, "agentmcp help [COMMAND...]"},
		{[]string{"help", "serve", "unixx"}, `agentmcp help: unknown command "serve unixx" (did you mean "serve unix"?)`, "agentmcp help [COMMAND...]"},
		{[]string{"help", "serve", "htp"}, `agentmcp help: unknown command "serve htp" (did you mean "serve http"?)`, "agentmcp help [COMMAND...]"},
		{[]string{"help", "serve", "frobnicate"}, `agentmcp help: unknown command "serve frobnicate"`, "agentmcp help [COMMAND...]"},
		{[]string{"help", "version", "x"}, `agentmcp help: unknown command "version x"`, "agentmcp help [COMMAND...]"},
		// The top level's own flags, and --help everywhere, are near misses too.
		{[]string{"--verison"}, `agentmcp: unknown flag --verison (did you mean --version?)`, top},
		{[]string{"-versoin"}, `agentmcp: unknown flag --versoin (did you mean --version?)`, top},
		{[]string{"--hlep"}, `agentmcp: unknown flag --hlep (did you mean --help?)`, top},
		{[]string{"serve", "--hepl"}, `agentmcp serve: unknown flag --hepl (did you mean --help?)`, serve},
		{[]string{"serve", "stdio", "--hlep"}, `agentmcp serve stdio: unknown flag --hlep (did you mean --help?)`, stdio},
		{[]string{"conversations", "list", "--rot", "x"}, `agentmcp conversations list: unknown flag --rot (did you mean --root?)`, "agentmcp conversations list [flags]"},
	}
	flagless := map[string]bool{"agentmcp help": true, "agentmcp version": true} // commands with no flag but -h
	for _, tt := range tests {
		code, stdout, stderr := runCLI(t, tt.args...)
		if code != 2 || stdout != "" {
			t.Errorf("%q: exit %d, stdout %q; want 2 and nothing", tt.args, code, stdout)
		}
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if len(lines) > 4 {
			t.Errorf("%q: %d lines on stderr, want at most 4:\n%s", tt.args, len(lines), stderr)
		}
		if lines[0] != tt.line {
			t.Errorf("%q: first stderr line\n%s\nwant\n%s", tt.args, lines[0], tt.line)
		}
		if len(lines) < 3 || lines[1] != "Usage: "+tt.usage {
			t.Errorf("%q: the usage line does not follow the error line:\n%s", tt.args, stderr)
		}
		path := strings.TrimSuffix(tt.line[:strings.Index(tt.line, ": ")], " ")
		if last := lines[len(lines)-1]; !strings.HasPrefix(last, "Run '"+path+" --help' for ") {
			t.Errorf("%q: the last line %q does not point at %s --help", tt.args, last, path)
		} else if flagless[path] && strings.Contains(last, "flags") {
			t.Errorf("%q: the last line %q points at flags %s has not", tt.args, last, path)
		}
		for _, l := range lines[1:] {
			if strings.HasPrefix(l, "agentmcp") || strings.Contains(l, "level=") {
				t.Errorf("%q: a second error line or a log line %q in:\n%s", tt.args, l, stderr)
			}
		}
	}
}

// TestFlagDashes: flags are accepted with one dash or two, with the value
// apart or after "=".
func TestFlagDashes(t *testing.T) {
	root := t.TempDir()
	for _, args := range [][]string{
		{"serve", "stdio", "-root", root},
		{"serve", "stdio", "--root", root},
		{"serve", "stdio", "--root=" + root, "--ask-client"},
		{"serve", "stdio", "-root=" + root, "-ask-client=false"},
	} {
		// Stdin is empty: the carrier starts and ends at once, status 0.
		if code, stdout, stderr := runCLI(t, args...); code != 0 || stdout != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
}
