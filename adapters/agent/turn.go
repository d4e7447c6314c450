package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/ports"
)

// turn is one submission's loop.
type turn struct {
	s      *Session
	ctx    context.Context
	caller ports.Caller
	r      *running // the turn as its conversation's running one
	report *reporter
	msgs   []ports.Message // this turn's messages: the prompt first
	steps  int
	calls  int
	// dropped counts the calls beyond MaxToolCallsPerStep.
	dropped int
	// usage sums the steps' token counts, when the endpoint reports them.
	usage *ports.TokenUsage
	// toolCalls are the calls run, in order, for the turn's report.
	toolCalls []ports.ToolCallReport
	// changes are the files its tools changed.
	changes changes
	// stop says why the turn stops before the model finishes: set once,
	// by a prompt that went unanswered for ApprovalTimeout or by a new
	// submission superseding it; the turn stops after the call at hand.
	stop atomic.Pointer[stopNote]
}

// stopNote is why a turn stopped early, and the tool whose prompt it was.
type stopNote struct {
	reason ports.StopReason
	tool   string
}

// stopAt notes that the turn stops after tool's call, for reason, unless
// it already stops for another.
func (t *turn) stopAt(reason ports.StopReason, tool string) {
	t.stop.CompareAndSwap(nil, &stopNote{reason, tool})
}

// stopAnswer is the response of a turn that stopped early.
func (t *turn) stopAnswer(n *stopNote) string {
	switch n.reason {
	case ports.StopSuperseded:
		return fmt.Sprintf("[agentmcp] This turn stopped: a new prompt came for this conversation while %s awaited approval, so that call was denied. The new prompt continues the conversation from here.", n.tool)
	default:
		return fmt.Sprintf("[agentmcp] This turn stopped: a prompt of %s went unanswered for %v, so it was denied. Submit another prompt to continue.", n.tool, t.s.opts.ApprovalTimeout)
	}
}

// run loops model steps and tool calls until the model answers without
// tool calls, and returns that answer.
func (t *turn) run(history []ports.Message) (string, error) {
	for {
		if err := t.ctx.Err(); err != nil {
			return "", err
		}
		if t.steps == t.s.opts.MaxSteps {
			answer := fmt.Sprintf("[agentmcp] This turn stopped after %d model steps without a final answer (the step limit). Submit another prompt to continue.", t.steps)
			t.stopAt(ports.StopMaxSteps, "")
			t.msgs = append(t.msgs, ports.Message{Role: ports.RoleAssistant, Content: answer})
			return answer, nil
		}
		t.steps++
		tools, err := t.s.inner.RuntimeTools(t.ctx)
		if err != nil {
			return "", fmt.Errorf("the session's tools are unavailable: %w", err)
		}
		system := t.s.opts.SystemPrompt
		if system == "" {
			system = DefaultSystemPrompt(t.s.opts.Workspace, tools)
		}
		msgs := make([]ports.Message, 0, 1+len(history)+len(t.msgs))
		msgs = append(msgs, ports.Message{Role: ports.RoleSystem, Content: system})
		msgs = append(append(msgs, history...), t.msgs...)

		reply, err := t.step(msgs, tools)
		if errors.Is(err, ports.ErrNoChoices) && t.ctx.Err() == nil {
			t.msgs = append(t.msgs, ports.Message{Role: ports.RoleUser,
				Content: "[agentmcp] The model endpoint returned no answer (no choices). Continue with the task."})
			continue
		}
		if err != nil {
			return "", err
		}
		t.count(reply.Usage)
		t.r.live.usage(reply.Usage)
		// Only the calls that run are kept: the rest (a hostile endpoint
		// can send tens of thousands in one answer) become one note, so
		// what a step keeps does not grow with what the model wrote.
		calls := reply.ToolCalls
		extra := max(len(calls)-t.s.opts.MaxToolCallsPerStep, 0)
		calls = uniqueCallIDs(calls[:len(calls)-extra], t.steps)
		reply.ToolCalls = nil // the dropped calls are garbage from here on
		t.msgs = append(t.msgs, ports.Message{Role: ports.RoleAssistant, Content: reply.Content, ToolCalls: calls})
		if len(calls) == 0 {
			if reply.Content == "" {
				// Chat Completions needs text or tool calls on an assistant
				// message; the response itself stays "".
				t.msgs[len(t.msgs)-1].Content = "(no answer)"
			}
			return reply.Content, nil
		}
		for i, call := range calls {
			result := t.runTool(call, tools)
			if err := t.ctx.Err(); err != nil {
				return "", err
			}
			t.msgs = append(t.msgs, ports.Message{Role: ports.RoleTool, ToolCallID: call.ID, Content: capText(result, t.s.opts.MaxToolResultBytes)})
			if t.r.superseded.Err() != nil {
				t.stopAt(ports.StopSuperseded, call.Name)
			}
			if stop := t.stop.Load(); stop != nil {
				// The rest of the step is not run: each call still gets
				// its result, so the conversation stays valid.
				why := "a prompt of " + stop.tool + " went unanswered"
				if stop.reason == ports.StopSuperseded {
					why = "a new prompt came while " + stop.tool + " awaited approval"
				}
				for _, rest := range calls[i+1:] {
					t.msgs = append(t.msgs, ports.Message{Role: ports.RoleTool, ToolCallID: rest.ID,
						Content: failure(rest.Name, "not run: the turn stopped before this call ("+why+")")})
				}
				break
			}
		}
		if extra > 0 {
			t.dropped += extra
			t.msgs = append(t.msgs, ports.Message{Role: ports.RoleUser, Content: fmt.Sprintf(
				"[agentmcp] %d more tool calls of that step were not run: at most %d run per model step. Call again, in the next step, those you still need.",
				extra, t.s.opts.MaxToolCallsPerStep)})
		}
		if stop := t.stop.Load(); stop != nil {
			answer := t.stopAnswer(stop)
			t.msgs = append(t.msgs, ports.Message{Role: ports.RoleAssistant, Content: answer})
			return answer, nil
		}
		t.msgs = shrinkTurn(t.msgs, t.s.opts.TurnBytes)
	}
}

