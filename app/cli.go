package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/agentmcp/agentmcp/ports"
)

// commandLine is the command line as a table. A command is one entry: a
// new carrier is one more entry in serve's subs (its own file, like
// serveHTTPCommand), and a flag every serve command takes is one more line
// in addServeFlags. Help, usage errors and the flag listing are all derived
// from the entries.
var commandLine = &command{
	name:    "agentmcp",
	summary: "agentmcp serves an agent session as an MCP (Model Context Protocol) server",
	subs: []*command{
		{
			name:    "serve",
			summary: "Serve the reference workspace session as an MCP server over a carrier",
			about: `The reference session offers list_dir, read_file, search_text, find_files,
write_file and edit_file over --root DIR, and the submission tool
(agent_submit unless --submit-name says otherwise), which is refused until a
model backend is configured.

--model NAME turns on the agent behind the submission tool, on any
OpenAI-compatible Chat Completions endpoint: --model-url URL (default
$OPENAI_BASE_URL, else https://api.openai.com/v1; Ollama:
http://127.0.0.1:11434/v1), the key from OPENAI_API_KEY only,
--system-prompt-file PATH to replace its system prompt, --max-turns N for
the turns run at once (one per principal's conversation; default 4). Its
conversations are kept in --state-dir DIR (default
$XDG_STATE_HOME/agentmcp), or in memory only with --ephemeral. Without
--model the submission tool is refused.

--ask-client sends the session's permission and ask prompts to the MCP client
that made the call (elicitation, or input-required rounds). Turn it on only
when you trust whoever can reach the carrier to approve the session's tool
calls: an approval lets the session write files under DIR. Over HTTP only
2026-07-28 clients can be asked; the start-up log says who can approve.

--allow-commands adds run_command: one shell command per approval, in DIR,
sandboxed. --sandbox bubblewrap (the default) runs it in bubblewrap, with
Landlock inside: the system read-only, DIR writable (its .git read-only), a
private /tmp and home, your home, /tmp, /run and the server's state hidden,
no other process, no network unless --command-network. --sandbox landlock
is Landlock alone, weaker (it can read all your files), for where bubblewrap
cannot run; --sandbox none (or --no-sandbox) runs commands unsandboxed.
Where the sandbox cannot run it refuses to start and says what to install.

--metrics-listen IP:PORT serves Prometheus metrics at /metrics on a listener
of its own (off by default). The HTTP carriers answer GET /healthz and
/readyz without a token (--no-health turns them off).`,
			subKind:    "carrier",
			groupFlags: func(fs *flag.FlagSet) { addServeFlags(fs) },
			subs:       []*command{serveStdioCommand, serveHTTPCommand, serveUnixCommand, serveRemoteCommand},
		},
		recordCommand,
		conversationsCommand,
		versionCommand,
		helpCommand,
	},
}

// command is one entry of the command line: a leaf, which has setup, or a
// group ("agentmcp", "agentmcp serve"), which has subs.
type command struct {
	name     string // the word that selects it: "serve", "http"
	summary  string // one line, capitalised, no final period
	synopsis string // what follows the command's path in its usage line: "[flags]"
	about    string // paragraphs its help shows after the summary; optional
	example  string // a command line, shown in its help and in the top-level help

	// setup registers a leaf's flags on fs and returns the function that
	// runs the leaf once fs is parsed (usually a closure over the flags'
	// values). Help calls it too, on a throwaway FlagSet, to list the flags.
	setup func(fs *flag.FlagSet) runFunc
	args  bool // the leaf takes positional arguments; otherwise one is a usage error

	subs       []*command             // a group's commands, in the order help lists them
	subKind    string                 // what a group's commands are called: "command" when empty
	groupFlags func(fs *flag.FlagSet) // the flags every command of the group takes, for its help
}

// runFunc runs a leaf command; it returns the exit code.
type runFunc func(ctx context.Context, inv *invocation) int

// invocation is one run of a leaf command.
type invocation struct {
	root           *command // the whole command line (commandLine)
	path           string   // the command's path: "agentmcp serve http"
	cmd            *command
	fs             *flag.FlagSet // cmd's parsed flags
	stdin          io.Reader
	stdout, stderr io.Writer
	// observer, when set, watches what the serve commands serve besides
	// their own metrics (MainWith).
	observer ports.Observer
}

// usageError writes "<path>: <message>" and then the command's usage on
// stderr, and returns 2.
func (inv *invocation) usageError(format string, a ...any) int {
	return usageError(inv.stderr, inv.path, inv.cmd, fmt.Sprintf(format, a...))
}

