package agent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentmcp/agentmcp/domain"
)

// DefaultSystemPrompt is the system prompt used when [Options.SystemPrompt]
// is empty: it names the workspace and each tool (with its title), says
// which tools only read, which act beyond the workspace's files (open-world:
// run_command), and that the others need the user's approval, which the
// user can refuse.
func DefaultSystemPrompt(workspace string, tools []domain.Tool) string {
	var b strings.Builder
	b.WriteString("You are an agent working in ")
	if workspace != "" {
		fmt.Fprintf(&b, "the workspace %q, a directory of files", workspace)
	} else {
		b.WriteString("a workspace, a directory of files")
	}
	b.WriteString(". A user hands you tasks through an MCP client; work on each task with your tools, then answer in plain text with what you did or found.\n\n")
	b.WriteString("Your tools:\n")
	for _, t := range tools {
		fmt.Fprintf(&b, "- %s", t.Name)
		if t.Title != "" {
			fmt.Fprintf(&b, " (%s)", t.Title)
		}
		switch {
		case readOnly(t):
			b.WriteString(": only reads.")
		case openWorld(t):
			b.WriteString(": can act beyond the workspace's files (a shell command, say); each call needs the user's approval, asked when it runs.")
		default:
			b.WriteString(": changes the workspace; each call needs the user's approval, asked when it runs.")
		}
		b.WriteString("\n")
	}
	b.WriteString("\nPaths are relative to the workspace root; \".\" is the root. ")
	b.WriteString("Read before you write, and write only what the task needs. ")
	b.WriteString("A tool result is a JSON envelope: \"success\", then \"result\" or \"error\". ")
	if slices.ContainsFunc(tools, func(t domain.Tool) bool { return t.Name == "edit_file" }) {
		b.WriteString("To change part of a file, use edit_file (exact text replacement) rather than rewriting the whole file. ")
	}
	b.WriteString("When a call is denied, do not retry it: say what you would have done and why. ")
	b.WriteString("When a call fails, read its error and fix the call, or explain the failure in your answer.")
	return b.String()
}

func openWorld(t domain.Tool) bool {
	return t.Annotations != nil && t.Annotations.OpenWorldHint != nil && *t.Annotations.OpenWorldHint
}

func readOnly(t domain.Tool) bool {
	return t.Annotations != nil && t.Annotations.ReadOnlyHint != nil && *t.Annotations.ReadOnlyHint
}
