package interop

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestMCPGoTasks drives experimental tasks on 2025-11-25 (docs/SPEC.md §14)
// with mark3labs/mcp-go's client over stdio ("serve stdio --ask-client
// --model scripted --model-url <chatEndpoint>"):
//
//  1. agent_submit as a task (params.task with a ttl, and a
//     progressToken): the CreateTaskResult holds the client's ttl; the
//     model's write_file approval reaches the client's elicitation handler
//     as elicitation/create tagged with the related task, the task is
//     input_required meanwhile; tasks/result returns the final answer with
//     the related-task _meta; WaitForTask says completed; the turn's
//     progress came under the creating
//     request's token, and notifications/tasks/status said input_required,
//     working and completed;
//  2. a task cancelled with tasks/cancel while the model streams: the
//     endpoint sees its request cancelled, the Task is cancelled, a second
//     cancel is -32602 and tasks/result is the call's error;
//  3. the next task's turn works and its conversation holds nothing of the
//     cancelled one; ListTasks lists the three, oldest first.
//
// mcp-go's CallTool parses a CallToolResult only, so the task-augmented
// call goes through the client's transport, as a caller of its task API
// must; every other request is the client's own method.
func TestMCPGoTasks(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	ws := newWorkspace(t)
	stderr := serverStderr(t)
	ep := newChatEndpoint(t)

	approvals := &taskApprovals{}
	tr := transport.NewStdioWithOptions(binPath, nil, nil,
		transport.WithCommandFunc(func(ctx context.Context, _ string, _ []string, _ []string) (*exec.Cmd, error) {
			return serverCommand(ctx, ws, "--ask-client", "--model", "scripted", "--model-url", ep.url), nil
		}),
		transport.WithCommandStderrWriter(stderr))
	if err := tr.Start(ctx); err != nil {
		t.Fatalf("starting serve stdio: %v", err)
	}
	c := client.NewClient(tr, client.WithElicitationHandler(approvals), client.WithProtocolVersion("2025-11-25"))
	defer c.Close()
	notes := newTaskNotes()
	c.OnNotification(notes.add)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: "2025-11-25",
		ClientInfo:      mcp.Implementation{Name: "agentmcp-interop-mcp-go", Version: "v1.2.1"},
	}})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if tasks := init.Capabilities.Tasks; init.ProtocolVersion != "2025-11-25" || tasks == nil || tasks.List == nil || tasks.Cancel == nil ||
		tasks.Requests == nil || tasks.Requests.Tools == nil || tasks.Requests.Tools.Call == nil {
		t.Fatalf("initialize = %s %+v, want 2025-11-25 with tasks list, cancel and tools/call", init.ProtocolVersion, init.Capabilities.Tasks)
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(tools.Tools, func(x mcp.Tool) bool { return x.Name == "agent_submit" }); i < 0 ||
		tools.Tools[i].Execution == nil || tools.Tools[i].Execution.TaskSupport != mcp.TaskSupportOptional {
		t.Fatalf("tools/list has no agent_submit with execution.taskSupport optional: %+v", tools.Tools)
	}

	// 1. A turn run as a task, its write approved through elicitation.
	task := submitAsTask(ctx, t, c, "task-1", "Write hello.txt with a greeting.", "turn-1", 60000)
	if task.TTL == nil || *task.TTL != 60000 || task.PollInterval == nil {
		t.Errorf("CreateTaskResult = %+v, want the client's ttl (60000) and a pollInterval", task)
	}
	res, err := c.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: task.TaskId}})
	if err != nil {
		t.Fatalf("tasks/result: %v", err)
	}
	if len(res.Content) != 1 || res.IsError {
		t.Fatalf("tasks/result = %+v, want one text block", res)
	}
	if text, _ := mcp.AsTextContent(res.Content[0]); text == nil || text.Text != "I wrote hello.txt." {
		t.Errorf("tasks/result text = %+v, want the model's final answer", res.Content[0])
	}
	if related := relatedTaskID(res.Meta); related != task.TaskId {
		t.Errorf("tasks/result _meta names the task %q, want %q", related, task.TaskId)
	}
	if seen := approvals.seen(); len(seen) != 1 || seen[0].task != task.TaskId || !strings.Contains(seen[0].message, `"write_file"`) {
		t.Errorf("the elicitation handler saw %+v, want write_file's approval tagged with the task", seen)
	}
	if got, err := os.ReadFile(filepath.Join(ws.root, "hello.txt")); err != nil || string(got) != wroteContent {
		t.Errorf("hello.txt = %q, %v; want the agent's approved write", got, err)
	}
	done, err := c.WaitForTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: task.TaskId}}, time.Second)
	if err != nil || done.Status != mcp.TaskStatusCompleted {
		t.Errorf("WaitForTask = %+v, %v; want completed", done, err)
	}
	notes.waitStatus(ctx, t, task.TaskId, mcp.TaskStatusCompleted)
	if got, want := notes.statuses(task.TaskId), []mcp.TaskStatus{mcp.TaskStatusInputRequired, mcp.TaskStatusWorking, mcp.TaskStatusCompleted}; !slices.Equal(got, want) {
		t.Errorf("notifications/tasks/status said %v, want %v", got, want)
	}
	if msgs := notes.progress("turn-1", task.TaskId); !slices.Contains(msgs, "model step 1") || !slices.Contains(msgs, "calling write_file") {
		t.Errorf("progress under turn-1 tagged with the task: %q, want the model step and the tool call", msgs)
	}

	// 2. A task cancelled while the model streams.
	slow := submitAsTask(ctx, t, c, "task-2", "slow", "", 0)
	waitFor(t, ep.streaming, "the model's slow answer to start")
	cancelled, err := c.CancelTask(ctx, mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: slow.TaskId}})
	if err != nil || cancelled.Status != mcp.TaskStatusCancelled {
		t.Fatalf("tasks/cancel = %+v, %v; want cancelled", cancelled, err)
	}
	waitFor(t, ep.cancelled, "the model request to be cancelled")
	if _, err := c.CancelTask(ctx, mcp.CancelTaskRequest{Params: mcp.CancelTaskParams{TaskId: slow.TaskId}}); !errors.Is(err, mcp.ErrInvalidParams) {
		t.Errorf("a second tasks/cancel: %v, want invalid params (-32602)", err)
	}
	if _, err := c.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: slow.TaskId}}); !errors.Is(err, mcp.ErrInternalError) {
		t.Errorf("tasks/result of a cancelled task: %v, want the call's error (-32603)", err)
	}
	if g, err := c.GetTask(ctx, mcp.GetTaskRequest{Params: mcp.GetTaskParams{TaskId: slow.TaskId}}); err != nil || g.Status != mcp.TaskStatusCancelled {
		t.Errorf("tasks/get = %+v, %v; want cancelled", g, err)
	}

	// 3. The next turn, a task too, works without the cancelled one.
	after := submitAsTask(ctx, t, c, "task-3", "after", "", 0)
	res, err = c.TaskResult(ctx, mcp.TaskResultRequest{Params: mcp.TaskResultParams{TaskId: after.TaskId}})
	if err != nil || len(res.Content) != 1 {
		t.Fatalf("tasks/result after a cancelled task = %+v, %v", res, err)
	}
	if text, _ := mcp.AsTextContent(res.Content[0]); text == nil || text.Text != "still here: after" {
		t.Errorf("tasks/result after a cancelled task = %+v", res.Content[0])
	}
	checkAgentRequests(t, ep)

	list, err := c.ListTasks(ctx, mcp.ListTasksRequest{})
	if err != nil {
		t.Fatalf("tasks/list: %v", err)
	}
	var listed []string
	for _, x := range list.Tasks {
		listed = append(listed, x.TaskId+" "+string(x.Status))
	}
	if want := []string{task.TaskId + " completed", slow.TaskId + " cancelled", after.TaskId + " completed"}; !slices.Equal(listed, want) {
		t.Errorf("tasks/list = %q, want %q", listed, want)
	}
}