// count adds a step's token usage to the turn's.
func (t *turn) count(u *ports.TokenUsage) {
	if u == nil {
		return
	}
	if t.usage == nil {
		t.usage = &ports.TokenUsage{}
	}
	t.usage.InputTokens += u.InputTokens
	t.usage.OutputTokens += u.OutputTokens
}

// step runs one model request with progress: a report when it starts and
// a heartbeat while it runs.
func (t *turn) step(msgs []ports.Message, tools []domain.Tool) (ports.AssistantMessage, error) {
	t.report.send(fmt.Sprintf("model step %d", t.steps))
	t.r.live.step(t.steps)
	var chars atomic.Int64
	var live liveText
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(t.s.opts.Heartbeat)
		defer tick.Stop()
		text := time.NewTicker(t.s.opts.TextInterval)
		defer text.Stop()
		started := time.Now()
		for {
			select {
			case <-tick.C:
				t.report.send(fmt.Sprintf("model step %d: working for %ds, %d characters so far", t.steps,
					int(time.Since(started).Seconds()), chars.Load()))
			case <-text.C:
				if tail, ok := live.take(); ok && strings.TrimSpace(tail) != "" {
					t.report.send(progressText(fmt.Sprintf("model step %d: ", t.steps), tail))
				}
			case <-stop:
				return
			case <-t.ctx.Done():
				return
			}
		}
	}()
	start := time.Now()
	sctx, endStep := t.s.opts.Observer.StartModelStep(t.ctx, t.s.observedStep())
	reply, err := t.s.model.Step(sctx, ports.ModelRequest{
		Messages: msgs,
		Tools:    tools,
		OnText: func(delta string) {
			chars.Add(int64(utf8.RuneCountInString(delta)))
			t.r.live.text(delta) // first: text in progress is in the view's state too
			live.add(delta)
		},
	})
	close(stop)
	<-done
	endStep(stepEnd(t.ctx, reply, err))
	t.s.log.Debug("model step", "step", t.steps, "messages", len(msgs), "toolCalls", len(reply.ToolCalls),
		"finishReason", reply.FinishReason, "durationMs", time.Since(start).Milliseconds(), "ok", err == nil)
	return reply, err
}

