package app

import (
	"flag"
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentmcp/agentmcp/ports"
)

func TestServerVersion(t *testing.T) {
	main := func(v string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: v}}
	}
	dep := func(m *debug.Module) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "example.com/host", Version: "v1.0.0"}, Deps: []*debug.Module{
			{Path: "golang.org/x/time", Version: "v0.16.0"}, m,
		}}
	}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build information", nil, false, baseVersion},
		{"go run, -buildvcs=false", main("(devel)"), true, baseVersion},
		{"no version", main(""), true, baseVersion},
		{"release", main("v0.3.0"), true, "0.3.0"},
		{"pre-release", main("v0.3.0-rc.1"), true, "0.3.0-rc.1"},
		{"modified release", main("v0.3.0+dirty"), true, baseVersion},
		{"untagged commit", main("v0.0.0-20261201140851-6e5f498d729d"), true, baseVersion},
		{"commit after a tag", main("v0.3.1-0.20261201140851-6e5f498d729d"), true, baseVersion},
		{"commit after a pre-release", main("v0.3.0-rc.1.0.20261201140851-6e5f498d729d"), true, baseVersion},
		{"modified commit", main("v0.0.0-20261201140851-6e5f498d729d+dirty"), true, baseVersion},
		{"dependency of a host", dep(&debug.Module{Path: modulePath, Version: "v0.4.0"}), true, "0.4.0"},
		{"replaced by a directory", dep(&debug.Module{Path: modulePath, Version: "v0.4.0", Replace: &debug.Module{Path: "../agentmcp"}}), true, baseVersion},
		{"not in the build", dep(&debug.Module{Path: "example.com/other", Version: "v2.0.0"}), true, baseVersion},
	}
	for _, tt := range tests {
		if got := serverVersion(tt.bi, tt.ok); got != tt.want {
			t.Errorf("%s: serverVersion = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestBuildText(t *testing.T) {
	platform := " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
	stamped := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: modulePath, Version: "v0.0.0-20261201140851-6e5f498d729d+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "-buildmode", Value: "exe"},
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "6e5f498d729d6b0053a30d9565a920c22f33556b"},
			{Key: "vcs.time", Value: "2026-12-01T14:08:51Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	clean := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: modulePath, Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "false"}}}
	unstamped := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: modulePath, Version: "(devel)"}}
	host := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "example.com/host", Version: "(devel)"},
		Deps:     []*debug.Module{{Path: modulePath, Version: "v0.4.0"}},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "the host's"}}}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"stamped, modified", stamped, true, "module github.com/agentmcp/agentmcp v0.0.0-20261201140851-6e5f498d729d+dirty\n" +
			"revision 6e5f498d729d6b0053a30d9565a920c22f33556b (2026-12-01T14:08:51Z, modified)\ngo go1.26.8" + platform},
		{"stamped, clean", clean, true, "module github.com/agentmcp/agentmcp v0.3.0\nrevision abc123 (unmodified)\ngo go1.26.8" + platform},
		{"go run, -buildvcs=false", unstamped, true, "module github.com/agentmcp/agentmcp (devel)\nrevision unknown\ngo go1.26.8" + platform},
		{"a dependency: the revision is the host's", host, true, "module github.com/agentmcp/agentmcp v0.4.0\nrevision unknown\ngo go1.26.8" + platform},
		{"no build information", nil, false, "module github.com/agentmcp/agentmcp (devel)\nrevision unknown\ngo " + runtime.Version() + platform},
	}
	for _, tt := range tests {
		if got := buildText(tt.bi, tt.ok); got != tt.want {
			t.Errorf("%s:\n%s--- want\n%s", tt.name, got, tt.want)
		}
	}
}

