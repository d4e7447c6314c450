package workspace_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/workspace"
	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
	"github.com/agentmcp/agentmcp/ports/porttest"
)

// writeTree creates files (slash-separated path -> content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// newSession opens a session over a fresh directory holding files.
func newSession(t *testing.T, files map[string]string) (*workspace.Session, string) {
	t.Helper()
	root := t.TempDir()
	writeTree(t, root, files)
	s, err := workspace.New(workspace.Options{Root: root})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, root
}

// invoke calls a tool and fails the test on an error (a refusal).
func invoke(t *testing.T, s *workspace.Session, tool, args string, c ports.Caller) domain.Envelope {
	t.Helper()
	return invokeCtx(t, t.Context(), s, tool, args, c)
}

func invokeCtx(t *testing.T, ctx context.Context, s *workspace.Session, tool, args string, c ports.Caller) domain.Envelope {
	t.Helper()
	if c == nil {
		c = ports.ClosedCaller{}
	}
	env, err := s.InvokeTool(ctx, tool, json.RawMessage(args), c)
	if err != nil {
		t.Fatalf("%s %s: unexpected error %v", tool, args, err)
	}
	return env
}

// succeed checks env succeeded and decodes its result into v.
func succeed(t *testing.T, env domain.Envelope, v any) {
	t.Helper()
	if !env.Success {
		t.Fatalf("call failed: %s", env.Error)
	}
	if err := json.Unmarshal(env.Result, v); err != nil {
		t.Fatalf("result %s: %v", env.Result, err)
	}
}

// fail checks env failed with an error containing want, and no result.
func fail(t *testing.T, env domain.Envelope, want string) {
	t.Helper()
	if env.Success {
		t.Fatalf("call succeeded with %s, want a failure containing %q", env.Result, want)
	}
	if !strings.Contains(env.Error, want) {
		t.Errorf("error = %q, want it to contain %q", env.Error, want)
	}
	if env.Result != nil {
		t.Errorf("failed envelope carries a result: %s", env.Result)
	}
}

// manyFiles returns n files "dir/fNNNN.txt" holding a needle each.
func manyFiles(dir string, n int) map[string]string {
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("%s/f%04d.txt", dir, i)] = fmt.Sprintf("line one\nneedle %d\n", i)
	}
	return files
}

func contractFixture(t *testing.T) (porttest.Fixture, *workspace.Session) {
	files := manyFiles("many", workspace.ProgressEvery+workspace.ProgressEvery/2) // work left after the first report
	files["hello.txt"] = "hello, world\n"
	s, root := newSession(t, files)
	return porttest.Fixture{
		Session:     s,
		ReadOnly:    porttest.Call{Tool: "read_file", Arguments: json.RawMessage(`{"path":"hello.txt"}`)},
		Cancellable: porttest.Call{Tool: "search_text", Arguments: json.RawMessage(`{"pattern":"needle","path":"many"}`)},
		Guarded:     porttest.Call{Tool: "write_file", Arguments: json.RawMessage(`{"path":"porttest.txt","content":"written"}`)},
		SideEffect: func() bool {
			_, err := os.Lstat(filepath.Join(root, "porttest.txt"))
			return err == nil
		},
	}, s
}

// TestContract runs the port's contract suite against the bare workspace:
// it runs no turns, so every submission is refused (adapters/agent runs the
// suite against the agent-backed session).
func TestContract(t *testing.T) {
	porttest.TestSession(t, func(t *testing.T) porttest.Fixture {
		f, _ := contractFixture(t)
		return f
	})
}

func TestNew(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	writeTree(t, filepath.Dir(file), map[string]string{"file": "x"})
	for _, root := range []string{"", filepath.Join(t.TempDir(), "missing"), file} {
		if s, err := workspace.New(workspace.Options{Root: root}); err == nil {
			s.Close()
			t.Errorf("New(Root: %q) succeeded, want an error", root)
		}
	}
}