// submitAsTask sends agent_submit with prompt as a 2025-11-25 task (ttl in
// ms when positive; a progressToken when token is set) and returns the
// CreateTaskResult's task.
func submitAsTask(ctx context.Context, t *testing.T, c *client.Client, id, prompt, token string, ttl int64) mcp.Task {
	t.Helper()
	params := mcp.CallToolParams{Name: "agent_submit", Arguments: map[string]any{"prompt": prompt}, Task: &mcp.TaskParams{}}
	if ttl > 0 {
		params.Task.TTL = &ttl
	}
	if token != "" {
		params.Meta = &mcp.Meta{ProgressToken: token}
	}
	resp, err := c.GetTransport().SendRequest(ctx, transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(id), Method: string(mcp.MethodToolsCall), Params: params,
	})
	if err != nil {
		t.Fatalf("task-augmented agent_submit: %v", err)
	}
	if resp.Error != nil {
		t.Fatalf("task-augmented agent_submit: %+v", resp.Error)
	}
	var created mcp.CreateTaskResult
	if err := json.Unmarshal(resp.Result, &created); err != nil || created.Task.TaskId == "" || created.Task.Status != mcp.TaskStatusWorking {
		t.Fatalf("CreateTaskResult %s: %v", resp.Result, err)
	}
	return created.Task
}

