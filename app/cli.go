package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
the turns run at once (one per conversation; default 4). Its
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
			rules:      serveRules,
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

	// rules relate the command's flags (a group's: those of every command
	// under it), checked once they are parsed (flagcheck.go).
	rules []flagRule
	// hints answer an unknown flag people are known to try on this
	// command, by its name without dashes ("host" on serve http), in place
	// of the nearest known flag.
	hints map[string]string
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
	// rules are the flag rules of the groups above the command run.
	rules []flagRule
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
//     a missing or bad value, flags that need or exclude each other; see
//     flagcheck.go and docs/SPEC.md §15): one line "agentmcp ...: <what is
//     wrong>", the usage line and where the help is, on stderr (at most four
//     lines, before anything is opened or logged); nothing on stdout.
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
			writeHelp(inv.stdout, path, c, inv.rules)
			return 0
		}
		return usageError(inv.stderr, path, c, c.flagError(fs, err))
	}
	if !c.args && fs.NArg() > 0 {
		if i := len(args) - fs.NArg() - 1; i >= 0 && secretFlag(flagName(args[i])) {
			// "--persistent-token <token>": a bool flag takes no value, and
			// what was meant as one may be the secret itself.
			return usageError(inv.stderr, path, c, fmt.Sprintf("unexpected argument after --%[1]s (not shown: it may be a secret; --%[1]s takes no value)",
				flagName(args[i])))
		}
		return usageError(inv.stderr, path, c, fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
	}
	given := givenFlags(fs)
	for _, r := range append(inv.rules, c.rules...) {
		if msg := r.check(given); msg != "" {
			return usageError(inv.stderr, path, c, msg)
		}
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
		writeHelp(inv.stdout, path, c, inv.rules)
		return 0
	case c == inv.root && (a == "--version" || a == "-version"):
		if v := c.find("version"); v != nil {
			return v.exec(ctx, path+" version", args[1:], inv)
		}
	case strings.HasPrefix(a, "-"):
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		return usageError(inv.stderr, path, c, c.groupFlagError(path, name))
	}
	sub := c.find(a)
	if sub == nil {
		msg := fmt.Sprintf("unknown %s %q", c.kind(), a)
		if near := didYouMean(a, c.subNames()); near != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", near)
		}
		return usageError(inv.stderr, path, c, msg)
	}
	inv.rules = append(inv.rules, c.rules...)
	return sub.exec(ctx, path+" "+sub.name, args[1:], inv)
}

// subNames are the names of group c's commands, in table order.
func (c *command) subNames() []string {
	var names []string
	for _, s := range c.subs {
		names = append(names, s.name)
	}
	return names
}

func (c *command) find(name string) *command {
	for _, s := range c.subs {
		if s.name == name {
			return s
		}
	}
	return nil
}

// groupFlagError is the usage error of a flag given to group c before its
// command: one its commands all take (groupFlags), or the nearest such,
// belongs after the command ("agentmcp serve --root . stdio"); the nearest
// of the group's own flags (groupOwnFlags) is suggested as it is.
func (c *command) groupFlagError(path, name string) string {
	msg := "unknown flag --" + name
	own := groupOwnFlags(path)
	var names []string
	if c.groupFlags != nil && len(c.subs) > 0 {
		fs := flag.NewFlagSet(path, flag.ContinueOnError)
		c.groupFlags(fs)
		if fs.Lookup(name) != nil {
			return fmt.Sprintf("--%s goes after the %s, as in '%s %s --%s …'", name, c.kind(), path, c.subs[0].name, name)
		}
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	}
	switch near := didYouMean(name, append(names, own...)); {
	case near == "":
		return msg
	case slices.Contains(own, near):
		return msg + " (did you mean --" + near + "?)"
	default:
		return fmt.Sprintf("%s (did you mean --%s? it goes after the %s, as in '%s %s --%s …')", msg, near, c.kind(), path, c.subs[0].name, near)
	}
}

// groupOwnFlags are the flags a group at path takes itself, as its help
// lists them: --help, and at the top level --version.
func groupOwnFlags(path string) []string {
	if !strings.Contains(path, " ") {
		return []string{"help", "version"}
	}
	return []string{"help"}
}

func (c *command) kind() string {
	if c.subKind == "" {
		return "command"
	}
	return c.subKind
}

func isHelpFlag(a string) bool { return a == "-h" || a == "-help" || a == "--help" }

