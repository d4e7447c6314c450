package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentmcp/agentmcp/internal/jsonrpc"
)

// Argument is one fact a session gives about a tool call it asks permission
// for. The engine, not the session or the model, turns it into text: Value
// is quoted with control and bidirectional characters escaped and cut to
// MaxExcerpt characters; when Contents is set (file contents, large blobs)
// only its size and SHA-256 are shown, never the bytes; when Path is set
// (a file the call writes or reads) the value is rendered by [PathExcerpt],
// which always shows its final element whole, so the person sees which file
// they approve (docs/SPEC.md §6 "Forms").
// When Lines is set (a diff, a shell command), Value is shown as a block:
// each line on a line of its own, quoted and escaped like an excerpt (so no
// line of it can pass for the dialog's own text), at most MaxLines lines,
// then a count of the lines left out.
type Argument struct {
	Name     string
	Value    string
	Contents bool
	Path     bool
	Lines    bool
}

// MaxExcerpt bounds each quoted excerpt in a prompt message, in characters.
// A longer text keeps its first and last MaxExcerpt/2 characters.
const MaxExcerpt = 200

// Bounds of [PathExcerpt], in characters: a path up to MaxExcerpt shows
// whole; a longer one keeps its first pathHead characters and its last
// pathTail, extended back to the start of its final element when that is
// longer, up to maxPathTail. No file system agentmcp runs on takes a name
// longer than 255 bytes (NAME_MAX), so maxPathTail never cuts the name of a
// file that can be written.
const (
	pathHead    = 40
	pathTail    = 160
	maxPathTail = 1024
)

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
// RequestedSchema20250618, when set, replaces RequestedSchema for a client
// that negotiated 2025-06-18, whose schema lacks what RequestedSchema uses
// (titled enums).
type Form struct {
	Message                 string          `json:"message"`
	RequestedSchema         json.RawMessage `json:"requestedSchema"`
	RequestedSchema20250618 json.RawMessage `json:"-"`
}

// Answer keys and values of the forms (docs/SPEC.md §6).
const (
	DecisionKey  = "decision"
	AnswerKey    = "answer"
	AllowOnceVal = "allow_once"
	DenyVal      = "deny"
)

// The permission form's schema (docs/SPEC.md §6): MCP 2025-11-25's titled
// single-select enum (oneOf of const and title), so clients show "Allow
// once" and "Deny" rather than the values. 2025-06-18 has no titled enum;
// its EnumSchema names the values with enumNames instead.
var (
	permissionSchema = json.RawMessage(`{"type":"object","properties":{"decision":{"type":"string","title":"Decision",` +
		`"oneOf":[{"const":"allow_once","title":"Allow once"},{"const":"deny","title":"Deny"}]}},"required":["decision"]}`)
	permissionSchema20250618 = json.RawMessage(`{"type":"object","properties":{"decision":{"type":"string","title":"Decision",` +
		`"enum":["allow_once","deny"],"enumNames":["Allow once","Deny"]}},"required":["decision"]}`)
)

// Excerpt renders s for a prompt message: quoted, with control,
// non-printable and bidirectional characters escaped, so text the model
// chose cannot break out of its quotes or reorder the dialog. A text longer
// than MaxExcerpt characters keeps its start and its end, cut in the
// middle: "start"…"end" (the end of a text — a file name in a sentence —
// is as telling as its start).
func Excerpt(s string) string {
	n := utf8.RuneCountInString(s)
	if n <= MaxExcerpt {
		return quote(s)
	}
	return quote(firstRunes(s, MaxExcerpt/2)) + "…" + quote(lastRunes(s, MaxExcerpt/2))
}

// PathExcerpt renders a slash-separated path for a prompt message like
// Excerpt, except where it cuts: a path longer than MaxExcerpt characters
// keeps its first 40 characters and its last 160 — or, when its final
// element is longer, that element whole (up to 1024 characters) — so the
// name of the file the person approves is never hidden (docs/SPEC.md §6).
func PathExcerpt(p string) string {
	n := utf8.RuneCountInString(p)
	if n <= MaxExcerpt {
		return quote(p)
	}
	tail := pathTail
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		tail = max(tail, utf8.RuneCountInString(p[i:]))
	} else {
		tail = n
	}
	tail = min(tail, maxPathTail)
	if tail+pathHead >= n {
		return quote(p)
	}
	return quote(firstRunes(p, pathHead)) + "…" + quote(lastRunes(p, tail))
}

