package domain

import (
	"fmt"
	"strconv"
)

// DefaultConversation is the name of a principal's default conversation:
// the one a submission that names no conversation continues (docs/SPEC.md
// §9). Naming it reaches the same conversation.
const DefaultConversation = "default"

// MaxConversationName is the longest conversation name, in characters.
const MaxConversationName = 64

// ConversationNameRule is the rule every conversation name follows, as a
// refusal states it (docs/SPEC.md §9).
const ConversationNameRule = "a conversation name is 1 to 64 characters of A-Z, a-z, 0-9, '.', '_' and '-'"

// CheckConversationName returns nil when name is a valid conversation
// name: 1 to [MaxConversationName] characters of [A-Za-z0-9._-], the same
// alphabet as a tool name, so a name needs no quoting in a log, a URI or a
// file name. Otherwise its error is client-visible, one line: it names the
// argument arg ("conversation", "fork_from"), shows at most the first 16
// bytes of name (quoted, so control characters and invalid UTF-8 stay
// escaped; a 1 MB name costs the message nothing) and states
// [ConversationNameRule]. Its work is bounded: it reads at most 65 bytes.
func CheckConversationName(arg, name string) error {
	ok := name != "" && len(name) <= MaxConversationName
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
	}
	if ok {
		return nil
	}
	shown := strconv.Quote(name)
	if len(name) > 16 {
		shown = strconv.Quote(name[:16]) + fmt.Sprintf("… (%d bytes)", len(name))
	}
	return &ConversationNameError{Arg: arg, msg: fmt.Sprintf("%s %s is not a valid name: %s", arg, shown, ConversationNameRule)}
}

// ConversationNameError is [CheckConversationName]'s error.
type ConversationNameError struct {
	Arg string // the argument that named it: "conversation", "fork_from"
	msg string
}

func (e *ConversationNameError) Error() string { return e.msg }