// runTool runs one call through the inner session with the turn's Caller
// (its progress relabelled onto the turn's counter) and returns the text
// the model reads: the execution envelope, or a failed one saying what was
// wrong with the call.
func (t *turn) runTool(call ports.ToolCall, tools []domain.Tool) string {
	t.calls++
	ctx, endCall := t.s.opts.Observer.StartToolCall(t.ctx, call.Name)
	endLive := t.r.live.call(call.Name)
	result, errorType := t.callTool(ctx, call, tools)
	endLive(errorType == "")
	endCall(ports.ToolCallEnd{ErrorType: errorType})
	t.toolCalls = append(t.toolCalls, ports.ToolCallReport{Name: reportedName(call.Name), OK: errorType == ""})
	return result
}

// callTool is runTool's work on ctx: the text the model reads and the
// call's error.type ("" when it succeeded).
func (t *turn) callTool(ctx context.Context, call ports.ToolCall, tools []domain.Tool) (string, string) {
	known := false
	for _, tool := range tools {
		known = known || tool.Name == call.Name
	}
	if !known {
		return failure(call.Name, domain.UnknownToolMessage(call.Name)+" (the tools are: "+toolNames(tools)+")"), "unknown_tool"
	}
	args := strings.TrimSpace(call.Arguments)
	if args == "" {
		args = "{}"
	}
	if !json.Valid([]byte(args)) || args[0] != '{' {
		return failure(call.Name, "invalid arguments: not a JSON object; write the arguments as one JSON object that follows the tool's input schema"), "invalid_arguments"
	}
	t.report.send("calling " + call.Name)
	env, err := t.s.inner.InvokeTool(ctx, call.Name, json.RawMessage(args), toolCaller{t.caller, t, call.Name})
	if err != nil {
		return failure(call.Name, domain.ClientMessage(err)), "tool_error"
	}
	text, err := domain.MarshalJSON(env)
	if err != nil {
		return failure(call.Name, "the tool's result cannot be encoded"), "tool_error"
	}
	if !env.Success {
		return string(text), "tool_error"
	}
	return string(text), ""
}

// maxReportedName bounds a tool name in a turn's report: MCP's longest
// tool name; an unknown tool's name is the model's and may be anything.
const maxReportedName = 128

// reportedName is name as a turn's report carries it: cut to
// maxReportedName bytes on a UTF-8 boundary.
func reportedName(name string) string {
	if len(name) <= maxReportedName {
		return name
	}
	cut := maxReportedName
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut]
}

// failure is a failed envelope's text, as the model reads it.
func failure(tool, msg string) string {
	b, _ := domain.MarshalJSON(domain.Envelope{Success: false, ToolName: tool, Error: msg})
	return string(b)
}

func toolNames(tools []domain.Tool) string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// uniqueCallIDs returns calls with every ID present and distinct: a model
// server that omits or repeats ids would otherwise make the tool messages
// ambiguous and the next request invalid.
func uniqueCallIDs(calls []ports.ToolCall, step int) []ports.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]ports.ToolCall, len(calls))
	seen := map[string]bool{}
	for i, c := range calls {
		if c.ID == "" || seen[c.ID] {
			c.ID = fmt.Sprintf("agentmcp_call_%d_%d", step, i+1)
		}
		seen[c.ID] = true
		out[i] = c
	}
	return out
}

// capText cuts s to at most limit bytes on a UTF-8 boundary, with a note.
func capText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	note := fmt.Sprintf("\n[agentmcp: result cut to %d of %d bytes]", limit, len(s))
	cut := max(limit-len(note), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + note
}

// reporter sends a turn's progress on one strictly increasing counter
// (MCP: progress must increase; the engine drops anything else). The lock
// orders reports from the loop, the heartbeat and the tools; it is the
