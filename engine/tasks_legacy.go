package engine

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/jsonrpc"
)

// Experimental tasks on 2025-11-25 (docs/SPEC.md §14; SEP-1686,
// https://modelcontextprotocol.io/specification/2025-11-25/basic/utilities/tasks).
// The same store and the same tasks as the extension's, another wire: the
// client asks per call (params.task), the Task is nested under "task" in
// CreateTaskResult and flat in tasks/get, tasks/result blocks until the
// task ends and returns what the call would have, tasks/cancel of an ended
// task is -32602, and a tool error is status failed. Only tools/call is
// task-augmented; tasks/list is not offered (ids are bound to their
// creator, and listing would need an authenticated principal on every
// carrier).

// tasksVersion is the one legacy revision that has tasks.
const tasksVersion = "2025-11-25"

// metaRelatedTask tags what belongs to a task (tasks/result's result, an
// elicitation/create a task raises).
const metaRelatedTask = "io.modelcontextprotocol/related-task"

// legacyTasksCaps is the 2025-11-25 server capability: task-augmented
// tools/call and tasks/cancel.
const legacyTasksCaps = `,"tasks":{"cancel":{},"requests":{"tools":{"call":{}}}}`

// legacyTasks reports whether a legacy request's revision has tasks.
func legacyTasks(in *inbound) bool { return !in.modern && in.version == tasksVersion }

// taskAugmented reports whether in is a 2025-11-25 request carrying
// params.task (an object): a tools/call that may become a task.
func taskAugmented(in *inbound) bool {
	if !legacyTasks(in) {
		return false
	}
	hint, ok := in.param("task")
	return ok && jsonrpc.IsObject(hint)
}

// isLegacyTaskMethod reports whether method is one 2025-11-25 tasks add
// (tasks/list is not offered).
func isLegacyTaskMethod(method string) bool {
	switch method {
	case "tasks/get", "tasks/result", "tasks/cancel":
		return true
	}
	return false
}

// relatedTaskKey marks a task's context with its id, so an
// elicitation/create it raises on a stream carries the related-task _meta.
type relatedTaskKey struct{}

// relatedTask returns the id of the task ctx belongs to.
func relatedTask(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(relatedTaskKey{}).(string)
	return id, ok
}

// relatedTaskMeta is the _meta that tags a message with task id.
func relatedTaskMeta(id string) json.RawMessage {
	b := jsonrpc.AppendString([]byte(`{"`+metaRelatedTask+`":{"taskId":`), id)
	return append(b, "}}"...)
}

// callAsLegacyTask is the 2025-11-25 tools/call hook: a call carrying
// params.task (an object) of a tool that supports tasks becomes a task; its
// prompts reach the client through elicit (a stream client that can answer
// forms), else settle closed. Anything else is served as before (a
// params.task on a tool that forbids tasks is ignored).
func (e *Engine) callAsLegacyTask(ctx context.Context, p *peer, in *inbound, name string, args []byte, elicit elicitFunc) (reply, bool) {
	hint, ok := in.param("task")
	if !ok || !jsonrpc.IsObject(hint) {
		return reply{}, false
	}
	cat, err := e.catalog(ctx)
	if err != nil || cat.TaskSupport(name) == domain.TaskForbidden || cat.TaskSupport(name) == "" {
		return reply{}, false
	}
	return e.startTask(p, in, name, args, elicit, func(t *task) reply {
		b := append(jsonrpc.AppendResponseHead(make([]byte, 0, 320), in.id), `,"result":{"task":{`...)
		return answered(append(e.appendLegacyTask(b, t), "}}}"...))
	}), true
}

// appendLegacyTask appends a 2025-11-25 Task's members (no braces): ttl and
// pollInterval in ms, and a completed call whose result is a tool error
// reported failed (2025-11-25's reading).
func (e *Engine) appendLegacyTask(b []byte, t *task) []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	status := t.status
	if status == taskCompleted && t.outcome.isError() {
		status = taskFailed
	}
	b = jsonrpc.AppendString(append(b, `"taskId":`...), t.id)
	b = jsonrpc.AppendString(append(b, `,"status":`...), status)
	if t.message != "" {
		b = jsonrpc.AppendString(append(b, `,"statusMessage":`...), t.message)
	}
	b = jsonrpc.AppendString(append(b, `,"createdAt":`...), t.created.UTC().Format(time.RFC3339Nano))
	b = jsonrpc.AppendString(append(b, `,"lastUpdatedAt":`...), t.updated.UTC().Format(time.RFC3339Nano))
	b = strconv.AppendInt(append(b, `,"ttl":`...), t.store.ttl.Milliseconds(), 10)
	return strconv.AppendInt(append(b, `,"pollInterval":`...), t.store.poll.Milliseconds(), 10)
}

// isError reports whether the outcome is a CallToolResult with isError
// true.
func (o toolOutcome) isError() bool {
	if o.env != nil {
		return !o.env.Success
	}
	return o.rerr == nil && o.result.IsError != nil && *o.result.IsError
}

var errTaskEnded = jsonrpc.NewError(CodeInvalidParams, "Cannot cancel task: it has already ended")

// serveLegacyTask answers tasks/get, tasks/result and tasks/cancel on
// 2025-11-25. tasks/result waits for the task to end, or for ctx (the
// request ending: nothing is answered, the task goes on).
func (e *Engine) serveLegacyTask(ctx context.Context, p *peer, in *inbound) reply {
	t, terr := e.taskOf(p, in)
	if terr != nil {
		return answerErr(in.id, terr)
	}
	switch in.method {
	case "tasks/cancel":
		if !t.cancelRunning(errTaskCancelled) {
			return answerErr(in.id, errTaskEnded)
		}
	case "tasks/result":
		select {
		case <-t.settled:
		case <-ctx.Done():
			return reply{kind: Cancelled}
		}
		t.mu.Lock()
		status, o := t.status, t.outcome
		t.mu.Unlock()
		switch {
		case status == taskCancelled:
			return answerErr(in.id, jsonrpc.NewError(CodeInternalError, "the task was cancelled"))
		case o.rerr != nil:
			return answerErr(in.id, o.rerr)
		}
		b := append(jsonrpc.AppendResponseHead(make([]byte, 0, 256+2*o.size()), in.id), `,"result":{`...)
		b = append(o.appendTo(b), `,"_meta":`...)
		return answered(append(append(b, relatedTaskMeta(t.id)...), "}}"...))
	}
	b := append(jsonrpc.AppendResponseHead(make([]byte, 0, 320), in.id), `,"result":{`...)
	return answered(append(e.appendLegacyTask(b, t), "}}"...))
}

// executionTool is a 2025-11-25 Tool with its execution member: taskSupport
// when the tool supports tasks (absent means forbidden).
type executionTool struct {
	domain.Tool
	Execution *toolExecution `json:"execution,omitempty"`
}

type toolExecution struct {
	TaskSupport domain.TaskSupport `json:"taskSupport"`
}

// withExecution adds execution.taskSupport to the tools that support tasks.
func withExecution(tools []domain.Tool) []executionTool {
	out := make([]executionTool, len(tools))
	for i, t := range tools {
		out[i].Tool = t
		if t.TaskSupport != "" && t.TaskSupport != domain.TaskForbidden {
			out[i].Execution = &toolExecution{TaskSupport: t.TaskSupport}
		}
	}
	return out
}
