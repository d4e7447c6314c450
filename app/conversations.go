package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/agentmcp/agentmcp/adapters/sqlite"
	"github.com/agentmcp/agentmcp/ports"
)

// conversationsCommand is "agentmcp conversations list|show|clear": what
// the agent remembers, for a person who wants to see or forget it
// (docs/SPEC.md §9). Each reads the store in --state-dir and never creates
// one.
var conversationsCommand = &command{
	name:    "conversations",
	summary: "List, show or forget the agent's stored conversations",
	about: `The agent (serve --model) keeps each conversation, one per workspace root and
principal, in --state-dir (default $XDG_STATE_HOME/agentmcp, else
~/.local/state/agentmcp) unless it was started with --ephemeral.`,
	groupFlags: func(fs *flag.FlagSet) {
		addStateDirFlag(fs)
		fs.String("root", "", "only the conversations of the workspace `DIR`")
	},
	subs: []*command{
		conversationsLeaf("list", "List the stored conversations: root, principal, turns, bytes, last update",
			"agentmcp conversations list", "", listConversations),
		conversationsLeaf("show", "Print the messages of the conversations of one workspace root",
			"agentmcp conversations show --root ~/project", ".", showConversations),
		conversationsLeaf("clear", "Forget the conversations of one workspace root",
			"agentmcp conversations clear --root ~/project", ".", clearConversations),
	},
}

// conversationsLeaf is one "agentmcp conversations" command; rootDefault
// is --root's default ("": every root).
func conversationsLeaf(name, summary, example, rootDefault string,
	run func(ctx context.Context, w io.Writer, s *sqlite.Store, root string) error) *command {
	return &command{
		name: name, summary: summary, synopsis: "[flags]", example: example,
		setup: func(flags *flag.FlagSet) runFunc {
			dirFlag := addStateDirFlag(flags)
			rootUsage := "the workspace `DIR` whose conversations to " + name
			if rootDefault == "" {
				rootUsage = "only the conversations of the workspace `DIR` (default: every root)"
			}
			rootFlag := flags.String("root", rootDefault, rootUsage)
			return func(ctx context.Context, inv *invocation) int {
				root := ""
				if *rootFlag != "" {
					r, err := realRoot(*rootFlag)
					if err != nil {
						fmt.Fprintf(inv.stderr, "%s: --root: %v\n", inv.path, err)
						return 1
					}
					root = r
				}
				dir, err := stateDir(*dirFlag)
				if err != nil {
					fmt.Fprintf(inv.stderr, "%s: %v\n", inv.path, err)
					return 1
				}
				path := filepath.Join(dir, sqlite.FileName)
				if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
					fmt.Fprintf(inv.stdout, "no conversations: there is no store at %s\n", path)
					return 0
				}
				s, err := sqlite.Open(path, sqlite.Options{})
				if err != nil {
					fmt.Fprintf(inv.stderr, "%s: %v\n", inv.path, err)
					return 1
				}
				defer s.Close()
				if err := run(ctx, inv.stdout, s, root); err != nil {
					fmt.Fprintf(inv.stderr, "%s: %v\n", inv.path, err)
					return 1
				}
				return 0
			}
		},
	}
}

// ofRoot returns the conversations of root ("": all), newest first.
func ofRoot(ctx context.Context, s *sqlite.Store, root string) ([]ports.ConversationInfo, error) {
	all, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []ports.ConversationInfo
	for _, c := range all {
		if root == "" || c.Ref.Root == root {
			out = append(out, c)
		}
	}
	return out, nil
}

func listConversations(ctx context.Context, w io.Writer, s *sqlite.Store, root string) error {
	list, err := ofRoot(ctx, s, root)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintf(w, "no conversations in %s\n", s.Path())
		return nil
	}
	for _, c := range list {
		fmt.Fprintf(w, "%s\t%s\t%d turns\t%d bytes\t%s\n", terminalSafe(c.Ref.Root, false), terminalSafe(principalLabel(c.Ref.Principal), false), c.Turns, c.Bytes,
			c.Updated.UTC().Format(time.RFC3339))
	}
	return nil
}

// principalLabel shortens a stored remote principal's hash for people.
func principalLabel(p string) string {
	if h, ok := strings.CutPrefix(p, "remote:"); ok && len(h) > 12 {
		return "remote:" + h[:12]
	}
	return p
}

func showConversations(ctx context.Context, w io.Writer, s *sqlite.Store, root string) error {
	list, err := ofRoot(ctx, s, root)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintf(w, "no conversations of %s\n", terminalSafe(root, false))
		return nil
	}
	for i, c := range list {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "# %s (%s), %d turns, last %s\n", terminalSafe(c.Ref.Root, false), terminalSafe(principalLabel(c.Ref.Principal), false), c.Turns,
			c.Updated.UTC().Format(time.RFC3339))
		turns, err := s.Load(ctx, c.Ref)
		if err != nil {
			return err
		}
		for n, turn := range turns {
			fmt.Fprintf(w, "\n## turn %d\n", n+1)
			for _, m := range turn.Messages {
				writeMessage(w, m)
			}
		}
	}
	return nil
}

// writeMessage prints one stored message for a person: its role, then its
// text, tool calls or tool result, each through terminalSafe (what the
// model or a tool wrote must not drive the terminal or pass for a header).
func writeMessage(w io.Writer, m ports.Message) {
	role := terminalSafe(string(m.Role), false)
	switch {
	case m.Role == ports.RoleTool:
		fmt.Fprintf(w, "[tool result %s] %s\n", terminalSafe(m.ToolCallID, false), terminalSafe(m.Content, true))
	case len(m.ToolCalls) > 0:
		if m.Content != "" {
			fmt.Fprintf(w, "[%s] %s\n", role, terminalSafe(m.Content, true))
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(w, "[%s calls %s %s] %s\n", role, terminalSafe(c.Name, false), terminalSafe(c.ID, false), terminalSafe(c.Arguments, true))
		}
	default:
		fmt.Fprintf(w, "[%s] %s\n", role, terminalSafe(m.Content, true))
	}
}

// terminalSafe is stored text made safe for a terminal, escaped as the
// approval dialog escapes (docs/SPEC.md §6, strconv.Quote's rules): every
// rune that is not printable — C0 and C1 controls (ESC: OSC 52 clipboard
// writes, window titles, cursor moves), DEL, bidirectional and other
// format characters — as its Go escape (\x1b, \u202e), invalid UTF-8 as
// U+FFFD. A newline is escaped too unless multiline, where each line after
// the first is indented two spaces, so no stored line starts as a message
// header ("[user] ...") does.
func terminalSafe(s string, multiline bool) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' && multiline:
			b.WriteString("\n  ")
		case r == '\t' && multiline, unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
	}
	return b.String()
}

func clearConversations(ctx context.Context, w io.Writer, s *sqlite.Store, root string) error {
	list, err := ofRoot(ctx, s, root)
	if err != nil {
		return err
	}
	for _, c := range list {
		if err := s.Delete(ctx, c.Ref); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "forgot %d conversations of %s\n", len(list), root)
	return nil
}
