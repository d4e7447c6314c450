package app

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Help and usage text, derived from the command table (cli.go).
//
// A command's help (stdout, exit 0) is its usage line, its summary, its
// about text, its flags and its example; a group's help lists its commands
// and every command's example. A command's usage (stderr, after a usage
// error) is its usage line, or a group's with its commands' names, and a
// pointer to the help.

const (
	lineWidth = 80 // help text is wrapped to this many columns
	maxLeft   = 28 // the widest left column of a two-column list
)

// writeHelp writes c's help; path is c's path ("agentmcp serve http"),
// inherited the rules of the groups above it: with c's own, they mark the
// flags that need another (flagRows).
func writeHelp(w io.Writer, path string, c *command, inherited []flagRule) {
	b := &strings.Builder{}
	rules := append(append([]flagRule{}, inherited...), c.rules...)
	if c.subs == nil {
		writeUsageLine(b, path, c)
		fmt.Fprintf(b, "\n%s\n", strings.Join(wrap(c.summary+".", lineWidth), "\n"))
		if c.about != "" {
			fmt.Fprintf(b, "\n%s\n", c.about)
		}
		b.WriteString("\nFlags:\n")
		writeFlags(b, leafFlags(path, c), rules)
		if c.example != "" {
			fmt.Fprintf(b, "\nExample:\n%s\n", indent(c.example))
		}
		io.WriteString(w, b.String())
		return
	}
	fmt.Fprintf(b, "%s\n\n", strings.Join(wrap(c.summary+".", lineWidth), "\n"))
	writeGroupCommands(b, path, c)
	if c.about != "" {
		fmt.Fprintf(b, "\n%s\n", c.about)
	}
	writeGroupFlags(b, path, c, rules)
	b.WriteString("\nExamples:\n")
	for _, l := range leaves(c, "") {
		if l.cmd.example != "" {
			b.WriteString(indent(l.cmd.example) + "\n")
		}
	}
	fmt.Fprintf(b, "\nRun '%s help %s<%s>' or '%s <%s> --help' for a %s's flags.\n",
		commandLineName(path), strings.TrimPrefix(path+" ", commandLineName(path)+" "), c.kind(), path, c.kind(), c.kind())
	if !strings.Contains(path, " ") {
		b.WriteString("Exit status: 0 on a clean end, 1 on a failure, 2 on a usage error.\n")
	}
	io.WriteString(w, b.String())
}

// writeUsage writes c's usage, the lines that follow a usage error: the
// usage line (a group's with its commands' names) and where the help is.
// With the error line it fits on one screen: at most four lines, never the
// flag list (that is the help's).
func writeUsage(w io.Writer, path string, c *command) {
	b := &strings.Builder{}
	if c.subs == nil {
		line := path
		if c.synopsis != "" {
			line += " " + c.synopsis
		}
		fmt.Fprintf(b, "Usage: %s\n", line)
		what := "its flags"
		if !hasFlags(leafFlags(path, c)) {
			what = "its help" // no flag but -h
		}
		fmt.Fprintf(b, "Run '%s --help' for %s.\n", path, what)
	} else {
		var names []string
		for _, s := range c.subs {
			names = append(names, s.name)
		}
		kinds := c.kind() + "s"
		fmt.Fprintf(b, "Usage: %s <%s> [flags]; %s: %s\n", path, c.kind(), kinds, strings.Join(names, ", "))
		fmt.Fprintf(b, "Run '%s --help' for the %s.\n", path, kinds)
	}
	io.WriteString(w, b.String())
}

// hasFlags reports whether fs has a flag registered.
func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// commandLineName is the first word of path: the program's name.
func commandLineName(path string) string {
	name, _, _ := strings.Cut(path, " ")
	return name
}

func writeUsageLine(b *strings.Builder, path string, c *command) {
	line := path
	if c.synopsis != "" {
		line += " " + c.synopsis
	}
	fmt.Fprintf(b, "Usage:\n%s\n", indent(line))
}