// relatedTaskID returns the taskId of _meta's io.modelcontextprotocol/related-task.
func relatedTaskID(meta *mcp.Meta) string {
	if meta == nil {
		return ""
	}
	related, _ := meta.AdditionalFields["io.modelcontextprotocol/related-task"].(map[string]any)
	id, _ := related["taskId"].(string)
	return id
}

// taskApprovals is the client's elicitation handler: it allows every
// prompt once and keeps what it saw.
type taskApprovals struct {
	mu    sync.Mutex
	asked []taskApproval
}

type taskApproval struct{ task, message string }

func (a *taskApprovals) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	a.mu.Lock()
	a.asked = append(a.asked, taskApproval{relatedTaskID(req.Params.Meta), req.Params.Message})
	a.mu.Unlock()
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"decision": "allow_once"},
	}}, nil
}

func (a *taskApprovals) seen() []taskApproval {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.asked)
}

// taskNotes keeps the notifications the client received.
type taskNotes struct {
	mu      sync.Mutex
	notes   []mcp.JSONRPCNotification
	changed chan struct{} // closed and replaced on every notification
}

func newTaskNotes() *taskNotes { return &taskNotes{changed: make(chan struct{})} }

func (n *taskNotes) add(note mcp.JSONRPCNotification) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.notes = append(n.notes, note)
	close(n.changed)
	n.changed = make(chan struct{})
}

// field reads one params member of a notification.
func field(note mcp.JSONRPCNotification, name string) any { return note.Params.AdditionalFields[name] }

// statuses returns the statuses notifications/tasks/status reported for id.
func (n *taskNotes) statuses(id string) []mcp.TaskStatus {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []mcp.TaskStatus
	for _, note := range n.notes {
		if note.Method == string(mcp.MethodNotificationTasksStatus) && field(note, "taskId") == id {
			s, _ := field(note, "status").(string)
			out = append(out, mcp.TaskStatus(s))
		}
	}
	return out
}

// waitStatus waits until notifications/tasks/status reported status for id.
func (n *taskNotes) waitStatus(ctx context.Context, t *testing.T, id string, status mcp.TaskStatus) {
	t.Helper()
	for {
		n.mu.Lock()
		changed := n.changed
		n.mu.Unlock()
		if slices.Contains(n.statuses(id), status) {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("no notifications/tasks/status %s for the task", status)
		}
	}
}

// progress returns the messages of the progress notifications under token
// that name the task in their _meta.
func (n *taskNotes) progress(token, id string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, note := range n.notes {
		if note.Method != "notifications/progress" || field(note, "progressToken") != token {
			continue
		}
		if meta := note.Params.Meta; meta == nil || relatedTaskID(&mcp.Meta{AdditionalFields: meta}) != id {
			continue
		}
		msg, _ := field(note, "message").(string)
		out = append(out, msg)
	}
	return out
}