// Main runs the command line with args (without the program name) and
// returns the process exit code:
//
//   - 0 on a clean end (stdin closed, SIGINT or SIGTERM through ctx), and
//     after printing help or the version on stdout;
//   - 1 on a failure, logged on stderr;
//   - 2 on a usage error (an unknown command or flag, an unexpected argument,
//     a missing or malformed flag): one line "agentmcp ...: <what is wrong>"
//     and then the command's usage, on stderr; nothing on stdout.
//
// "help", -h and --help at any level print help on stdout. Logs go to
// stderr; a serve command's stdout carries only MCP messages (stdio) or one
// line: the endpoint URL (http), the socket path (unix), the bound address
// (remote).
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return MainWith(ctx, args, stdin, stdout, stderr, MainOptions{})
}

// MainOptions extends [MainWith]'s command line.
type MainOptions struct {
	// Observer, when set, watches every serve command's engine and agent
	// (docs/SPEC.md §13) beside its metrics: the otel module's command
	// passes its tracer here, so the default binary carries no
	// OpenTelemetry.
	Observer ports.Observer
}

// MainWith is [Main] with o.
func MainWith(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, o MainOptions) int {
	inv := &invocation{root: commandLine, stdin: stdin, stdout: stdout, stderr: stderr, observer: o.Observer}
	return commandLine.exec(ctx, commandLine.name, args, inv)
}

// exec runs c, whose path is path, with args.
func (c *command) exec(ctx context.Context, path string, args []string, inv *invocation) int {
	if c.subs != nil {
		return c.execGroup(ctx, path, args, inv)
	}
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported here, once, in the usage error's form
	run := c.setup(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			writeHelp(inv.stdout, path, c)
			return 0
		}
		return usageError(inv.stderr, path, c, flagError(err))
	}
	if !c.args && fs.NArg() > 0 {
		return usageError(inv.stderr, path, c, fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	inv.path, inv.cmd, inv.fs = path, c, fs
	return run(ctx, inv)
}

// execGroup selects the command of group c that args[0] names; -h, -help
// and --help print the group's help, and at the top level --version runs
// the version command.
func (c *command) execGroup(ctx context.Context, path string, args []string, inv *invocation) int {
	if len(args) == 0 {
		return usageError(inv.stderr, path, c, "missing "+c.kind())
	}
	a := args[0]
	switch {
	case isHelpFlag(a):
		writeHelp(inv.stdout, path, c)
		return 0
	case c == inv.root && (a == "--version" || a == "-version"):
		if v := c.find("version"); v != nil {
			return v.exec(ctx, path+" version", args[1:], inv)
		}
	case strings.HasPrefix(a, "-"):
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		return usageError(inv.stderr, path, c, "unknown flag --"+name)
	}
	sub := c.find(a)
	if sub == nil {
		return usageError(inv.stderr, path, c, fmt.Sprintf("unknown %s %q", c.kind(), a))
	}
	return sub.exec(ctx, path+" "+sub.name, args[1:], inv)
}

func (c *command) find(name string) *command {
	for _, s := range c.subs {
		if s.name == name {
			return s
		}
	}
	return nil
}

func (c *command) kind() string {
	if c.subKind == "" {
		return "command"
	}
	return c.subKind
}

func isHelpFlag(a string) bool { return a == "-h" || a == "-help" || a == "--help" }

// flagError rewrites an error of the flag package as one line that names
// flags with two dashes, as the help does: "unknown flag --rooot".
func flagError(err error) string {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + name
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "flag --" + name + " needs a value"
	}
	// `invalid value "x" for flag -port: ...`, `invalid boolean value "x" for -ask-client: ...`
	msg = strings.Replace(msg, " for flag -", " for flag --", 1)
	return strings.Replace(msg, " for -", " for --", 1)
}

// usageError writes "<path>: <msg>" and c's usage on w, and returns 2.
func usageError(w io.Writer, path string, c *command, msg string) int {
	fmt.Fprintf(w, "%s: %s\n", path, msg)
	writeUsage(w, path, c)
	return 2
}

// helpCommand is "agentmcp help [COMMAND...]".
var helpCommand = &command{
	name:     "help",
	summary:  "Print help for agentmcp or one of its commands",
	synopsis: "[COMMAND...]",
	example:  "agentmcp help serve http",
	args:     true,
	setup: func(*flag.FlagSet) runFunc {
		return func(_ context.Context, inv *invocation) int {
			c, path := inv.root, inv.root.name
			for _, name := range inv.fs.Args() {
				sub := c.find(name)
				if sub == nil {
					return inv.usageError("unknown command %q", strings.TrimPrefix(path+" "+name, inv.root.name+" "))
				}
				c, path = sub, path+" "+name
			}
			writeHelp(inv.stdout, path, c)
			return 0
		}
	},
}