// writeGroupCommands writes a group's usage line and its commands with
// their summaries.
func writeGroupCommands(b *strings.Builder, path string, c *command) {
	fmt.Fprintf(b, "Usage:\n  %s <%s> [flags]\n", path, c.kind())
	fmt.Fprintf(b, "\n%ss:\n", strings.ToUpper(c.kind()[:1])+c.kind()[1:])
	var rows []row
	for _, l := range leaves(c, "") {
		rows = append(rows, row{l.path, l.cmd.summary})
	}
	writeRows(b, rows)
}

// writeGroupFlags writes the flags every command of a group takes
// (groupFlags) and, at the top level, the top-level flags.
func writeGroupFlags(b *strings.Builder, path string, c *command, rules []flagRule) {
	if c.groupFlags != nil {
		fs := flag.NewFlagSet(path, flag.ContinueOnError)
		c.groupFlags(fs)
		fmt.Fprintf(b, "\nFlags every %s takes:\n", c.kind())
		writeRows(b, flagRows(fs, rules))
	}
	if !strings.Contains(path, " ") {
		b.WriteString("\nFlags:\n")
		writeRows(b, []row{{"-h, --help", "print this help"}, {"--version", "print the version (as agentmcp version)"}})
	}
}

// leaf is a leaf command and its path relative to the group listing it.
type leaf struct {
	path string
	cmd  *command
}

// leaves lists the leaf commands under c, depth first, in table order.
func leaves(c *command, prefix string) []leaf {
	var out []leaf
	for _, s := range c.subs {
		if s.subs != nil {
			out = append(out, leaves(s, prefix+s.name+" ")...)
		} else {
			out = append(out, leaf{prefix + s.name, s})
		}
	}
	return out
}

// leafFlags returns a FlagSet with c's flags registered (setup's run
// function is dropped).
func leafFlags(path string, c *command) *flag.FlagSet {
	fs := flag.NewFlagSet(path, flag.ContinueOnError)
	c.setup(fs)
	return fs
}

// writeFlags writes fs's flags, then -h, --help.
func writeFlags(b *strings.Builder, fs *flag.FlagSet, rules []flagRule) {
	writeRows(b, append(flagRows(fs, rules), row{"-h, --help", "print this help"}))
}

// row is one entry of a two-column list.
type row struct{ left, text string }

// flagRows lists fs's flags in lexical order, as the guides write them:
// "--name ARG", where ARG is the back-quoted word of the flag's usage (see
// flag.UnquoteUsage; none for a bool flag), and the usage text followed by
// "(needs --OTHER)" for each of rules that says it needs another flag (so
// a usage text never says it itself), then the default when it is not the
// zero value (strings quoted).
func flagRows(fs *flag.FlagSet, rules []flagRule) []row {
	var rows []row
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		left := "--" + f.Name
		if arg != "" {
			left += " " + arg
		}
		for _, r := range rules {
			if r.needs != "" && slices.Contains(r.flags, f.Name) {
				usage += " (needs --" + r.needs + ")"
			}
		}
		if d := f.DefValue; d != "" && d != "0" && d != "false" {
			if g, ok := f.Value.(flag.Getter); ok {
				if _, isString := g.Get().(string); isString {
					d = strconv.Quote(d)
				}
			}
			usage += " (default " + d + ")"
		}
		rows = append(rows, row{left, usage})
	})
	return rows
}

// writeRows writes rows as two indented columns, the text wrapped to
// lineWidth; a left side wider than maxLeft puts its text on the next line.
func writeRows(b *strings.Builder, rows []row) {
	col := 0
	for _, r := range rows {
		if n := len(r.left); n <= maxLeft && n > col {
			col = n
		}
	}
	pad := 2 + col + 3
	for _, r := range rows {
		b.WriteString("  " + r.left)
		lines := wrap(r.text, lineWidth-pad)
		if len(r.left) > col {
			b.WriteString("\n" + strings.Repeat(" ", pad))
		} else {
			b.WriteString(strings.Repeat(" ", pad-2-len(r.left)))
		}
		b.WriteString(strings.Join(lines, "\n"+strings.Repeat(" ", pad)) + "\n")
	}
}

// wrap breaks text into lines of at most width columns, at spaces (a word
// longer than width gets a line of its own).
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	return append(lines, line)
}

// indent indents every line of s by two spaces.
func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
