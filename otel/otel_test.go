package otel_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmcp/agentmcp/app"
	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/internal/syncbuf"
	"github.com/agentmcp/agentmcp/otel"
	"github.com/agentmcp/agentmcp/ports"
)

const (
	traceID    = "4bf92f3577b34da6a3ce929d0e0e4736"
	parentSpan = "00f067aa0ba902b7"
	// Text that must never reach a span: the prompt, the tool call's
	// arguments, the file's content, the model's and the tool's answers.
	secret = "zebra-quartz"
)

// TestAgentSubmitTrace runs a real agent_submit turn through the agentmcp
// command (serve stdio, app.MainWith with the tracer): the scripted model
// endpoint asks for one write_file call, the client approves it through a
// legacy elicitation, the model answers. The SDK's in-memory exporter
// holds one trace whose parent is the request's params._meta.traceparent,
// with the span tree and names of docs/SPEC.md §13, and no prompt,
// argument, content or answer text anywhere.
func TestAgentSubmitTrace(t *testing.T) {
	root := t.TempDir()
	model := chatscript.Script(t,
		chatscript.Reply{Calls: []chatscript.Call{{ID: "c1", Name: "write_file",
			Arguments: `{"path":"notes.txt","content":"` + secret + ` content"}`}},
			Usage: &chatscript.Usage{Prompt: 120, Completion: 12}},
		chatscript.Reply{Text: "wrote it, " + secret, Usage: &chatscript.Usage{Prompt: 160, Completion: 5}})
	t.Setenv("OPENAI_API_KEY", "")
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &syncbuf.Buffer{}
	code := make(chan int, 1)
	go func() {
		code <- app.MainWith(context.Background(), []string{"serve", "stdio", "--root", root, "--ask-client",
			"--model", "test-model", "--model-url", model.URL}, inR, outW, stderr, app.MainOptions{Observer: otel.New(tp)})
		outW.Close()
	}()
	out := bufio.NewScanner(outR)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatalf("write: %v; stderr:\n%s", err, stderr)
		}
	}
	recv := func() map[string]any {
		t.Helper()
		if !out.Scan() {
			t.Fatalf("no message; stderr:\n%s", stderr)
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", out.Bytes(), err)
		}
		return m
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	recv()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"Write ` + secret + ` into notes.txt"},` +
		`"_meta":{"traceparent":"00-` + traceID + `-` + parentSpan + `-01","tracestate":"vendor=1"}}}`)
	var answer map[string]any
	approvals := 0
	for answer == nil {
		m := recv()
		switch {
		case m["method"] == "elicitation/create":
			approvals++
			send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"action":"accept","content":{"decision":"allow_once"}}}`, m["id"]))
		case m["id"] == float64(2):
			answer = m
		}
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
	if approvals != 1 || !strings.Contains(fmt.Sprint(answer["result"]), "wrote it") {
		t.Fatalf("%d approvals, answer %v", approvals, answer)
	}
	if b, err := os.ReadFile(filepath.Join(root, "notes.txt")); err != nil || string(b) != secret+" content" {
		t.Fatalf("notes.txt = %q, %v: the approved write did not happen", b, err)
	}

	spans := exp.GetSpans()
	byName := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
		if got := s.SpanContext.TraceID().String(); got != traceID {
			t.Errorf("span %q in trace %s, want the client's %s", s.Name, got, traceID)
		}
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.String(), secret) {
				t.Errorf("span %q: attribute %s holds the prompt, an argument or an answer: %q", s.Name, kv.Key, kv.Value.String())
			}
		}
		for _, e := range s.Events {
			t.Errorf("span %q has an event %q: nothing the conventions ask for", s.Name, e.Name)
		}
		if strings.Contains(s.Status.Description, secret) {
			t.Errorf("span %q: status %q", s.Name, s.Status.Description)
		}
	}
	one := func(name string, kind trace.SpanKind, parent trace.SpanID, want map[attribute.Key]string) tracetest.SpanStub {
		t.Helper()
		got := byName[name]
		if len(got) != 1 {
			t.Fatalf("%d spans %q, want 1; spans: %v", len(got), name, names(spans))
		}
		s := got[0]
		if s.SpanKind != kind {
			t.Errorf("%s: kind %v, want %v", name, s.SpanKind, kind)
		}
		if s.Parent.SpanID() != parent {
			t.Errorf("%s: parent %s, want %s", name, s.Parent.SpanID(), parent)
		}
		attrs := map[attribute.Key]string{}
		for _, kv := range s.Attributes {
			attrs[kv.Key] = kv.Value.String()
		}
		for k, v := range want {
			if attrs[k] != v {
				t.Errorf("%s: %s = %q, want %q (attributes %v)", name, k, attrs[k], v, attrs)
			}
		}
		return s
	}
	if len(spans) != 5 {
		t.Errorf("%d spans, want 5 (server, agent, two chats, one tool): %v", len(spans), names(spans))
	}
	server := byName["tools/call agent_submit"]
	if len(server) != 1 {
		t.Fatalf("server spans %v", names(spans))
	}
	if p := server[0].Parent; p.SpanID().String() != parentSpan || !p.IsRemote() || p.TraceState().Get("vendor") != "1" {
		t.Errorf("server span's parent %s (remote %v, state %q), want %s from params._meta", p.SpanID(), p.IsRemote(), p.TraceState().String(), parentSpan)
	}
	one("tools/call agent_submit", trace.SpanKindServer, server[0].Parent.SpanID(), map[attribute.Key]string{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "agent_submit", "gen_ai.operation.name": "execute_tool",
		"mcp.protocol.version": "2025-11-25", "jsonrpc.request.id": "2",
	})
	if server[0].Status.Code == codes.Error {
		t.Errorf("server span failed: %v", server[0].Status)
	}
	agent := one("invoke_agent agentmcp", trace.SpanKindInternal, server[0].SpanContext.SpanID(), map[attribute.Key]string{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "agentmcp",
		"gen_ai.request.model": "test-model", "gen_ai.provider.name": "openai",
	})
	one("execute_tool write_file", trace.SpanKindInternal, agent.SpanContext.SpanID(), map[attribute.Key]string{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "write_file",
	})
	chats := byName["chat test-model"]
	if len(chats) != 2 {
		t.Fatalf("chat spans %v", names(spans))
	}
	wantTokens := [][2]string{{"120", "12"}, {"160", "5"}}
	wantFinish := []string{`["tool_calls"]`, `["stop"]`}
	for i, c := range chats {
		byName["chat test-model"] = []tracetest.SpanStub{c}
		one("chat test-model", trace.SpanKindClient, agent.SpanContext.SpanID(), map[attribute.Key]string{
			"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "test-model",
			"server.address": "127.0.0.1", "gen_ai.usage.input_tokens": wantTokens[i][0],
			"gen_ai.usage.output_tokens": wantTokens[i][1], "gen_ai.response.finish_reasons": wantFinish[i],
		})
	}
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// TestRequestSpanParentAndLink: the _meta context, when valid, is the
// server span's parent and the ambient span (an HTTP server span) is
// linked; without it, or with a malformed one, the ambient span is the
// parent. A JSON-RPC error is error.type and rpc.response.status_code.
func TestRequestSpanParentAndLink(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tr := otel.New(tp)
	ctx, http := tp.Tracer("http").Start(context.Background(), "POST /mcp", trace.WithSpanKind(trace.SpanKindServer))
	for _, c := range []struct {
		name, traceparent string
		viaMeta           bool
	}{
		{"meta", "00-" + traceID + "-" + parentSpan + "-01", true},
		{"none", "", false},
		{"malformed", "00-not-a-trace-01", false},
	} {
		_, end := tr.StartRequest(ctx, ports.ObservedRequest{Method: "tools/list", TraceParent: c.traceparent, RequestID: "7"})
		end(ports.RequestEnd{ErrorType: "-32602"})
		spans := exp.GetSpans()
		s := spans[len(spans)-1]
		if s.Name != "tools/list" {
			t.Errorf("%s: name %q", c.name, s.Name)
		}
		switch {
		case c.viaMeta && (s.Parent.SpanID().String() != parentSpan || len(s.Links) != 1 || s.Links[0].SpanContext.SpanID() != http.SpanContext().SpanID()):
			t.Errorf("%s: parent %s, links %v; want the _meta parent and a link to the HTTP span", c.name, s.Parent.SpanID(), s.Links)
		case !c.viaMeta && (s.Parent.SpanID() != http.SpanContext().SpanID() || len(s.Links) != 0):
			t.Errorf("%s: parent %s, links %v; want the HTTP span as parent", c.name, s.Parent.SpanID(), s.Links)
		}
		attrs := attribute.NewSet(s.Attributes...)
		if v, _ := attrs.Value("error.type"); v.AsString() != "-32602" {
			t.Errorf("%s: error.type %q", c.name, v.AsString())
		}
		if v, _ := attrs.Value("rpc.response.status_code"); v.AsString() != "-32602" || s.Status.Code != codes.Error {
			t.Errorf("%s: rpc.response.status_code %q, status %v", c.name, v.AsString(), s.Status)
		}
	}
	http.End()
}
