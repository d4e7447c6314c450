package domain_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/domain"
)

func TestCheckConversationName(t *testing.T) {
	for _, c := range []struct {
		name, give string
		want       string // the error; "" when valid
	}{
		{"default", "default", ""},
		{"every class", "Fix-bug_2.v1", ""},
		{"one character", "a", ""},
		{"dots only", "..", ""},
		{"64 characters", strings.Repeat("x", 64), ""},
		{"empty", "", `conversation "" is not a valid name: ` + domain.ConversationNameRule},
		{"65 characters", strings.Repeat("x", 65), `conversation "xxxxxxxxxxxxxxxx"… (65 bytes) is not a valid name: ` + domain.ConversationNameRule},
		{"space", "my task", `conversation "my task" is not a valid name: ` + domain.ConversationNameRule},
		{"slash", "a/b", `conversation "a/b" is not a valid name: ` + domain.ConversationNameRule},
		{"colon", "remote:x", `conversation "remote:x" is not a valid name: ` + domain.ConversationNameRule},
		{"newline", "a\nb", `conversation "a\nb" is not a valid name: ` + domain.ConversationNameRule},
		{"NUL", "a\x00", `conversation "a\x00" is not a valid name: ` + domain.ConversationNameRule},
		{"escape", "\x1b[31mred", `conversation "\x1b[31mred" is not a valid name: ` + domain.ConversationNameRule},
		{"non-ASCII letter", "tâche", `conversation "tâche" is not a valid name: ` + domain.ConversationNameRule},
		{"invalid UTF-8", "a\xffb", `conversation "a\xffb" is not a valid name: ` + domain.ConversationNameRule},
		{"1 MB", strings.Repeat("a", 1<<20), `conversation "aaaaaaaaaaaaaaaa"… (1048576 bytes) is not a valid name: ` + domain.ConversationNameRule},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := domain.CheckConversationName("conversation", c.give)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("CheckConversationName(%q) = %v, want valid", c.give, err)
			case c.want != "" && (err == nil || err.Error() != c.want):
				t.Errorf("CheckConversationName(%.40q) = %v\nwant %s", c.give, err, c.want)
			}
			var ne *domain.ConversationNameError
			if c.want != "" && (!errors.As(err, &ne) || ne.Arg != "conversation") {
				t.Errorf("error %v is not a ConversationNameError for conversation", err)
			}
		})
	}
	if err := domain.CheckConversationName("fork_from", "a b"); err == nil || !strings.HasPrefix(err.Error(), `fork_from "a b" `) {
		t.Errorf("fork_from's error = %v, want it to name fork_from", err)
	}
}