func TestRuntimeTools(t *testing.T) {
	s, _ := newSession(t, nil)
	tools, err := s.RuntimeTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// Annotations as the wire carries them (docs/SPEC.md §2): read-only
	// tools say so (a client's read-only mode may run them) and that they
	// stay in the workspace; write_file is destructive and idempotent.
	const readOnly = `{"readOnlyHint":true,"openWorldHint":false}`
	want := []struct {
		name        string
		required    []string
		title       string
		annotations string
	}{
		{"list_dir", []string{"path"}, "List a directory", readOnly},
		{"read_file", []string{"path"}, "Read a file", readOnly},
		{"search_text", []string{"pattern"}, "Search text", readOnly},
		{"write_file", []string{"path", "content"}, "Write a file", `{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":true,"openWorldHint":false}`},
		{"edit_file", []string{"path", "old_text", "new_text"}, "Edit a file", `{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":false}`},
		{"find_files", []string{"pattern"}, "Find files", readOnly},
	}
	if len(tools) != len(want) {
		t.Fatalf("got %d tools, want %d", len(tools), len(want))
	}
	for i, w := range want {
		tool := tools[i]
		if tool.Name != w.name {
			t.Errorf("tool %d = %s, want %s", i, tool.Name, w.name)
		}
		if tool.Title != w.title {
			t.Errorf("%s: title %q, want %q", tool.Name, tool.Title, w.title)
		}
		if a, _ := json.Marshal(tool.Annotations); string(a) != w.annotations {
			t.Errorf("%s: annotations %s, want %s", tool.Name, a, w.annotations)
		}
		if len(tool.Description) < 80 {
			t.Errorf("%s: description too thin: %q", tool.Name, tool.Description)
		}
		var schema struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(tool.InputSchema, &schema); err != nil {
			t.Fatalf("%s schema: %v", tool.Name, err)
		}
		if schema.Type != "object" || schema.AdditionalProperties == nil || *schema.AdditionalProperties {
			t.Errorf("%s schema is not a strict object: %s", tool.Name, tool.InputSchema)
		}
		if fmt.Sprint(schema.Required) != fmt.Sprint(w.required) {
			t.Errorf("%s required = %v, want %v", tool.Name, schema.Required, w.required)
		}
		for _, r := range schema.Required {
			if _, ok := schema.Properties[r]; !ok {
				t.Errorf("%s requires %q but does not describe it", tool.Name, r)
			}
		}
	}
	if _, err := domain.NewCatalog(tools, domain.SubmitTool{Name: domain.DefaultSubmitName}); err != nil {
		t.Errorf("catalog: %v", err)
	}
	tools[0].InputSchema[0] = 'X' // the caller owns its copy
	again, _ := s.RuntimeTools(t.Context())
	if again[0].InputSchema[0] != '{' {
		t.Error("RuntimeTools hands out shared schema bytes")
	}
	*tools[1].Annotations.ReadOnlyHint = false
	if again, _ := s.RuntimeTools(t.Context()); !*again[1].Annotations.ReadOnlyHint {
		t.Error("RuntimeTools hands out shared annotations")
	}
}

func TestEnvelope(t *testing.T) {
	s, _ := newSession(t, map[string]string{"a.txt": "a"})

	ok := invoke(t, s, "read_file", `{"path":"a.txt"}`, nil)
	bad := invoke(t, s, "read_file", `{"path":"missing.txt"}`, nil)
	unknown := invoke(t, s, "rm_rf", `{}`, nil)

	if !ok.Success || ok.ToolName != "read_file" || ok.ExecutionID != "exec-1" || ok.Duration == nil || *ok.Duration < 0 || ok.Error != "" {
		t.Errorf("success envelope = %+v", ok)
	}
	if bad.Success || bad.ToolName != "read_file" || bad.ExecutionID != "exec-2" || bad.Duration == nil || bad.Result != nil {
		t.Errorf("failure envelope = %+v", bad)
	}
	fail(t, bad, `"missing.txt": no such file or directory`)
	fail(t, unknown, "Unknown tool: rm_rf")
	if unknown.ExecutionID != "exec-3" {
		t.Errorf("unknown tool executionId = %q, want exec-3", unknown.ExecutionID)
	}
	text, err := json.Marshal(bad)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(text), `{"success":false,"toolName":"read_file","error":`) {
		t.Errorf("failed envelope serialises as %s", text)
	}
}

