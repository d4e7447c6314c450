package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/agentmcp/agentmcp/adapters/postgres"
	"github.com/agentmcp/agentmcp/adapters/sqlite"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// conversationsCommand is "agentmcp conversations list|show|clear": what
// the agent remembers, for a person who wants to see or forget it
// (docs/SPEC.md §9). Each reads the store in --state-dir and never creates
// one.
var conversationsCommand = &command{
	name:    "conversations",
	summary: "List, show or forget the agent's stored conversations",
	about: `The agent (serve --model) keeps its conversations, each named (the one a
submission names none of is "default") per workspace root and principal, in
--state-dir (default $XDG_STATE_HOME/agentmcp, else ~/.local/state/agentmcp)
unless it was started with --ephemeral.`,
	groupFlags: func(fs *flag.FlagSet) {
		addStateDirFlag(fs)
		fs.String("root", "", "only the conversations of the workspace `DIR`")
		fs.String("principal", "", "only the conversations of the principal `P` as list shows it (local, or remote: and the start of its hash)")
	},
	subs: []*command{
		conversationsLeaf("list", "List the stored conversations: root, principal, name, turns, bytes, last update",
			"agentmcp conversations list --limit 20", "", leafLimit, listConversations),
		conversationsLeaf("show", "Print the messages and changes of the conversations of one workspace root",
			"agentmcp conversations show --root ~/project --conversation default", ".", leafConversation, showConversations),
		conversationsLeaf("clear", "Forget the conversations of one workspace root",
			"agentmcp conversations clear --root ~/project --conversation fix-1", ".", leafConversation, clearConversations),
	},
}

// conversationName is --conversation: a name that follows
// [domain.CheckConversationName], checked as the command line is parsed
// (a usage error, flagcheck.go); "" is every conversation, as leaving the
// flag out.
type conversationName string

func (n *conversationName) String() string { return string(*n) }

func (n *conversationName) Set(s string) error {
	if err := domain.CheckConversationName("--conversation", s); s != "" && err != nil {
		return errors.New(domain.ConversationNameRule)
	}
	*n = conversationName(s)
	return nil
}

// selection is which stored conversations a "conversations" command reads.
type selection struct {
	root      string // a root's real path; "": every root
	principal string // a stored principal or its start; "": every one
	name      string // a conversation's name; "": every one
	limit     int    // at most this many, the newest; 0: every one
}

// Which of --conversation and --limit a "conversations" command takes.
const (
	leafLimit = iota
	leafConversation
)

// conversationsLeaf is one "agentmcp conversations" command; rootDefault
// is --root's default ("": every root); extra is which of --limit and
// --conversation it takes.
func conversationsLeaf(name, summary, example, rootDefault string, extra int,
	run func(ctx context.Context, w io.Writer, s ports.ConversationStore, sel selection) error) *command {
	return &command{
		name: name, summary: summary, synopsis: "[flags]", example: example,
		rules: append([]flagRule{{flags: []string{"workspace-id"}, excludes: "root",
			why: "--workspace-id names the workspace as the servers that used it did (--root finds it by its real path): use one or the other"}},
			storeRules...),
		setup: func(flags *flag.FlagSet) runFunc {
			dirFlag := addStateDirFlag(flags)
			storeFlag := addStoreLocationFlags(flags)
			rootUsage := "the workspace `DIR` whose conversations to " + name
			if rootDefault == "" {
				rootUsage = "only the conversations of the workspace `DIR` (default: every root)"
			}
			rootFlag := flags.String("root", rootDefault, rootUsage)
			idFlag := addWorkspaceIDFlag(flags, "the workspace `ID` its servers were given with --workspace-id, in place of --root")
			principalFlag := flags.String("principal", "", "only the conversations of the principal `P` as list shows it "+
				"(local, or remote: and the start of its hash)")
			var name conversationName
			limit := new(int)
			if extra == leafConversation {
				flags.Var(&name, "conversation", "only the conversation `NAME` (default: every one of the root)")
			} else {
				limit = intFlag(flags, "limit", 0, 0, "at most `N` conversations, the most recently updated (default: every one)")
			}
			return func(ctx context.Context, inv *invocation) int {
				sel := selection{principal: *principalFlag, name: string(name), limit: *limit}
				if idFlag.id != "" {
					sel.root = idFlag.id
				} else if *rootFlag != "" {
					r, err := realRoot(*rootFlag)
					if err != nil {
						fmt.Fprintf(inv.stderr, "%s: --root: %v\n", inv.path, err)
						return 1
					}
					sel.root = r
				}
				var s ports.ConversationStore
				if storeFlag.isPostgres() {
					pg, err := storeFlag.openPostgres(postgres.Options{})
					if err != nil {
						fmt.Fprintf(inv.stderr, "%s: %v\n", inv.path, err)
						return 1
					}
					defer pg.Close()
					s = pg
				} else {
					path, err := storeFlag.sqlitePath(*dirFlag)
					if err != nil {
						fmt.Fprintf(inv.stderr, "%s: %v\n", inv.path, err)
						return 1
					}
					if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
						fmt.Fprintf(inv.stdout, "no conversations: there is no store at %s\n", path)
						return 0
					}
					lite, err := sqlite.Open(path, sqlite.Options{})
					if err != nil {
						fmt.Fprintf(inv.stderr, "%s: %v\n", inv.path, err)
						return 1
					}
					defer lite.Close()
					s = lite
				}
				if err := run(ctx, inv.stdout, s, sel); err != nil {
					fmt.Fprintf(inv.stderr, "%s: %v\n", inv.path, err)
					return 1
				}
				return 0
			}
		},
	}
}

