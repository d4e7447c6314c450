package domain

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Argument is one fact a session gives about a tool call it asks permission
// for. The engine, not the session or the model, turns it into text: Value
// is quoted with control and bidirectional characters escaped and cut to
// MaxExcerpt characters; when Contents is set (file contents, large blobs)
// only its size and SHA-256 are shown, never the bytes (docs/SPEC.md §6 "Forms").
// When Lines is set (a diff, a shell command), Value is shown as a block:
// each line on a line of its own, quoted and escaped like an excerpt (so no
// line of it can pass for the dialog's own text), at most MaxLines lines,
// then a count of the lines left out.
type Argument struct {
	Name     string
	Value    string
	Contents bool
	Lines    bool
}

// MaxExcerpt bounds each quoted excerpt in a prompt message, in characters.
const MaxExcerpt = 200

// MaxLines bounds the lines of a Lines argument shown in a prompt message.
const MaxLines = 60

// Fits reports whether s is shown whole as a Lines argument: at most
// MaxLines lines of at most MaxExcerpt characters each. A session that must
// show a value exactly (a command to approve) refuses one that does not fit.
func Fits(s string) bool {
	n := 0
	for line := range strings.SplitSeq(s, "\n") {
		n++
		if n > MaxLines || utf8.RuneCountInString(line) > MaxExcerpt {
			return false
		}
	}
	return true
}

// Form is an MCP form-mode elicitation (elicitation/create params without
// mode): the message shown to the user and the flat schema of the answer.
type Form struct {
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

// Answer keys and values of the forms (docs/SPEC.md §6).
const (
	DecisionKey  = "decision"
	AnswerKey    = "answer"
	AllowOnceVal = "allow_once"
	DenyVal      = "deny"
)

var permissionSchema = json.RawMessage(`{"type":"object","properties":{"decision":{"type":"string","enum":["allow_once","deny"]}},"required":["decision"]}`)

// Excerpt renders s for a prompt message: at most MaxExcerpt characters,
// quoted, with control, non-printable and bidirectional characters escaped,
// so text the model chose cannot break out of its quotes or reorder the
// dialog. A cut is marked with "…" after the closing quote.
func Excerpt(s string) string {
	cut := false
	if utf8.RuneCountInString(s) > MaxExcerpt {
		n := 0
		for i := range s {
			if n == MaxExcerpt {
				s, cut = s[:i], true
				break
			}
			n++
		}
	}
	// strconv.Quote escapes every rune unicode.IsPrint rejects, which covers
	// C0/C1 controls and the bidi format characters (category Cf).
	q := strconv.Quote(strings.ToValidUTF8(s, "\uFFFD"))
	if cut {
		q += "…"
	}
	return q
}

func describeArgument(a Argument) string {
	if a.Contents {
		sum := sha256.Sum256([]byte(a.Value))
		return fmt.Sprintf("%s: %d bytes, SHA-256 %s", Excerpt(a.Name), len(a.Value), hex.EncodeToString(sum[:]))
	}
	if a.Lines {
		var b strings.Builder
		b.WriteString(Excerpt(a.Name) + ":")
		lines := strings.Split(a.Value, "\n")
		for i, line := range lines {
			if i == MaxLines {
				fmt.Fprintf(&b, "\n  … %d more lines", len(lines)-MaxLines)
				break
			}
			b.WriteString("\n  " + Excerpt(line))
		}
		return b.String()
	}
	return Excerpt(a.Name) + ": " + Excerpt(a.Value)
}

func agentLine(agent string) string {
	if agent == "" {
		return ""
	}
	return "\nRequested by the background agent " + Excerpt(agent) + "."
}

// PermissionForm renders a permission prompt. tool must be a catalog name
// (the engine checks it); the answer is one required property "decision":
// allow_once or deny.
func PermissionForm(p PermissionPrompt) Form {
	var b strings.Builder
	fmt.Fprintf(&b, "Allow the tool %s to run once?", Excerpt(p.Tool))
	if p.Summary != "" {
		b.WriteString("\n" + Excerpt(p.Summary))
	}
	for _, a := range p.Arguments {
		b.WriteString("\n" + describeArgument(a))
	}
	b.WriteString(agentLine(p.Agent))
	return Form{Message: b.String(), RequestedSchema: permissionSchema}
}

// AskForm renders an ask prompt: one required property "answer", an enum of
// the options when there are any. ok is false for a masked ask, which is
// never sent to an MCP client (docs/SPEC.md §6: forms must not request secrets).
func AskForm(p AskPrompt) (f Form, ok bool) {
	if p.Masked {
		return Form{}, false
	}
	prop := map[string]any{"type": "string"}
	if len(p.Options) > 0 {
		prop["enum"] = p.Options
	}
	schema, err := json.Marshal(map[string]any{
		"type":       "object",
		"properties": map[string]any{AnswerKey: prop},
		"required":   []string{AnswerKey},
	})
	if err != nil {
		return Form{}, false
	}
	msg := Excerpt(p.Question)
	if len(p.Options) > 0 {
		opts := make([]string, len(p.Options))
		for i, o := range p.Options {
			opts[i] = Excerpt(o)
		}
		msg += "\nChoices: " + strings.Join(opts, ", ")
	}
	return Form{Message: msg + agentLine(p.Agent), RequestedSchema: schema}, true
}

// ElicitResult is a client's answer to a form: action accept, decline or
// cancel, and content for accept.
type ElicitResult struct {
	Action  string                     `json:"action"`
	Content map[string]json.RawMessage `json:"content,omitempty"`
}

// ParseElicitResult decodes an answer; ok is false when it is malformed.
// An object with a duplicated member is malformed: a decoder keeping the
// last value would read {"decision":"deny","decision":"allow_once"} as
// approval while one keeping the first (a client's log, an audit) reads a
// denial.
func ParseElicitResult(raw json.RawMessage) (ElicitResult, bool) {
	var r ElicitResult
	if json.Unmarshal(raw, &r) != nil || hasDuplicateMembers(raw) {
		return ElicitResult{}, false
	}
	switch r.Action {
	case "accept", "decline", "cancel":
		return r, true
	}
	return ElicitResult{}, false
}

func (r ElicitResult) stringContent(key string) (string, bool) {
	raw, ok := r.Content[key]
	if !ok || len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// PermissionDecision maps an answer to a decision: AllowOnce only for
// accept with decision allow_once; decline, cancel, deny and anything
// malformed deny. Nothing grants a remembered permission.
func PermissionDecision(r ElicitResult) Decision {
	if v, ok := r.stringContent(DecisionKey); ok && r.Action == "accept" && v == AllowOnceVal {
		return AllowOnce
	}
	return Deny
}

// AskAnswer maps an answer to an ask: accept with a string answer (one of
// the options, when there are options); anything else is cancelled.
func AskAnswer(p AskPrompt, r ElicitResult) Answer {
	v, ok := r.stringContent(AnswerKey)
	if !ok || r.Action != "accept" {
		return Answer{}
	}
	if len(p.Options) > 0 {
		for _, o := range p.Options {
			if o == v {
				return Answer{Text: v, Answered: true}
			}
		}
		return Answer{}
	}
	return Answer{Text: v, Answered: true}
}

// hasDuplicateMembers reports whether any object in the JSON text raw
// (valid JSON) names a member twice, at any depth.
func hasDuplicateMembers(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		object bool
		seen   map[string]bool
		key    bool // the next token of an object is a member name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false // io.EOF: walked the whole text
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if name, ok := tok.(string); ok {
				if top.seen[name] {
					return true
				}
				top.seen[name] = true
				top.key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, seen: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: in an object, a member name comes next.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
}