// TestCommandTable: the conventions help relies on, so that a new entry
// cannot break them unnoticed: every leaf has a one-line summary and an
// example that runs it, and every flag that takes a value names it in back
// quotes (shown as "--flag ARG"); names are unique within a group.
func TestCommandTable(t *testing.T) {
	argName := regexp.MustCompile(`^[A-Z][A-Z:]*$`)
	for _, l := range leaves(commandLine, "") {
		path := "agentmcp " + l.path
		c := l.cmd
		if c.summary == "" || strings.Contains(c.summary, "\n") || strings.HasSuffix(c.summary, ".") {
			t.Errorf("%s: summary %q: want one line without a final period", path, c.summary)
		}
		if !strings.HasPrefix(c.example, path) {
			t.Errorf("%s: example %q does not run it", path, c.example)
		}
		if c.setup == nil {
			t.Errorf("%s: a leaf without setup", path)
			continue
		}
		leafFlags(path, c).VisitAll(func(f *flag.Flag) {
			name, usage := flag.UnquoteUsage(f)
			if isBool(f) {
				if name != "" {
					t.Errorf("%s --%s: a bool flag with an argument name %q", path, f.Name, name)
				}
			} else if !argName.MatchString(name) {
				t.Errorf("%s --%s: argument name %q; name it in back quotes in the usage text", path, f.Name, name)
			}
			if usage == "" || strings.Contains(usage, "\n") {
				t.Errorf("%s --%s: usage %q: want one line", path, f.Name, usage)
			}
		})
	}
	// Every flag a rule names is a flag of every command it applies to,
	// and a hint never shadows a flag the command has.
	var rules func(c *command, inherited []flagRule)
	rules = func(c *command, inherited []flagRule) {
		inherited = append(inherited, c.rules...)
		if c.subs != nil {
			for _, s := range c.subs {
				rules(s, inherited)
			}
			return
		}
		fs := leafFlags(c.name, c)
		for _, r := range inherited {
			for _, name := range append(append([]string{}, r.flags...), r.needs, r.excludes) {
				if name != "" && fs.Lookup(name) == nil {
					t.Errorf("%s: a flag rule names --%s, which it does not have", c.name, name)
				}
			}
		}
		for name := range c.hints {
			if fs.Lookup(name) != nil {
				t.Errorf("%s: a hint for --%s, which it has", c.name, name)
			}
		}
	}
	rules(commandLine, nil)
	var groups func(c *command)
	groups = func(c *command) {
		seen := map[string]bool{}
		for _, s := range c.subs {
			if seen[s.name] {
				t.Errorf("%s: two entries named %q", c.name, s.name)
			}
			seen[s.name] = true
			groups(s)
		}
	}
	groups(commandLine)
}

// TestFlagRulesReadValues: a rule relates flags given a value that turns
// something on; a bool flag given false, or a flag given the empty string,
// counts as not given (--ephemeral=false goes with --state-dir, and
// --allow-commands=false does not turn run_command on for --no-sandbox).
func TestFlagRulesReadValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", "m", "--ephemeral=false", "--state-dir", "/tmp/x"}, ""},
		{[]string{"--model", "m", "--ephemeral", "--state-dir", ""}, ""},
		{[]string{"--model", "m", "--ephemeral", "--state-dir", "/tmp/x"}, "--ephemeral and --state-dir exclude each other"},
		{[]string{"--no-sandbox=false"}, ""},
		{[]string{"--allow-commands=false", "--no-sandbox"}, "--no-sandbox needs --allow-commands"},
		{[]string{"--model-url", ""}, ""},
		{[]string{"--model", "", "--max-turns", "2"}, "--max-turns needs --model"},
	} {
		fs := flag.NewFlagSet("serve stdio", flag.ContinueOnError)
		addServeFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		got := ""
		for _, r := range serveRules {
			if got = r.check(givenFlags(fs)); got != "" {
				break
			}
		}
		if (c.want == "") != (got == "") || !strings.HasPrefix(got, c.want) {
			t.Errorf("%q: %q, want %q", c.args, got, c.want)
		}
	}
}

