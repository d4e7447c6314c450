package domain_test

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/domain"
)

func tool(name, schema string) domain.Tool {
	return domain.Tool{Name: name, Description: "d", InputSchema: json.RawMessage(schema)}
}

const obj = `{"type":"object"}`

func TestNewCatalog(t *testing.T) {
	submit, err := domain.SubmitTool{}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		tools   []domain.Tool
		wantErr string
	}{
		{"valid", []domain.Tool{tool("a", obj), tool("b.c-d_e", `{"type":"object","properties":{}}`)}, ""},
		{"empty", nil, ""},
		{"invalid name", []domain.Tool{tool("bad name", obj)}, "Invalid MCP tool name: bad name"},
		{"empty name", []domain.Tool{tool("", obj)}, "Invalid MCP tool name: "},
		{"129 chars", []domain.Tool{tool(strings.Repeat("a", 129), obj)}, "Invalid MCP tool name: " + strings.Repeat("a", 129)},
		{"non-ascii", []domain.Tool{tool("tööl", obj)}, "Invalid MCP tool name: tööl"},
		{"duplicate", []domain.Tool{tool("a", obj), tool("a", obj)}, "Duplicate or reserved MCP tool name: a"},
		{"reserved", []domain.Tool{tool("agent_submit", obj)}, "Duplicate or reserved MCP tool name: agent_submit"},
		{"string root", []domain.Tool{tool("s", `{"type":"string"}`)}, `Tool s has an invalid input schema: the root type must be "object"`},
		{"no type", []domain.Tool{tool("s", `{}`)}, `Tool s has an invalid input schema: the root type must be "object"`},
		{"array schema", []domain.Tool{tool("s", `[]`)}, `Tool s has an invalid input schema: the root type must be "object"`},
		{"absent schema", []domain.Tool{tool("s", ``)}, `Tool s has an invalid input schema: the root type must be "object"`},
		{"type array", []domain.Tool{tool("s", `{"type":["object"]}`)}, `Tool s has an invalid input schema: the root type must be "object"`},
		{"first violation wins", []domain.Tool{tool("x", `{}`), tool("bad name", obj)}, `Tool x has an invalid input schema: the root type must be "object"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cat, err := domain.NewCatalog(c.tools, submit)
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("NewCatalog: %v", err)
				}
				got := cat.Tools()
				if len(got) != len(c.tools)+1 || got[len(got)-1].Name != "agent_submit" {
					t.Fatalf("Tools() = %v, want the runtime tools then agent_submit", got)
				}
				return
			}
			var ce *domain.CatalogError
			if !errors.As(err, &ce) || ce.Message != c.wantErr {
				t.Fatalf("NewCatalog error = %v, want CatalogError %q", err, c.wantErr)
			}
		})
	}
}

func TestCatalogSame(t *testing.T) {
	submit, _ := domain.SubmitTool{}.Resolve()
	tools := []domain.Tool{tool("a", obj)}
	cat, err := domain.NewCatalog(tools, submit)
	if err != nil {
		t.Fatal(err)
	}
	if !cat.Same([]domain.Tool{tool("a", obj)}) {
		t.Error("Same(equal list) = false")
	}
	tools[0].InputSchema[9] = 'X' // the session mutates its bytes in place
	if cat.Same(tools) {
		t.Error("Same(list whose schema changed in place) = true; the catalog must own its copy")
	}
	if cat.Same([]domain.Tool{tool("a", obj), tool("b", obj)}) {
		t.Error("Same(longer list) = true")
	}
	titled := tool("a", obj)
	titled.Title = "A"
	if cat.Same([]domain.Tool{titled}) {
		t.Error("Same(list with a new title) = true")
	}
	hinted := tool("a", obj)
	hinted.Annotations = &domain.ToolAnnotations{ReadOnlyHint: domain.Hint(true)}
	if cat.Same([]domain.Tool{hinted}) {
		t.Error("Same(list with new annotations) = true")
	}
	deferred := tool("a", obj)
	deferred.TaskSupport, deferred.TaskStartsInRequest = domain.TaskOptional, true
	if cat.Same([]domain.Tool{deferred}) {
		t.Error("Same(list whose tool now starts its task in its request) = true")
	}
	cat2, _ := domain.NewCatalog([]domain.Tool{hinted}, submit)
	*hinted.Annotations.ReadOnlyHint = false // the session mutates its hints in place
	if cat2.Same([]domain.Tool{hinted}) {
		t.Error("Same(list whose hint changed in place) = true; the catalog must own its copy")
	}
}

// TestToolWireShape: a tool serialises as docs/SPEC.md §2 lists its members,
// in order, with the absent optionals left out, and the submission tool
// carries its own title and annotations.
func TestToolWireShape(t *testing.T) {
	full := domain.Tool{Name: "n", Title: "T", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &domain.ToolAnnotations{ReadOnlyHint: domain.Hint(true), DestructiveHint: domain.Hint(false), IdempotentHint: domain.Hint(true), OpenWorldHint: domain.Hint(false)}}
	bare := domain.Tool{Name: "n", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)}
	for _, c := range []struct {
		tool domain.Tool
		want string
	}{
		{full, `{"name":"n","title":"T","description":"d","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false}}`},
		{bare, `{"name":"n","description":"d","inputSchema":{"type":"object"}}`},
	} {
		got, err := domain.MarshalJSON(c.tool)
		if err != nil || string(got) != c.want {
			t.Errorf("MarshalJSON = %s, %v\nwant %s", got, err, c.want)
		}
	}
	s, _ := domain.SubmitTool{}.Resolve()
	got, _ := domain.MarshalJSON(s.Tool())
	want := `{"name":"agent_submit","title":"Ask the agent","description":"Submit a prompt to the agent and await its turn","inputSchema":` + string(domain.SubmitInputSchema) +
		`,"annotations":{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":true}}`
	if string(got) != want {
		t.Errorf("submission tool = %s\nwant %s", got, want)
	}
	custom, _ := domain.SubmitTool{Title: "Ask Robota", Annotations: &domain.ToolAnnotations{OpenWorldHint: domain.Hint(false)}}.Resolve()
	if got, _ := domain.MarshalJSON(custom.Tool()); !strings.Contains(string(got), `"title":"Ask Robota"`) || !strings.Contains(string(got), `"annotations":{"openWorldHint":false}`) {
		t.Errorf("custom submission tool = %s", got)
	}
}

func TestSubmitToolResolve(t *testing.T) {
	for _, bad := range []string{"bad name", "bad,name", "ñame", strings.Repeat("x", 129), "a/b"} {
		if _, err := (domain.SubmitTool{Name: bad}).Resolve(); !errors.Is(err, domain.ErrInvalidSubmitName) {
			t.Errorf("Resolve(%q) = %v, want ErrInvalidSubmitName", bad, err)
		}
	}
	s, err := domain.SubmitTool{Name: "robota_submit"}.Resolve()
	if err != nil || s.Description != domain.DefaultSubmitDescription {
		t.Errorf("Resolve(custom name) = %+v, %v", s, err)
	}
	if got := s.InvalidArgumentsMessage(); got != "robota_submit requires a non-empty string prompt and no other arguments" {
		t.Errorf("InvalidArgumentsMessage = %q", got)
	}
	if got := string(s.Tool().InputSchema); got != `{"type":"object","properties":{"prompt":{"type":"string","minLength":1}},"required":["prompt"],"additionalProperties":false}` {
		t.Errorf("submit schema = %s", got)
	}
}

func TestSubmitArguments(t *testing.T) {
	plain, _ := domain.SubmitTool{}.Resolve()
	conv := plain.WithConversations(json.RawMessage(`{"type":"object"}`))
	plainBad := "agent_submit requires a non-empty string prompt and no other arguments"
	convBad := "agent_submit requires a non-empty string prompt, optional string conversation and fork_from, and no other arguments"
	name := func(arg, v string) string {
		return domain.CheckConversationName(arg, v).Error()
	}
	cases := []struct {
		tool domain.SubmitTool
		args string
		want domain.SubmitArguments
		err  string
	}{
		{plain, `{"prompt":"hi"}`, domain.SubmitArguments{Prompt: "hi"}, ""},
		{plain, ` {"prompt":" "} `, domain.SubmitArguments{Prompt: " "}, ""},
		{plain, `{"prompt":""}`, domain.SubmitArguments{}, plainBad},
		{plain, `{"prompt":123}`, domain.SubmitArguments{}, plainBad},
		{plain, `{"prompt":null}`, domain.SubmitArguments{}, plainBad},
		{plain, `{}`, domain.SubmitArguments{}, plainBad},
		{plain, `{"prompt":"hi","x":1}`, domain.SubmitArguments{}, plainBad},
		{plain, `{"prompt":"a","prompt":"b"}`, domain.SubmitArguments{}, plainBad},
		{plain, `{"Prompt":"hi"}`, domain.SubmitArguments{}, plainBad},
		{plain, `{"pro\u006dpt":"\u0068i"}`, domain.SubmitArguments{Prompt: "hi"}, ""},
		{plain, `{"prompt":"hi","prompt":"hi"}`, domain.SubmitArguments{}, plainBad},
		{plain, `{"prompt":"hi"`, domain.SubmitArguments{}, plainBad},
		{plain, "{\"prompt\":\"\xff\"}", domain.SubmitArguments{Prompt: "\ufffd"}, ""},
		{plain, `["hi"]`, domain.SubmitArguments{}, plainBad},
		{plain, ``, domain.SubmitArguments{}, plainBad},
		// The plain tool knows no conversation: the seed's rule, unchanged.
		{plain, `{"prompt":"hi","conversation":"a"}`, domain.SubmitArguments{}, plainBad},
		{plain, `{"prompt":"hi","fork_from":"a"}`, domain.SubmitArguments{}, plainBad},

		{conv, `{"prompt":"hi"}`, domain.SubmitArguments{Prompt: "hi"}, ""},
		{conv, `{"conversation":"a-b.c_D9","prompt":"hi"}`, domain.SubmitArguments{Prompt: "hi", Conversation: "a-b.c_D9"}, ""},
		{conv, `{"prompt":"hi","conversation":"b","fork_from":"default"}`, domain.SubmitArguments{Prompt: "hi", Conversation: "b", ForkFrom: "default"}, ""},
		// Relations are the session's: fork_from alone passes the shape check.
		{conv, `{"prompt":"hi","fork_from":"a"}`, domain.SubmitArguments{Prompt: "hi", ForkFrom: "a"}, ""},
		{conv, `{"prompt":"hi","conversation":"` + strings.Repeat("x", 64) + `"}`, domain.SubmitArguments{Prompt: "hi", Conversation: strings.Repeat("x", 64)}, ""},
		{conv, `{"prompt":"hi","conversation":"` + strings.Repeat("x", 65) + `"}`, domain.SubmitArguments{}, name("conversation", strings.Repeat("x", 65))},
		{conv, `{"prompt":"hi","conversation":""}`, domain.SubmitArguments{}, name("conversation", "")},
		{conv, `{"prompt":"hi","conversation":"a b"}`, domain.SubmitArguments{}, name("conversation", "a b")},
		{conv, `{"prompt":"hi","conversation":"a/b"}`, domain.SubmitArguments{}, name("conversation", "a/b")},
		{conv, `{"prompt":"hi","conversation":"ñ"}`, domain.SubmitArguments{}, name("conversation", "ñ")},
		{conv, `{"prompt":"hi","conversation":"a\u0000"}`, domain.SubmitArguments{}, name("conversation", "a\x00")},
		{conv, `{"prompt":"hi","conversation":"a","fork_from":"../b"}`, domain.SubmitArguments{}, name("fork_from", "../b")},
		{conv, `{"prompt":"hi","fork_from":""}`, domain.SubmitArguments{}, name("fork_from", "")},
		{conv, `{"prompt":"hi","conversation":1}`, domain.SubmitArguments{}, convBad},
		{conv, `{"prompt":"hi","conversation":null}`, domain.SubmitArguments{}, convBad},
		{conv, `{"prompt":"hi","fork_from":["a"]}`, domain.SubmitArguments{}, convBad},
		{conv, `{"prompt":"hi","conversation":"a","conversation":"b"}`, domain.SubmitArguments{}, convBad},
		{conv, `{"prompt":"hi","thread":"a"}`, domain.SubmitArguments{}, convBad},
		{conv, `{"conversation":"a"}`, domain.SubmitArguments{}, convBad},
		{conv, `{"prompt":"","conversation":"a"}`, domain.SubmitArguments{}, convBad},
	}
	for _, c := range cases {
		got, err := c.tool.Arguments(json.RawMessage(c.args))
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if got != c.want || msg != c.err {
			t.Errorf("Arguments(%s) = %+v, %q; want %+v, %q", c.args, got, msg, c.want, c.err)
		}
	}
	// A 1 MB name is refused with a short message that shows 16 bytes of it.
	_, err := conv.Arguments(json.RawMessage(`{"prompt":"hi","conversation":"` + strings.Repeat("a", 1<<20) + `"}`))
	var ne *domain.ConversationNameError
	if !errors.As(err, &ne) || ne.Arg != "conversation" || len(err.Error()) > 200 {
		t.Errorf("1 MB name: %v", err)
	}
}

// TestConversationalSubmitTool: the conversational submission tool
// advertises its input schema and outputSchema (between inputSchema and
// annotations, as MCP orders them); the plain one neither.
func TestConversationalSubmitTool(t *testing.T) {
	s, _ := domain.SubmitTool{}.Resolve()
	if s.Conversations() || s.Tool().OutputSchema != nil {
		t.Fatalf("plain tool has conversations or an outputSchema")
	}
	c := s.WithConversations(json.RawMessage(`{"type":"object","properties":{}}`))
	got, err := domain.MarshalJSON(c.Tool())
	want := `{"name":"agent_submit","title":"Ask the agent","description":"Submit a prompt to the agent and await its turn","inputSchema":` + string(domain.SubmitConversationInputSchema) +
		`,"outputSchema":{"type":"object","properties":{}},"annotations":{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":true}}`
	if err != nil || string(got) != want {
		t.Errorf("conversational tool = %s, %v\nwant %s", got, err, want)
	}
	var schema struct {
		Properties map[string]struct {
			Pattern string `json:"pattern"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(domain.SubmitConversationInputSchema, &schema); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"conversation", "fork_from"} {
		re := regexp.MustCompile(schema.Properties[arg].Pattern)
		for _, n := range []string{"a", "default", strings.Repeat("z", 64), "a b", "", strings.Repeat("z", 65), "é", "a/b"} {
			if re.MatchString(n) != (domain.CheckConversationName(arg, n) == nil) {
				t.Errorf("%s pattern and CheckConversationName disagree on %q", arg, n)
			}
		}
	}
	if _, err := domain.NewCatalog([]domain.Tool{{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(`{"type":"object"}`)}}, s); err == nil ||
		err.Error() != "Tool t declares an outputSchema: a runtime tool's result is an execution envelope" {
		t.Errorf("a runtime tool's outputSchema: %v", err)
	}
}

func TestRenderEnvelope(t *testing.T) {
	d := 12.5
	cases := []struct {
		env      domain.Envelope
		wantText string
		wantErr  bool
	}{
		{domain.Envelope{Success: true, Result: json.RawMessage(`"ran"`), ExecutionID: "call-1"}, `{"success":true,"result":"ran","executionId":"call-1"}`, false},
		{domain.Envelope{Success: false, Error: "Permission denied"}, `{"success":false,"error":"Permission denied"}`, true},
		{domain.Envelope{Success: true, ToolName: "t", Result: json.RawMessage(`{"a":1}`), Error: "e", Duration: &d, ExecutionID: "x", Metadata: json.RawMessage(`{"k":"v"}`)},
			`{"success":true,"toolName":"t","result":{"a":1},"error":"e","duration":12.5,"executionId":"x","metadata":{"k":"v"}}`, false},
		{domain.Envelope{Success: true, Result: json.RawMessage(`null`)}, `{"success":true,"result":null}`, false},
		{domain.Envelope{Success: true, Result: json.RawMessage(`{"c":"<a> & b"}`)}, `{"success":true,"result":{"c":"<a> & b"}}`, false},
	}
	for _, c := range cases {
		r, err := domain.RenderEnvelope(c.env)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Content) != 1 || r.Content[0].Type != "text" || r.Content[0].Text != c.wantText {
			t.Errorf("RenderEnvelope text = %+v, want %s", r.Content, c.wantText)
		}
		if r.IsError == nil || *r.IsError != c.wantErr {
			t.Errorf("RenderEnvelope isError = %v, want %v", r.IsError, c.wantErr)
		}
	}
	b, _ := json.Marshal(domain.TextResult(""))
	if string(b) != `{"content":[{"type":"text","text":""}]}` {
		t.Errorf("TextResult(\"\") = %s", b)
	}
	b, _ = json.Marshal(domain.ToolError("x"))
	if string(b) != `{"content":[{"type":"text","text":"x"}],"isError":true}` {
		t.Errorf("ToolError = %s", b)
	}
}

func TestClientMessage(t *testing.T) {
	cases := []struct{ in, want string }{
		{"one line", "one line"},
		{"first\nsecret", "first"},
		{"first\r\nsecret", "first"},
		{strings.Repeat("a", 600), strings.Repeat("a", 500)},
		{strings.Repeat("a", 499) + "é", strings.Repeat("a", 499)},
	}
	for _, c := range cases {
		if got := domain.ClientMessage(errors.New(c.in)); got != c.want {
			t.Errorf("ClientMessage(%.20q…) = %.20q… (len %d), want len %d", c.in, got, len(got), len(c.want))
		}
	}
}

func TestValidScopeToken(t *testing.T) {
	for s, want := range map[string]bool{
		"mcp:tools": true, "a": true, "!#[]~": true,
		"": false, "a b": false, `a"b`: false, `a\b`: false, "é": false, "a\tb": false, "\x7f": false,
	} {
		if got := domain.ValidScopeToken(s); got != want {
			t.Errorf("ValidScopeToken(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestCatalogTaskStartsInRequest: only a tool that supports tasks and is
// marked TaskStartsInRequest starts in its request (docs/SPEC.md §14); the
// submission tool is a task at once.
func TestCatalogTaskStartsInRequest(t *testing.T) {
	submit, _ := domain.SubmitTool{}.Resolve()
	mark := func(name string, support domain.TaskSupport, inRequest bool) domain.Tool {
		x := tool(name, obj)
		x.TaskSupport, x.TaskStartsInRequest = support, inRequest
		return x
	}
	cat, err := domain.NewCatalog([]domain.Tool{
		mark("optional", domain.TaskOptional, true), mark("required", domain.TaskRequired, true),
		mark("forbidden", domain.TaskForbidden, true), mark("unset", "", true), mark("atonce", domain.TaskOptional, false),
	}, submit)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"optional": true, "required": true, "forbidden": false, "unset": false,
		"atonce": false, submit.Name: false, "unknown": false} {
		if got := cat.TaskStartsInRequest(name); got != want {
			t.Errorf("TaskStartsInRequest(%q) = %v, want %v", name, got, want)
		}
	}
}
