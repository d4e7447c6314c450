package agent_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/agent"
	"github.com/agentmcp/agentmcp/internal/chatscript"
	"github.com/agentmcp/agentmcp/ports"
)

// journal is an Observer that records what the agent reports, each with
// the path of the observations it runs under (from the context).
type journal struct {
	ports.NopObserver
	mu    sync.Mutex
	lines []string
}

type pathKey struct{}

func (j *journal) add(ctx context.Context, what string) context.Context {
	path, _ := ctx.Value(pathKey{}).(string)
	j.mu.Lock()
	j.lines = append(j.lines, path+"/"+what)
	j.mu.Unlock()
	return context.WithValue(ctx, pathKey{}, path+"/"+what)
}

func (j *journal) end(what string) {
	j.mu.Lock()
	j.lines = append(j.lines, "end "+what)
	j.mu.Unlock()
}

func (j *journal) StartTurn(ctx context.Context, t ports.ObservedTurn) (context.Context, func(ports.TurnEnd)) {
	ctx = j.add(ctx, "turn "+t.Agent+" "+t.Model+" "+t.Provider)
	return ctx, func(e ports.TurnEnd) {
		j.end("turn " + strings.Join([]string{itoa(e.Steps), itoa(e.ToolCalls), e.ErrorType}, " "))
	}
}

func (j *journal) StartModelStep(ctx context.Context, s ports.ObservedModelStep) (context.Context, func(ports.ModelStepEnd)) {
	ctx = j.add(ctx, "chat "+s.Model+" "+s.ServerAddress)
	return ctx, func(e ports.ModelStepEnd) {
		in, out := -1, -1
		if e.Usage != nil {
			in, out = e.Usage.InputTokens, e.Usage.OutputTokens
		}
		j.end("chat " + e.FinishReason + " " + itoa(in) + " " + itoa(out) + " " + e.ErrorType)
	}
}

func (j *journal) StartToolCall(ctx context.Context, tool string) (context.Context, func(ports.ToolCallEnd)) {
	ctx = j.add(ctx, "tool "+tool)
	return ctx, func(e ports.ToolCallEnd) { j.end("tool " + e.ErrorType) }
}

func itoa(n int) string {
	if n < 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

// TestObserverSeesTurnStepsAndCalls: the agent reports its turn, each
// model step and each tool call to its Observer (docs/SPEC.md §13), nested
// through their contexts, with outcomes and never the prompt or arguments.
func TestObserverSeesTurnStepsAndCalls(t *testing.T) {
	j := &journal{}
	r := newRig(t, rigOptions{
		files:  map[string]string{"a.txt": "alpha"},
		agent:  agent.Options{Observer: j},
		script: []chatscript.Reply{calls("read_file", `{"path":"a.txt"}`, "nope", `{}`, "read_file", `not json`), text("done")},
	})
	if got := r.turn(t, "secret prompt", newCaller()); got != "done" {
		t.Fatalf("turn = %q", got)
	}
	want := []string{
		"/turn agentmcp scripted-model openai",
		"/turn agentmcp scripted-model openai/chat scripted-model 127.0.0.1",
		"end chat tool_calls - - ",
		"/turn agentmcp scripted-model openai/tool read_file",
		"end tool ",
		"/turn agentmcp scripted-model openai/tool nope",
		"end tool unknown_tool",
		"/turn agentmcp scripted-model openai/tool read_file",
		"end tool invalid_arguments",
		"/turn agentmcp scripted-model openai/chat scripted-model 127.0.0.1",
		"end chat stop - - ",
		"end turn 2 3 ",
	}
	if strings.Join(j.lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("observed:\n%s\nwant:\n%s", strings.Join(j.lines, "\n"), strings.Join(want, "\n"))
	}
}