// TestHelpMarksNeeds: in every help that lists flags (a command's, and a
// group's flags every command takes), a flag that a rule says needs
// another is marked "(needs --OTHER)", and no other flag is: the mark
// comes from the rules, so it is never missing (it was on 3 of the 11
// flags --model turns on).
func TestHelpMarksNeeds(t *testing.T) {
	var walk func(c *command, words []string, inherited []flagRule)
	walk = func(c *command, words []string, inherited []flagRule) {
		rules := append(append([]flagRule{}, inherited...), c.rules...)
		needs := map[string][]string{}
		for _, r := range rules {
			if r.needs != "" {
				for _, name := range r.flags {
					needs[name] = append(needs[name], r.needs)
				}
			}
		}
		var out, errOut strings.Builder
		if code := Main(t.Context(), append([]string{"help"}, words...), strings.NewReader(""), &out, &errOut); code != 0 {
			t.Fatalf("help %q: exit %d: %s", words, code, errOut.String())
		}
		rows := helpFlagRows(out.String())
		if c.subs == nil && len(rows) == 0 || c.groupFlags != nil && len(rows) == 0 {
			t.Errorf("help %q lists no flags", words)
		}
		marked := 0
		for name, text := range rows {
			for _, n := range needs[name] {
				if !strings.Contains(text, "(needs --"+n+")") {
					t.Errorf("help %q: --%s lacks \"(needs --%s)\": %q", words, name, n, text)
				}
				marked++
			}
			if len(needs[name]) == 0 && strings.Contains(text, "(needs ") {
				t.Errorf("help %q: --%s is marked, but no rule says it needs a flag: %q", words, name, text)
			}
		}
		if c.name == "serve" && marked < len(agentFlags)+3 {
			t.Errorf("help %q: %d flags marked, want the %d agent flags and the 3 of run_command at least", words, marked, len(agentFlags))
		}
		for _, s := range c.subs {
			walk(s, append(append([]string{}, words...), s.name), rules)
		}
	}
	walk(commandLine, nil, nil)
}

// helpFlagRows reads the flag lists of a help text: each flag's name
// (without dashes) and its text, its wrapped lines joined.
func helpFlagRows(help string) map[string]string {
	rows := map[string]string{}
	in, name := false, ""
	for _, line := range strings.Split(help, "\n") {
		switch {
		case strings.HasPrefix(line, "Flags"):
			in, name = true, ""
			continue
		case line == "" || !strings.HasPrefix(line, "  "):
			in, name = false, ""
		}
		if !in {
			continue
		}
		if strings.HasPrefix(line, "  -") {
			f := strings.Fields(line)
			name = strings.TrimLeft(strings.TrimSuffix(f[0], ","), "-")
			rows[name] = strings.Join(f[1:], " ")
			continue
		}
		if name != "" {
			rows[name] = strings.TrimSpace(rows[name] + " " + strings.Join(strings.Fields(line), " "))
		}
	}
	return rows
}

func TestDidYouMean(t *testing.T) {
	names := []string{"root", "port", "token-file", "persistent-token", "ask-client", "model", "model-url"}
	for _, c := range []struct{ unknown, want string }{
		{"rooot", "root"}, {"roto", "root"}, {"prot", "port"}, {"tokenfile", "token-file"},
		{"ask-clinet", "ask-client"}, {"modle", "model"}, {"model-rul", "model-url"},
		{"frobnicate", ""}, {"x", ""}, {"persistent", ""},
	} {
		if got := didYouMean(c.unknown, names); got != c.want {
			t.Errorf("didYouMean(%q) = %q, want %q", c.unknown, got, c.want)
		}
	}
}

func TestWrap(t *testing.T) {
	got := wrap("a bb ccc dddd eeeeeeeeeeee f", 8)
	want := []string{"a bb ccc", "dddd", "eeeeeeeeeeee", "f"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("wrap = %q, want %q", got, want)
	}
}

// TestWriteChangeEscapesTheDiff: conversations show prints a stored diff
// (file content the model wrote) escaped line by line, tabs kept and no
// line indented, so it stays a patch and drives no terminal (issue 32's
// escaping, applied to issue 31's diffs).
func TestWriteChangeEscapesTheDiff(t *testing.T) {
	var b strings.Builder
	writeChange(&b, ports.FileDiff{Path: "a\x1b]0;t\a.go", Added: 1, Removed: 1,
		Diff: "--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n-\told\n+\tnew\x1b]52;c;eA==\a\n"})
	want := "[changed a\\x1b]0;t\\a.go +1 -1]\n--- a/a.go\n+++ b/a.go\n@@ -1 +1 @@\n-\told\n+\tnew\\x1b]52;c;eA==\\a\n"
	if b.String() != want {
		t.Errorf("writeChange printed\n%q\nwant\n%q", b.String(), want)
	}
}