// quote escapes with strconv.Quote, which escapes every rune
// unicode.IsPrint rejects: C0/C1 controls and the bidi format characters
// (category Cf).
func quote(s string) string { return strconv.Quote(strings.ToValidUTF8(s, "\uFFFD")) }

// firstRunes returns the first n runes of s.
func firstRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// lastRunes returns the last n runes of s.
func lastRunes(s string, n int) string {
	i := len(s)
	for ; n > 0 && i > 0; n-- {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return s[i:]
}

func describeArgument(a Argument) string {
	switch {
	case a.Contents:
		sum := sha256.Sum256([]byte(a.Value))
		return fmt.Sprintf("%s: %d bytes, SHA-256 %s", Excerpt(a.Name), len(a.Value), hex.EncodeToString(sum[:]))
	case a.Path:
		return Excerpt(a.Name) + ": " + PathExcerpt(a.Value)
	case a.Lines:
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
	default:
		return Excerpt(a.Name) + ": " + Excerpt(a.Value)
	}
}

func agentLine(agent string) string {
	if agent == "" {
		return ""
	}
	return "\nRequested by the background agent " + Excerpt(agent) + "."
}

// PermissionForm renders a permission prompt. tool must be a catalog name
// (the engine checks it); the answer is one required property "decision":
// allow_once ("Allow once") or deny ("Deny"). A prompt raised within a
// submission (Within set) says that the agent asks, within the submission
// the person started, so an agent's write never reads like a client's own
// call.
func PermissionForm(p PermissionPrompt) Form {
	var b strings.Builder
	agent := p.Agent
	switch {
	case p.Within != "" && agent != "":
		fmt.Fprintf(&b, "The background agent %s, in the %s request you started, asks to run the tool %s once. Allow it?",
			Excerpt(agent), Excerpt(p.Within), Excerpt(p.Tool))
		agent = "" // named already
	case p.Within != "":
		fmt.Fprintf(&b, "The agent, in the %s request you started, asks to run the tool %s once. Allow it?", Excerpt(p.Within), Excerpt(p.Tool))
	default:
		fmt.Fprintf(&b, "Allow the tool %s to run once?", Excerpt(p.Tool))
	}
	if p.Summary != "" {
		b.WriteString("\n" + Excerpt(p.Summary))
	}
	for _, a := range p.Arguments {
		b.WriteString("\n" + describeArgument(a))
	}
	b.WriteString(agentLine(agent))
	return Form{Message: b.String(), RequestedSchema: permissionSchema, RequestedSchema20250618: permissionSchema20250618}
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
// denial. Member names are matched exactly, as MCP spells them: "Action"
// is not "action" (encoding/json would fold the case and let
// {"action":"decline","ACTION":"accept"} approve), so only one reading of
// an answer exists.
func ParseElicitResult(raw json.RawMessage) (ElicitResult, bool) {
	ms, _, ok := jsonrpc.CheckedMembers(raw, nil)
	if !ok || jsonrpc.HasDuplicates(raw) {
		return ElicitResult{}, false
	}
	var r ElicitResult
	for _, m := range ms {
		switch {
		case m.Name == "action" && jsonrpc.IsString(m.Value):
			r.Action = jsonrpc.Unquote(m.Value)
		case m.Name == "content" && jsonrpc.IsObject(m.Value):
			content, _ := jsonrpc.Members(m.Value, nil)
			r.Content = make(map[string]json.RawMessage, len(content))
			for _, c := range content {
				r.Content[c.Name] = append(json.RawMessage(nil), c.Value...)
			}
		case m.Name == "content" && string(m.Value) == "null":
		case m.Name == "action", m.Name == "content":
			return ElicitResult{}, false // the wrong type
		}
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
