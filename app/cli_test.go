package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/app"
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

// TestUsageErrors: an unknown command or flag, a missing command, an
// unexpected argument or a bad flag value exits 2 with exactly one line
// saying what is wrong and then the usage, on stderr; nothing on stdout.
func TestUsageErrors(t *testing.T) {
	tests := []struct {
		args  []string
		line  string // the first line of stderr
		usage string // the usage line that follows
	}{
		{nil, `agentmcp: missing command`, "agentmcp <command> [flags]"},
		{[]string{"sevre"}, `agentmcp: unknown command "sevre"`, "agentmcp <command> [flags]"},
		{[]string{"--bogus"}, `agentmcp: unknown flag --bogus`, "agentmcp <command> [flags]"},
		{[]string{"-root=x", "serve"}, `agentmcp: unknown flag --root`, "agentmcp <command> [flags]"},
		{[]string{"serve"}, `agentmcp serve: missing carrier`, "agentmcp serve <carrier> [flags]"},
		{[]string{"serve", "unixx"}, `agentmcp serve: unknown carrier "unixx"`, "agentmcp serve <carrier> [flags]"},
		{[]string{"serve", "stdio", "--rooot", "x"}, `agentmcp serve stdio: unknown flag --rooot`, "agentmcp serve stdio [flags]"},
		{[]string{"serve", "stdio", "-rooot", "x"}, `agentmcp serve stdio: unknown flag --rooot`, "agentmcp serve stdio [flags]"},
		{[]string{"serve", "stdio", "extra"}, `agentmcp serve stdio: unexpected argument "extra"`, "agentmcp serve stdio [flags]"},
		{[]string{"serve", "stdio", "--ask-client=maybe"}, `agentmcp serve stdio: invalid boolean value "maybe" for --ask-client: parse error`, "agentmcp serve stdio [flags]"},
		{[]string{"serve", "http", "--port"}, `agentmcp serve http: flag --port needs a value`, "agentmcp serve http [flags]"},
		{[]string{"serve", "http", "--port", "abc"}, `agentmcp serve http: invalid value "abc" for flag --port: parse error`, "agentmcp serve http [flags]"},
		{[]string{"serve", "http", "--port", "65536"}, `agentmcp serve http: --port must be within 0..65535`, "agentmcp serve http [flags]"},
		{[]string{"serve", "remote"}, `agentmcp serve remote: --public-url is required`, "agentmcp serve remote --public-url URL --issuer URL --scope S..."},
		// Small usage errors a newcomer meets, each named, exit 2, nothing logged first.
		{[]string{"serve", "stdio", "--submit-name", "my tool"}, `agentmcp serve stdio: --submit-name "my tool": the name must match ^[A-Za-z0-9._-]{1,128}$`, "agentmcp serve stdio [flags]"},
		{[]string{"serve", "stdio", "--model", ""}, `agentmcp serve stdio: --model needs a model NAME (leave --model out to serve without the agent)`, "agentmcp serve stdio [flags]"},
		// The task flags (docs/SPEC.md §14): zero, negative, below the wire's millisecond, out of order, not a value.
		{[]string{"serve", "stdio", "--task-ttl", "0s"}, `agentmcp serve stdio: --task-ttl must be at least 1ms, got 0s`, "agentmcp serve stdio [flags]"},
		{[]string{"serve", "http", "--task-ttl", "-1h"}, `agentmcp serve http: --task-ttl must be at least 1ms, got -1h0m0s`, "agentmcp serve http [flags]"},
		{[]string{"serve", "stdio", "--task-ttl", "soon"}, `agentmcp serve stdio: invalid value "soon" for flag --task-ttl: parse error`, "agentmcp serve stdio [flags]"},
		{[]string{"serve", "stdio", "--task-poll-interval", "500us"}, `agentmcp serve stdio: --task-poll-interval must be at least 1ms, got 500µs`, "agentmcp serve stdio [flags]"},
		{[]string{"serve", "stdio", "--task-ttl", "2s"}, `agentmcp serve stdio: --task-poll-interval (2s) must be shorter than --task-ttl (2s): a client polling at that pace could find a finished task already forgotten`, "agentmcp serve stdio [flags]"},
		{[]string{"serve", "unix", "--socket", "/tmp/s", "--max-tasks-per-client", "0"}, `agentmcp serve unix: --max-tasks-per-client must be at least 1, got 0`, "agentmcp serve unix --socket PATH [flags]"},
		{[]string{"serve", "stdio", "--max-tasks-per-client", "-3"}, `agentmcp serve stdio: --max-tasks-per-client must be at least 1, got -3`, "agentmcp serve stdio [flags]"},
		{[]string{"serve", "remote", "--public-url", "https://mcp.example.com/mcp", "--issuer", "https://id.example.com", "--scope", "mcp", "--allowed-subject", "a", "--max-tasks", "0"}, `agentmcp serve remote: --max-tasks must be at least 1, got 0`, "agentmcp serve remote --public-url URL --issuer URL --scope S..."},
		{[]string{"serve", "stdio", "--max-tasks", "0"}, `agentmcp serve stdio: --max-tasks must be at least 1, got 0`, "agentmcp serve stdio [flags]"},
		{[]string{"serve", "stdio", "--max-task-result-bytes", "0"}, `agentmcp serve stdio: --max-task-result-bytes must be at least 1, got 0`, "agentmcp serve stdio [flags]"},
		{[]string{"serve", "http", "--max-task-result-bytes-per-client", "-1"}, `agentmcp serve http: --max-task-result-bytes-per-client must be at least 1, got -1`, "agentmcp serve http [flags]"},
		{[]string{"serve", "stdio", "--max-tasks", "many"}, `agentmcp serve stdio: invalid value "many" for flag --max-tasks: parse error`, "agentmcp serve stdio [flags]"},
		{[]string{"serve", "http", "--persistent-token"}, `agentmcp serve http: --persistent-token needs --token-file PATH: the file that keeps the token`, "agentmcp serve http [flags]"},
		{[]string{"serve", "unix", "--socket", "/tmp/" + strings.Repeat("s", 200)}, `agentmcp serve unix: --socket is 205 bytes long; a socket path holds at most 107 bytes on this system (sun_path): use a shorter one, say under $XDG_RUNTIME_DIR`, "agentmcp serve unix --socket PATH [flags]"},
		{[]string{"version", "extra"}, `agentmcp version: unexpected argument "extra"`, "agentmcp version"},
		{[]string{"--version", "extra"}, `agentmcp version: unexpected argument "extra"`, "agentmcp version"},
		{[]string{"help", "sevre"}, `agentmcp help: unknown command "sevre"`, "agentmcp help [COMMAND...]"},
		{[]string{"help", "serve", "unixx"}, `agentmcp help: unknown command "serve unixx"`, "agentmcp help [COMMAND...]"},
	}
	for _, tt := range tests {
		code, stdout, stderr := runCLI(t, tt.args...)
		if code != 2 || stdout != "" {
			t.Errorf("%q: exit %d, stdout %q; want 2 and nothing", tt.args, code, stdout)
		}
		first, rest, _ := strings.Cut(stderr, "\n")
		if first != tt.line {
			t.Errorf("%q: first stderr line %q, want %q", tt.args, first, tt.line)
		}
		if !strings.HasPrefix(rest, "Usage:\n  "+tt.usage+"\n") {
			t.Errorf("%q: the usage does not follow the error line:\n%s", tt.args, stderr)
		}
		// One error line: the usage never repeats it, nor adds one.
		for _, l := range strings.Split(rest, "\n") {
			if strings.HasPrefix(l, "agentmcp") {
				t.Errorf("%q: a second error line %q in:\n%s", tt.args, l, stderr)
			}
		}
		if !strings.Contains(rest, "\nRun 'agentmcp help") {
			t.Errorf("%q: the usage does not point at the help:\n%s", tt.args, stderr)
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