// selected returns the conversations sel selects, newest first. The store
// filters by root (and limits, when no principal's start has to be
// matched here).
func selected(ctx context.Context, s ports.ConversationStore, sel selection) ([]ports.ConversationInfo, error) {
	f := ports.ConversationFilter{Root: sel.root}
	if sel.principal == "" && sel.name == "" {
		f.Limit = sel.limit
	}
	all, err := s.List(ctx, f)
	if err != nil {
		return nil, err
	}
	var out []ports.ConversationInfo
	for _, c := range all {
		if sel.limit > 0 && len(out) == sel.limit {
			break
		}
		if strings.HasPrefix(c.Ref.Principal, sel.principal) && (sel.name == "" || c.Ref.Name == sel.name) {
			out = append(out, c)
		}
	}
	return out, nil
}

func listConversations(ctx context.Context, w io.Writer, s ports.ConversationStore, sel selection) error {
	list, err := selected(ctx, s, sel)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintf(w, "no conversations in %s\n", storeName(s))
		return nil
	}
	for _, c := range list {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d bytes\t%s%s\n", terminalSafe(c.Ref.Root, false), terminalSafe(principalLabel(c.Ref.Principal), false),
			terminalSafe(c.Ref.Name, false), count(c.Turns, "turn"), c.Bytes, c.Updated.UTC().Format(time.RFC3339), forkedFrom(c))
	}
	return nil
}

// forkedFrom is list's note of a fork's parent: "" for a conversation
// that is no fork.
func forkedFrom(c ports.ConversationInfo) string {
	if c.ForkedFrom == "" {
		return ""
	}
	return "\tforked from " + terminalSafe(c.ForkedFrom, false)
}

// principalLabel shortens a stored remote principal's hash for people.
func principalLabel(p string) string {
	if h, ok := strings.CutPrefix(p, "remote:"); ok && len(h) > 12 {
		return "remote:" + h[:12]
	}
	return p
}

func showConversations(ctx context.Context, w io.Writer, s ports.ConversationStore, sel selection) error {
	list, err := selected(ctx, s, sel)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintf(w, "no conversations of %s\n", terminalSafe(sel.root, false))
		return nil
	}
	for i, c := range list {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "# %s (%s) %s, %s, last %s%s\n", terminalSafe(c.Ref.Root, false), terminalSafe(principalLabel(c.Ref.Principal), false),
			terminalSafe(c.Ref.Name, false), count(c.Turns, "turn"), c.Updated.UTC().Format(time.RFC3339),
			strings.ReplaceAll(forkedFrom(c), "\t", ", "))
		turns, err := s.Load(ctx, c.Ref)
		if err != nil {
			return err
		}
		for _, turn := range turns {
			fmt.Fprintf(w, "\n## turn %d\n", turn.Number)
			for _, m := range turn.Messages {
				writeMessage(w, m)
			}
			for _, d := range turn.Changes {
				writeChange(w, d)
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

// writeChange prints one file a turn changed: its path and line counts,
// then its unified diff, each line through terminalSafe as a message is (a
// diff is file content: it must not drive the terminal either).
func writeChange(w io.Writer, d ports.FileDiff) {
	fmt.Fprintf(w, "[changed %s +%d -%d]\n", terminalSafe(d.Path, false), d.Added, d.Removed)
	if diff := strings.TrimSuffix(d.Diff, "\n"); diff != "" {
		// Line by line and not indented, so it stays a diff patch(1) reads;
		// no diff line starts with "[" as a message header does.
		for line := range strings.SplitSeq(diff, "\n") {
			fmt.Fprintf(w, "%s\n", terminalSafe(line, true))
		}
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

func clearConversations(ctx context.Context, w io.Writer, s ports.ConversationStore, sel selection) error {
	list, err := selected(ctx, s, sel)
	if err != nil {
		return err
	}
	for _, c := range list {
		if err := s.Delete(ctx, c.Ref); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "forgot %s of %s\n", count(len(list), "conversation"), sel.root)
	return nil
}

// count is n and noun, in the plural unless n is 1: "1 turn", "2 turns".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// storeName names s as the conversations command says where it looked:
// the SQLite file, or the PostgreSQL URL without a password.
func storeName(s ports.ConversationStore) string {
	switch s := s.(type) {
	case *sqlite.Store:
		return s.Path()
	case *postgres.Store:
		return s.Name()
	}
	return "the store"
}