// flagError rewrites an error of the flag package parsing fs (c's flags)
// as one line that names flags with two dashes, as the help does: an
// unknown flag with c's hint for it or the nearest known flag ("unknown
// flag --rooot (did you mean --root?)"), a missing value, or a bad value
// with what the flag wants.
func (c *command) flagError(fs *flag.FlagSet, err error) string {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		if hint, ok := c.hints[name]; ok {
			return "--" + name + ": " + hint
		}
		names := []string{"help"}
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if near := didYouMean(name, names); near != "" {
			return "unknown flag --" + name + " (did you mean --" + near + "?)"
		}
		return "unknown flag --" + name
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "flag --" + name + " needs a value"
	}
	// `invalid value "x" for flag -port: parse error`, `invalid boolean
	// value "x" for -ask-client: parse error`: the built-in types' "parse
	// error" says what they want instead.
	i := strings.Index(msg, " for flag -")
	form := len(" for flag -")
	if strings.HasPrefix(msg, "invalid boolean value ") {
		i, form = strings.Index(msg, " for -"), len(" for -")
	}
	q := strings.IndexByte(msg, '"')
	if !strings.HasPrefix(msg, "invalid ") || i < 0 || q < 0 || q > i {
		return msg
	}
	value, err := strconv.Unquote(msg[q:i])
	if err != nil {
		return msg
	}
	name, why, _ := strings.Cut(msg[i+form:], ": ")
	if why == "parse error" || why == "value out of range" {
		why = wanted(fs.Lookup(name))
	}
	if secretFlag(name) {
		return fmt.Sprintf("invalid value for --%s (not shown: it may be a secret): %s", name, why)
	}
	return fmt.Sprintf("invalid value %q for --%s: %s", value, name, why)
}

// secretFlag reports whether the flag called name is named for a secret
// (its last word token, secret, password, passphrase, key or credential:
// --persistent-token, --api-key), so a usage error never shows a value
// given to it — someone may have put the token itself there. A flag that
// names where a secret is (--token-file, --secret-env) is not one.
func secretFlag(name string) bool {
	words := strings.Split(strings.ToLower(name), "-")
	switch words[len(words)-1] {
	case "token", "secret", "password", "passphrase", "key", "credential", "credentials":
		return true
	}
	return false
}

// flagName is the name of the flag argument a ("--name=value" → "name"),
// or "" when a is not a flag.
func flagName(a string) string {
	if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
		return ""
	}
	name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
	return name
}

// wanted says what a flag of a built-in type takes.
func wanted(f *flag.Flag) string {
	if f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			switch g.Get().(type) {
			case bool:
				return "want true or false"
			case time.Duration:
				return durationWanted
			case int, int64, uint, uint64:
				return "want a whole number"
			case float64:
				return "want a number"
			}
		}
	}
	return "not a value this flag takes"
}

// usageError writes "<path>: <msg>" and c's usage on w, and returns 2.
// It is where every usage error is rendered, so it bounds what msg echoes
// of the command line (boundEchoes): a 1 MB value gives a short line.
func usageError(w io.Writer, path string, c *command, msg string) int {
	fmt.Fprintf(w, "%s: %s\n", path, boundEchoes(msg))
	writeUsage(w, path, c)
	return 2
}

const (
	// maxEcho is how much of a value a usage error shows: the first
	// maxEcho bytes (whole characters), then "…".
	maxEcho = 64
	// maxUsageLine bounds a usage error's message, whatever it echoes.
	maxUsageLine = 400
)

// boundEchoes bounds what msg shows of values from the command line, in
// the two forms they take in a usage error: a Go-quoted string (%q, as the
// flag package and this package quote values, names and arguments) keeps
// its first maxEcho bytes, then "…" inside the quotes; any other run of
// non-space bytes longer than maxEcho (an unknown flag's name, a path in
// an error) likewise. The message is then cut at maxUsageLine bytes.
func boundEchoes(msg string) string {
	var b strings.Builder
	for i := 0; i < len(msg); {
		switch {
		case msg[i] == ' ':
			b.WriteByte(' ')
			i++
			continue
		case msg[i] == '"':
			if q, err := strconv.QuotedPrefix(msg[i:]); err == nil {
				i += len(q)
				if v, err := strconv.Unquote(q); err == nil && len(v) > maxEcho {
					q = strconv.Quote(cutBytes(v, maxEcho) + "…")
				}
				b.WriteString(q)
				continue
			}
		}
		j := len(msg)
		if k := strings.IndexAny(msg[i+1:], " \""); k >= 0 {
			j = i + 1 + k
		}
		if word := msg[i:j]; len(word) > maxEcho {
			b.WriteString(cutBytes(word, maxEcho) + "…")
		} else {
			b.WriteString(word)
		}
		i = j
	}
	if out := b.String(); len(out) > maxUsageLine {
		return cutBytes(out, maxUsageLine) + "…"
	}
	return b.String()
}

// cutBytes is s's first n bytes at most, not splitting a UTF-8 character.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
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
			var rules []flagRule // the rules of the groups above c
			for _, name := range inv.fs.Args() {
				sub := c.find(name)
				if sub == nil {
					rel := func(n string) string { return strings.TrimPrefix(path+" "+n, inv.root.name+" ") }
					msg := fmt.Sprintf("unknown command %q", rel(name))
					if near := didYouMean(name, c.subNames()); near != "" {
						msg += fmt.Sprintf(" (did you mean %q?)", rel(near))
					}
					return inv.usageError("%s", msg)
				}
				rules = append(rules, c.rules...)
				c, path = sub, path+" "+name
			}
			writeHelp(inv.stdout, path, c, rules)
			return 0
		}
	},
}
