package workspace_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
	"github.com/agentmcp/agentmcp/ports/porttest"
)

// changeKeeper is a Caller that keeps file changes (as the agent's does),
// allows every write and answers every ask with answer.
type changeKeeper struct {
	*porttest.Recorder
	mu      sync.Mutex
	changes []ports.FileChange
}

func newChangeKeeper(answer string) *changeKeeper {
	return &changeKeeper{Recorder: &porttest.Recorder{Allow: true, Answer: func(domain.AskPrompt) domain.Answer {
		return domain.Answer{Text: answer, Answered: answer != ""}
	}}}
}

func (c *changeKeeper) FileChanged(fc ports.FileChange) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes = append(c.changes, fc)
}

func (c *changeKeeper) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	for _, fc := range c.changes {
		fmt.Fprintf(&b, "%s created=%v unread=%v %q -> %q;", fc.Path, fc.Created, fc.BeforeUnread, fc.Before, fc.After)
	}
	return b.String()
}

// TestReportsChanges: a caller that keeps changes learns each write that
// landed (write_file creating or replacing, edit_file) with the content
// before and after, as the file was at write time; nothing for a write
// that was denied, kept or failed; a replaced file over 1 MiB is reported
// unread. A caller that keeps none is never told.
func TestReportsChanges(t *testing.T) {
	big := strings.Repeat("x", workspace.MaxWriteBytes+1)
	s, root := newSession(t, map[string]string{"a.txt": "alpha\nbeta\n", "dir/b.txt": "one\n", "big.bin": big})

	c := newChangeKeeper(workspace.OverwriteAnswer)
	for _, call := range []struct{ tool, args string }{
		{"write_file", `{"path":"new.txt","content":"fresh\n"}`},
		{"write_file", `{"path":"a.txt","content":"alpha\ngamma\n"}`},
		{"edit_file", `{"path":"dir/b.txt","old_text":"one","new_text":"two"}`},
		{"write_file", `{"path":"big.bin","content":"small now"}`},
	} {
		if env := invoke(t, s, call.tool, call.args, c); !env.Success {
			t.Fatalf("%s %s: %s", call.tool, call.args, env.Error)
		}
	}
	want := `new.txt created=true unread=false "" -> "fresh\n";` +
		`a.txt created=false unread=false "alpha\nbeta\n" -> "alpha\ngamma\n";` +
		`dir/b.txt created=false unread=false "one\n" -> "two\n";` +
		`big.bin created=false unread=true "" -> "small now";`
	if got := c.String(); got != want {
		t.Errorf("changes reported:\n%s\nwant\n%s", got, want)
	}

	for _, step := range []struct {
		name   string
		caller *changeKeeper
		args   string
	}{
		{"denied", &changeKeeper{Recorder: &porttest.Recorder{}}, `{"path":"a.txt","content":"denied"}`},
		{"kept", newChangeKeeper(workspace.KeepAnswer), `{"path":"a.txt","content":"kept"}`},
		{"no answer", newChangeKeeper(""), `{"path":"a.txt","content":"unanswered"}`},
	} {
		invoke(t, s, "write_file", step.args, step.caller)
		if got := step.caller.String(); got != "" {
			t.Errorf("%s: a write that did not land reported %s", step.name, got)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(got) != "alpha\ngamma\n" {
		t.Errorf("a.txt = %q", got)
	}
	edit := newChangeKeeper("")
	invoke(t, s, "edit_file", `{"path":"a.txt","old_text":"missing","new_text":"x"}`, edit)
	if got := edit.String(); got != "" {
		t.Errorf("a failed edit reported %s", got)
	}
}