func TestCancelledBeforeStart(t *testing.T) {
	s, root := newSession(t, map[string]string{"a.txt": "a"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, tool := range []string{"list_dir", "read_file", "search_text", "write_file"} {
		args := `{"path":"a.txt","pattern":"a","content":"b"}`
		env := invokeCtx(t, ctx, s, tool, args, &porttest.Recorder{Allow: true})
		fail(t, env, tool+" was cancelled")
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "a" {
		t.Errorf("a cancelled write_file wrote %q", b)
	}
}

func TestArguments(t *testing.T) {
	s, _ := newSession(t, map[string]string{"a.txt": "a"})
	tests := []struct {
		tool, args, want string
	}{
		{"read_file", `[]`, "arguments must be a JSON object"},
		{"read_file", `"a.txt"`, "arguments must be a JSON object"},
		{"read_file", `{"path":"a.txt"} {}`, "arguments must be a single JSON object"},
		{"read_file", `{}`, `missing required argument "path"`},
		{"read_file", ``, `missing required argument "path"`},
		{"read_file", `{"path":null}`, `missing required argument "path"`},
		{"read_file", `{"path":7}`, `argument "path" must be a string`},
		{"read_file", `{"path":"a.txt","path":"b.txt"}`, `duplicate argument "path"`},
		{"read_file", `{"path":"a.txt","mode":"r"}`, `unknown argument "mode" (read_file takes "path")`},
		{"write_file", `{"path":"b.txt","contents":"x"}`, `unknown argument "contents" (write_file takes "path" and "content")`},
		{"write_file", `{"path":"b.txt"}`, `missing required argument "content"`},
		{"search_text", `{"path":"."}`, `missing required argument "pattern"`},
		{"search_text", `{"pattern":""}`, "pattern must not be empty"},
		{"search_text", `{"pattern":"` + strings.Repeat("a", workspace.MaxPatternBytes+1) + `"}`, "pattern is 1025 bytes; search_text takes at most 1024"},
		{"search_text", `{"pattern":"f("}`, "invalid pattern: missing closing ): `f(`"},
		{"list_dir", `{"path":""}`, "path must not be empty"},
		{"list_dir", `{"path":"a\u0000b"}`, "path must not contain a NUL byte"},
		{"list_dir", `{"path":"` + strings.Repeat("a/", workspace.MaxPathBytes/2+1) + `"}`, "path is longer than 4096 bytes"},
		{"read_file", `{"path":"."}`, `"." is the workspace root, not a file`},
		{"write_file", `{"path":"./","content":"x"}`, `"." is the workspace root, not a file`},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.args[:min(len(tt.args), 40)], func(t *testing.T) {
			rec := &porttest.Recorder{Allow: true}
			fail(t, invoke(t, s, tt.tool, tt.args, rec), tt.want)
			if p := rec.Prompts(); len(p) > 0 {
				t.Errorf("asked permission for invalid arguments: %v", p)
			}
		})
	}
}

func TestSubmitWithoutModel(t *testing.T) {
	s, _ := newSession(t, nil)
	_, err := s.Submit(t.Context(), ports.Submission{Prompt: "hello"}, ports.ClosedCaller{})
	if !errors.Is(err, ports.ErrRefused) || !errors.Is(err, workspace.ErrNoModel) {
		t.Fatalf("Submit = %v, want a refusal (ErrNoModel)", err)
	}
	msg := domain.ClientMessage(err)
	if msg != err.Error() || !strings.Contains(msg, "no model is configured") || !strings.Contains(msg, "--model NAME") || !strings.Contains(msg, "--model-url") {
		t.Errorf("refusal message %q should be one line naming --model and --model-url", msg)
	}
}

func TestClose(t *testing.T) {
	s, _ := newSession(t, map[string]string{"a.txt": "a"})
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.InvokeTool(t.Context(), "read_file", json.RawMessage(`{"path":"a.txt"}`), ports.ClosedCaller{}); !errors.Is(err, workspace.ErrClosed) {
		t.Errorf("InvokeTool after Close = %v, want ErrClosed", err)
	}
	if _, err := s.Submit(t.Context(), ports.Submission{Prompt: "p"}, nil); !errors.Is(err, workspace.ErrClosed) {
		t.Errorf("Submit after Close = %v, want ErrClosed", err)
	}
}

func TestLogger(t *testing.T) {
	var buf bytes.Buffer
	root := t.TempDir()
	writeTree(t, root, map[string]string{"private-name.txt": "private content"})
	s, err := workspace.New(workspace.Options{Root: root, Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	invoke(t, s, "read_file", `{"path":"private-name.txt"}`, nil)
	log := buf.String()
	if !strings.Contains(log, "tool=read_file") || !strings.Contains(log, "executionId=exec-1") || !strings.Contains(log, "success=true") {
		t.Errorf("log lacks the call record: %s", log)
	}
	if strings.Contains(log, "private") {
		t.Errorf("log shows arguments or content: %s", log)
	}
}
