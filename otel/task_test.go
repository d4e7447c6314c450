package otel_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentmcp/agentmcp/app"
	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/internal/syncbuf"
	"github.com/agentmcp/agentmcp/otel"
)

// TestTaskTurnNestsUnderToolsCall: an agent_submit that becomes a task
// outlives its request, and its turn still nests under the tools/call span
// that created it (docs/SPEC.md §13), in both eras: a 2026-07-28 task
// (the tasks extension, read with tasks/get) and a 2025-11-25 task
// (params.task, read with tasks/result). Issue 30, T1: a task's turn was a
// root trace of its own.
func TestTaskTurnNestsUnderToolsCall(t *testing.T) {
	for _, era := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(era, func(t *testing.T) {
			model := chatscript.Script(t, chatscript.Reply{Text: "done"})
			t.Setenv("OPENAI_API_KEY", "")
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			stderr := &syncbuf.Buffer{}
			code := make(chan int, 1)
			go func() {
				code <- app.MainWith(context.Background(), []string{"serve", "stdio", "--root", t.TempDir(),
					"--model", "test-model", "--model-url", model.URL, "--ephemeral", "--no-model-probe"},
					inR, outW, stderr, app.MainOptions{Observer: otel.New(tp)})
				outW.Close()
			}()
			out := bufio.NewScanner(outR)
			out.Buffer(nil, 1<<20)
			// do sends one request and returns the result of its answer.
			do := func(id int, line string) map[string]any {
				t.Helper()
				if _, err := io.WriteString(inW, line+"\n"); err != nil {
					t.Fatalf("write: %v; stderr:\n%s", err, stderr)
				}
				for out.Scan() {
					var m struct {
						ID     json.RawMessage `json:"id"`
						Result map[string]any  `json:"result"`
					}
					if err := json.Unmarshal(out.Bytes(), &m); err != nil {
						t.Fatalf("%s: %v", out.Bytes(), err)
					}
					if string(m.ID) == strconv.Itoa(id) {
						if m.Result == nil {
							t.Fatalf("answer %s", out.Bytes())
						}
						return m.Result
					}
				}
				t.Fatalf("no answer to %s; stderr:\n%s", line, stderr)
				return nil
			}
			if era == "2026-07-28" {
				meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
				r := do(1, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"hi"},`+meta+`}}`)
				id, _ := r["taskId"].(string)
				if r["resultType"] != "task" {
					t.Fatalf("the call = %v, want a task", r)
				}
				guard := time.Now().Add(30 * time.Second)
				for n := 2; ; n++ { // poll as a client does; the guard bounds a hang
					g := do(n, `{"jsonrpc":"2.0","id":`+strconv.Itoa(n)+`,"method":"tasks/get","params":{"taskId":"`+id+`",`+meta+`}}`)
					if g["status"] == "completed" {
						break
					}
					if g["status"] != "working" || time.Now().After(guard) {
						t.Fatalf("tasks/get = %v", g)
					}
				}
			} else {
				do(1, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
				r := do(2, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"hi"},"task":{}}}`)
				task, _ := r["task"].(map[string]any)
				id, _ := task["taskId"].(string)
				if id == "" {
					t.Fatalf("the call = %v, want a task", r)
				}
				do(3, `{"jsonrpc":"2.0","id":3,"method":"tasks/result","params":{"taskId":"`+id+`"}}`)
			}
			inW.Close()
			select {
			case c := <-code:
				if c != 0 {
					t.Fatalf("exit %d; stderr:\n%s", c, stderr)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("serve stdio did not end")
			}
			spans := exp.GetSpans()
			var call, turn *tracetest.SpanStub
			for i, s := range spans {
				switch s.Name {
				case "tools/call agent_submit":
					call = &spans[i]
				case "invoke_agent agentmcp":
					turn = &spans[i]
				}
			}
			if call == nil || turn == nil {
				t.Fatalf("spans %v, want the tools/call and the turn", names(spans))
			}
			if turn.Parent.SpanID() != call.SpanContext.SpanID() || turn.SpanContext.TraceID() != call.SpanContext.TraceID() {
				t.Errorf("the task's turn has parent %s in trace %s, want the tools/call span %s of trace %s",
					turn.Parent.SpanID(), turn.SpanContext.TraceID(), call.SpanContext.SpanID(), call.SpanContext.TraceID())
			}
		})
	}
}
