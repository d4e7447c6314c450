package interop

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The write_file prompts of docs/SPEC.md §6 ("Asking the client"), answered by real
// MCP clients. With --ask-client the reference session's write_file asks
// permission (one required property "decision": allow_once | deny) and, when
// the file exists, then asks whether to overwrite or keep it (one required
// property "answer": overwrite | keep). The scenarios below are carrier- and
// client-neutral: each client driver (ts_ask_test.go, gosdk_ask_test.go)
// plays them and reports what it saw as []callReport, and checkAskScenario
// judges that report and the files on disk the same way for every client.

// formKind is which of write_file's two forms a prompt must be.
type formKind int

const (
	permissionForm formKind = iota // decision: allow_once | deny
	overwriteForm                  // answer: overwrite | keep
)

func (k formKind) String() string {
	if k == permissionForm {
		return "permission"
	}
	return "overwrite-or-keep"
}

// promptAnswer is a client's answer to one prompt: the ElicitResult it
// returns (the exported fields, as JSON), and the form the prompt must be.
type promptAnswer struct {
	form    formKind
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

func (a promptAnswer) String() string {
	s := a.form.String() + " " + a.Action
	for k, v := range a.Content { // one key
		s += fmt.Sprintf(" %s=%v", k, v)
	}
	return s
}

var (
	allowOnce         = promptAnswer{form: permissionForm, Action: "accept", Content: map[string]any{"decision": "allow_once"}}
	denyPermission    = promptAnswer{form: permissionForm, Action: "accept", Content: map[string]any{"decision": "deny"}}
	declinePermission = promptAnswer{form: permissionForm, Action: "decline"}
	cancelPermission  = promptAnswer{form: permissionForm, Action: "cancel"}
	keepFile          = promptAnswer{form: overwriteForm, Action: "accept", Content: map[string]any{"answer": "keep"}}
	overwriteFile     = promptAnswer{form: overwriteForm, Action: "accept", Content: map[string]any{"answer": "overwrite"}}
	cancelOverwrite   = promptAnswer{form: overwriteForm, Action: "cancel"}
)

// outcome is what one write_file call must come to.
type outcome int

const (
	written          outcome = iota // success; the file now holds the call's content
	kept                            // success with kept:true; the file is unchanged
	permissionDenied                // the session's permission error; the file is unchanged
	notOverwritten                  // the session's no-answer error for the overwrite ask; unchanged
)

func (o outcome) String() string {
	return [...]string{"written", "kept", "permission denied", "not overwritten"}[o]
}

// writeCall is one tools/call of write_file, the answers the client gives to
// the prompts it raises (exactly that many prompts must arrive, each the
// given form), and its outcome.
type writeCall struct {
	path    string
	content string // filled in by askScenarios
	answers []promptAnswer
	want    outcome
}

// askScenario is a series of write_file calls on one fresh workspace
// (newWorkspace: greeting.txt exists), made one after the other by one
// client on one connection.
type askScenario struct {
	name  string
	calls []writeCall
}

// askScenarios are played by every client on every carrier with
// --ask-client.
func askScenarios() []askScenario {
	const existing = "greeting.txt" // newWorkspace's file
	scs := []askScenario{
		{name: "allow_once", calls: []writeCall{
			{path: "new.txt", answers: []promptAnswer{allowOnce}, want: written},
		}},
		{name: "deny", calls: []writeCall{
			{path: "new.txt", answers: []promptAnswer{denyPermission}, want: permissionDenied},
		}},
		{name: "decline", calls: []writeCall{
			{path: "new.txt", answers: []promptAnswer{declinePermission}, want: permissionDenied},
		}},
		{name: "cancel", calls: []writeCall{
			{path: "new.txt", answers: []promptAnswer{cancelPermission}, want: permissionDenied},
		}},
		// An approval is for one call only: the next write is asked again,
		// and that answer alone decides it.
		{name: "second_write_needs_second_approval", calls: []writeCall{
			{path: "first.txt", answers: []promptAnswer{allowOnce}, want: written},
			{path: "second.txt", answers: []promptAnswer{declinePermission}, want: permissionDenied},
			{path: "second.txt", answers: []promptAnswer{allowOnce}, want: written},
		}},
		// An existing file: permission, then overwrite or keep.
		{name: "overwrite_or_keep", calls: []writeCall{
			{path: existing, answers: []promptAnswer{allowOnce, keepFile}, want: kept},
			{path: existing, answers: []promptAnswer{allowOnce, cancelOverwrite}, want: notOverwritten},
			{path: existing, answers: []promptAnswer{denyPermission}, want: permissionDenied},
			{path: existing, answers: []promptAnswer{allowOnce, overwriteFile}, want: written},
		}},
	}
	for i := range scs {
		scs[i].fillContents()
	}
	return scs
}

// closedScenario is played without --ask-client: every prompt settles
// closed (docs/SPEC.md §6 "Off by default"), so no prompt reaches the client, the
// call is denied and nothing is written, though the client could answer.
func closedScenario() askScenario {
	sc := askScenario{name: "without_ask_client", calls: []writeCall{
		{path: "new.txt", want: permissionDenied},
		{path: "greeting.txt", want: permissionDenied},
	}}
	sc.fillContents()
	return sc
}

// payloadMarker starts every content written: no prompt message may contain
// it (docs/SPEC.md §6: file contents are shown as size and SHA-256, never inline).
const payloadMarker = "INTEROP-PAYLOAD-"

// fillContents gives every call distinct content.
func (sc *askScenario) fillContents() {
	for i := range sc.calls {
		sc.calls[i].content = fmt.Sprintf("%s%s-%d\nsecond line: ünïcödé ✓ \"quoted\"\n", payloadMarker, sc.name, i+1)
	}
}

// paths returns every file the scenario touches, the workspace's own file
// included, sorted.
func (sc askScenario) paths(ws workspace) []string {
	ps := []string{ws.file}
	for _, c := range sc.calls {
		if !slices.Contains(ps, c.path) {
			ps = append(ps, c.path)
		}
	}
	slices.Sort(ps)
	return ps
}

func (c writeCall) arguments() map[string]any {
	return map[string]any{"path": c.path, "content": c.content}
}

// callReport is what a client driver saw of one write_file call.
type callReport struct {
	// Result is the CallToolResult as JSON; null when the call failed.
	Result json.RawMessage `json:"result"`
	// Error is the call's error (a JSON-RPC error, a client failure).
	Error *string `json:"error"`
	// Prompts are the elicitation requests the client's handler got
	// during the call, in order.
	Prompts []promptReport `json:"prompts"`
	// Disk is each of the scenario's paths read right after the call:
	// its content, or null when it does not exist.
	Disk map[string]*string `json:"disk"`
}

// promptReport is one elicitation as the client's handler got it.
type promptReport struct {
	RequestID json.RawMessage `json:"requestId,omitempty"` // the JSON-RPC id (legacy elicitation/create only)
	Params    json.RawMessage `json:"params"`              // the ElicitRequest params
}

// readDisk reads each path of the workspace: its content, or nil when it
// does not exist.
func readDisk(ws workspace, paths []string) (map[string]*string, error) {
	disk := map[string]*string{}
	for _, p := range paths {
		data, err := os.ReadFile(filepath.Join(ws.root, filepath.FromSlash(p)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			disk[p] = nil
		case err != nil:
			return nil, err
		default:
			s := string(data)
			disk[p] = &s
		}
	}
	return disk, nil
}

// checkAskScenario judges what a client saw of sc: per call, the prompts
// (how many, which form, what the message shows and hides), the tool
// result, and the files right after the call; at the end, that the
// workspace holds exactly the files it should (no temporary file left).
func checkAskScenario(t *testing.T, sc askScenario, ws workspace, reports []callReport) {
	t.Helper()
	if len(reports) != len(sc.calls) {
		t.Fatalf("the client reported %d calls, want %d", len(reports), len(sc.calls))
	}
	model := map[string]string{ws.file: ws.content} // what the workspace must hold
	for i, call := range sc.calls {
		r := reports[i]
		label := fmt.Sprintf("call %d: write_file %q answering %v", i+1, call.path, call.answers)
		_, existed := model[call.path]

		if len(r.Prompts) != len(call.answers) {
			var msgs []string
			for _, p := range r.Prompts {
				msgs = append(msgs, string(p.Params))
			}
			t.Errorf("%s: the client was prompted %d times, want %d; prompts: %s", label, len(r.Prompts), len(call.answers), strings.Join(msgs, "; "))
		}
		for j, p := range r.Prompts {
			if j < len(call.answers) {
				checkPrompt(t, fmt.Sprintf("%s: prompt %d", label, j+1), p.Params, call.answers[j].form, call)
			}
		}

		if r.Error != nil {
			t.Errorf("%s: the call failed: %s (want %v)", label, *r.Error, call.want)
		} else {
			checkWriteResult(t, label, r.Result, call, existed)
		}
		if call.want == written {
			model[call.path] = call.content
		}

		for _, p := range sc.paths(ws) {
			got, ok := r.Disk[p]
			want, exists := model[p]
			switch {
			case !ok:
				t.Errorf("%s: the client did not read %s after the call", label, p)
			case got == nil && exists:
				t.Errorf("%s: afterwards %s does not exist, want %q", label, p, want)
			case got != nil && !exists:
				t.Errorf("%s: afterwards %s exists holding %q, want no such file", label, p, *got)
			case got != nil && *got != want:
				t.Errorf("%s: afterwards %s holds %q, want %q", label, p, *got, want)
			}
		}
	}

	entries, err := os.ReadDir(ws.root)
	if err != nil {
		t.Fatal(err)
	}
	var names, want []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	for p := range model {
		want = append(want, p)
	}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("at the end the workspace holds %q, want exactly %q", names, want)
	}
}

// checkPrompt checks one elicitation's params: a form (mode absent or
// "form") whose requestedSchema is the wanted form's, and whose message
// names what is asked and never holds the content (docs/SPEC.md §6 "Forms").
func checkPrompt(t *testing.T, label string, raw json.RawMessage, form formKind, call writeCall) {
	t.Helper()
	var p struct {
		Mode            *string         `json:"mode"`
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
		URL             *string         `json:"url"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Errorf("%s: params are not an elicitation: %v: %s", label, err, raw)
		return
	}
	if p.Mode != nil && *p.Mode != "form" {
		t.Errorf("%s: mode %q, want form: %s", label, *p.Mode, raw)
	}
	if p.URL != nil {
		t.Errorf("%s: a form elicitation with a url: %s", label, raw)
	}
	if strings.Contains(p.Message, call.content) || strings.Contains(p.Message, payloadMarker) {
		t.Errorf("%s: the message holds the file content inline (docs/SPEC.md §6: size and SHA-256 only): %q", label, p.Message)
	}
	switch form {
	case permissionForm:
		// Titled choices (MCP 2025-11-25 TitledSingleSelectEnumSchema): the
		// person sees "Allow once" / "Deny", not the values.
		titled := map[string]any{"type": "string", "title": "Decision", "oneOf": []any{
			map[string]any{"const": "allow_once", "title": "Allow once"},
			map[string]any{"const": "deny", "title": "Deny"},
		}}
		if err := checkFormSchema(p.RequestedSchema, "decision", titled); err != nil {
			t.Errorf("%s: want the permission form: %v", label, err)
		}
		sum := sha256.Sum256([]byte(call.content))
		for _, want := range []string{"write_file", strconv.Quote(call.path), hex.EncodeToString(sum[:]), strconv.Itoa(len(call.content))} {
			if !strings.Contains(p.Message, want) {
				t.Errorf("%s: the permission message lacks %s (the tool, the quoted path, and the content as size and SHA-256): %q", label, want, p.Message)
			}
		}
	case overwriteForm:
		if err := checkFormSchema(p.RequestedSchema, "answer", map[string]any{"type": "string", "enum": []string{"overwrite", "keep"}}); err != nil {
			t.Errorf("%s: want the overwrite-or-keep form: %v", label, err)
		}
		if !strings.Contains(p.Message, call.path) {
			t.Errorf("%s: the overwrite-or-keep message does not name %s: %q", label, call.path, p.Message)
		}
	}
}

// checkFormSchema checks a requestedSchema: an object with one property,
// key, required, whose schema is prop.
func checkFormSchema(raw json.RawMessage, key string, prop any) error {
	var s struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("requestedSchema %s: %v", raw, err)
	}
	wantProp, err := json.Marshal(prop)
	if err != nil {
		return err
	}
	eq, err := jsonEqual(s.Properties[key], wantProp)
	if s.Type != "object" || len(s.Properties) != 1 || err != nil || !eq || !slices.Equal(s.Required, []string{key}) {
		return fmt.Errorf("requestedSchema %s, want type object with the one required property %s: %s", raw, key, wantProp)
	}
	return nil
}

// writeFileResult is write_file's result in a successful envelope.
type writeFileResult struct {
	Path    string `json:"path"`
	Bytes   int    `json:"bytes"`
	Created bool   `json:"created"`
	Kept    bool   `json:"kept"`
	SHA256  string `json:"sha256"`
}

// checkWriteResult checks the CallToolResult of call against its outcome.
func checkWriteResult(t *testing.T, label string, raw json.RawMessage, call writeCall, existed bool) {
	t.Helper()
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Errorf("%s: result %s: %v", label, raw, err)
		return
	}
	if len(res.Content) != 1 || res.Content[0].Type != "text" {
		t.Errorf("%s: result %.500s, want one text block", label, raw)
		return
	}
	text := res.Content[0].Text
	var env envelope
	if err := json.Unmarshal([]byte(text), &env); err != nil || env.Success == nil {
		t.Errorf("%s: text is not an execution envelope: %.500s", label, text)
		return
	}
	if env.ToolName != "write_file" {
		t.Errorf("%s: envelope toolName %q, want write_file", label, env.ToolName)
	}
	wantOK := call.want == written || call.want == kept
	if res.IsError == wantOK || *env.Success != wantOK {
		t.Errorf("%s: isError %v, success %v; want %v: %.500s", label, res.IsError, *env.Success, call.want, text)
		return
	}
	var wr writeFileResult
	if wantOK {
		if err := json.Unmarshal(env.Result, &wr); err != nil || wr.Path != call.path {
			t.Errorf("%s: envelope result %s, want write_file's result for %s", label, env.Result, call.path)
			return
		}
	}
	switch call.want {
	case written:
		sum := sha256.Sum256([]byte(call.content))
		if wr.Kept || wr.Created == existed || wr.Bytes != len(call.content) || wr.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: result %s, want created=%v, %d bytes, sha256 %x", label, env.Result, !existed, len(call.content), sum)
		}
	case kept:
		if !wr.Kept || wr.Bytes != 0 || wr.Created {
			t.Errorf("%s: result %s, want kept", label, env.Result)
		}
	case permissionDenied:
		if !strings.HasPrefix(env.Error, "Permission denied") {
			t.Errorf("%s: envelope error %q, want the session's permission error", label, env.Error)
		}
	case notOverwritten:
		if !strings.Contains(env.Error, "was not overwritten") {
			t.Errorf("%s: envelope error %q, want the session's not-overwritten error", label, env.Error)
		}
	}
}