// TestUsageErrorsBoundValues: a usage error shows at most maxEcho bytes of
// a value it echoes, then "…", whatever the value's size: a 1 MB value
// given to every flag that checks its value, as an unknown flag's name, a
// command, an argument, or a value checked in the command's run, gives one
// short line (it gave a 1 MB line). A value given to a flag named for a
// secret (--persistent-token=<token>, a token where a bool goes) is never
// shown, nor an argument right after such a flag.
func TestUsageErrorsBoundValues(t *testing.T) {
	const maxLine = 512
	big := "v4lue" + strings.Repeat("x", 1<<20)
	shown := big[:maxEcho/2] // what the line holds of it at least (a flag's dashes, a path's words may come first)
	usage := func(t *testing.T, args []string, secret bool) {
		t.Helper()
		var out, errOut strings.Builder
		code := Main(t.Context(), args, strings.NewReader(""), &out, &errOut)
		first, _, _ := strings.Cut(errOut.String(), "\n")
		name := fmt.Sprintf("%.100q", args)
		switch {
		case code != 2 || out.Len() != 0:
			t.Errorf("%s: exit %d, stdout %d bytes; want 2 and nothing", name, code, out.Len())
		case len(errOut.String()) > 4*maxLine || len(first) > maxLine:
			t.Errorf("%s: stderr %d bytes, its first line %d; want a line of at most %d: %.300q", name, errOut.Len(), len(first), maxLine, first)
		case secret && strings.Contains(errOut.String(), big[:8]):
			t.Errorf("%s: a secret's value is shown: %.300q", name, first)
		case !secret && (!strings.Contains(first, shown) || !strings.Contains(first, "x…")):
			t.Errorf("%s: %.300q does not show the value's first bytes, then …", name, first)
		}
	}
	for _, l := range leaves(commandLine, "") {
		words := strings.Fields(l.path)
		leafFlags(l.path, l.cmd).VisitAll(func(f *flag.Flag) {
			probe := leafFlags(l.path, l.cmd).Lookup(f.Name)
			if probe.Value.Set(big) == nil {
				return // any text goes (a path, a name): the run checks it, or nothing does
			}
			usage(t, append(append([]string{}, words...), "--"+f.Name+"="+big), secretFlag(f.Name))
		})
	}
	remote := []string{"serve", "remote", "--public-url", "https://mcp.example.com/mcp", "--issuer", "https://id.example.com", "--scope", "mcp", "--allowed-subject", "a"}
	for _, args := range [][]string{
		{big},                                    // an unknown command
		{"--" + big},                             // an unknown flag of the top level
		{"serve", big},                           // an unknown carrier
		{"serve", "--" + big},                    // an unknown flag of a group
		{"serve", "stdio", "--" + big},           // an unknown flag of a command
		{"serve", "stdio", big},                  // an unexpected argument
		{"help", "serve", big},                   // help's unknown command
		{"serve", "stdio", "--submit-name", big}, // checked in the run
		{"conversations", "show", "--conversation", big},
		append(remote, "--trusted-proxy", big),
		append(remote, "--scope", "a "+big),
	} {
		usage(t, args, false)
	}
	for _, args := range [][]string{
		{"serve", "http", "--token-file", "/tmp/t", "--persistent-token=" + big},
		{"serve", "http", "--token-file", "/tmp/t", "--persistent-token", big},
		{"serve", "http", "--token-file", "/tmp/t", "--persistent-token", "--rotate-token", big},
	} {
		usage(t, args, true)
	}
}

// TestBoundEchoes: a long quoted value or word is cut on a character, not
// inside one; short ones, and the rest of the message, are left as written.
func TestBoundEchoes(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes
	for _, c := range []struct{ in, want string }{
		{`invalid value "abc" for --port: want a port`, `invalid value "abc" for --port: want a port`},
		{`unknown command "` + long + `"`, `unknown command "` + strings.Repeat("é", 32) + `…"`},
		{`unknown flag --` + long, `unknown flag --` + strings.Repeat("é", 31) + `…`},
		{`a "quote that does not end`, `a "quote that does not end`},
		{`--x "a\"b" ok`, `--x "a\"b" ok`},
	} {
		got := boundEchoes(c.in)
		if got != c.want || !utf8.ValidString(got) {
			t.Errorf("boundEchoes(%.80q) = %q, want %q", c.in, got, c.want)
		}
	}
}
