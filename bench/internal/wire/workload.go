package wire

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Workload is the request a row sends again and again and how each answer
// is checked. Echo is every row's workload but the workspace session's two
// (docs: bench/README.md): ReadFile, a plain tools/call of the workspace's
// read_file, and TasksGet, a 2026-07-28 tasks/get of a completed task, to be
// compared in one run on one carrier.
type Workload struct {
	// Name is the workload in row ids: "echo", "read_file", "tasks-get".
	Name string
	// method and target are the request's method and its Mcp-Name header
	// (the tool's name, or the task's id).
	method, target string
	// meta is the _meta member of a 2026-07-28 request, with its comma.
	meta string
	// params are the params' members after _meta (no braces).
	params string
	// text checks an answer to request id and returns the text later
	// answers must repeat.
	text func(msg []byte, id int64) (string, error)
	// expect checks the first answer's text and returns what every later
	// one must equal.
	expect func(text string) (string, error)
}

// The workspace rows' file (the server writes it under its root) and the
// _meta of their requests: the same for both workloads, the tasks extension
// declared (read_file is not a task tool, so its call is plain).
const (
	// FileName is the file read_file reads.
	FileName = "notes.txt"
	// FileText is its content, and the text of every checked workspace
	// answer.
	FileText = "hello world\n"

	taskMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"agentmcp-bench","version":"0"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}},`
)

// Echo is tools/call echo {"text":"hello world"}: the bytes of AppendCall.
var Echo = Workload{Name: "echo", method: "tools/call", target: "echo", meta: modernMeta,
	params: `"name":"echo","arguments":{"text":"hello world"}`, text: CallText, expect: Expect}

// ReadFile is tools/call read_file {"path":"notes.txt"} on the workspace
// session. Its answer is the workspace's envelope, whose duration and
// executionId change from call to call: the check decodes it (success,
// toolName, result.content) and compares the content.
var ReadFile = Workload{Name: "read_file", method: "tools/call", target: "read_file", meta: taskMeta,
	params: `"name":"read_file","arguments":{"path":"` + FileName + `"}`, text: readFileText, expect: expectFile}

// TasksGet is tasks/get of the task id, a completed agent_submit of the
// bench's workspace session, whose turn answers the file's content
// (2026-07-28 only: the 2025-11-25 tasks/get carries no result).
func TasksGet(taskID string) Workload {
	return Workload{Name: "tasks-get", method: "tasks/get", target: taskID, meta: taskMeta,
		params: `"taskId":` + strconv.Quote(taskID), text: completedTaskText, expect: expectFile}
}

// TaskCreate is the request that creates the task TasksGet reads:
// tools/call agent_submit from a request declaring the tasks extension.
var TaskCreate = Workload{Name: "task-create", method: "tools/call", target: "agent_submit", meta: taskMeta,
	params: `"name":"agent_submit","arguments":{"prompt":"read ` + FileName + `"}`}

// Workloads names the workloads a row can be given (TasksGet's id comes
// later).
var Workloads = []string{Echo.Name, ReadFile.Name, "tasks-get"}

// AppendRequest appends one request with the given id (no newline).
func (w Workload) AppendRequest(dst []byte, id int64, modern bool) []byte {
	dst = append(dst, callPrefix...)
	dst = strconv.AppendInt(dst, id, 10)
	dst = append(append(append(dst, `,"method":"`...), w.method...), `","params":{`...)
	if modern {
		dst = append(dst, w.meta...)
	}
	return append(append(dst, w.params...), "}}"...)
}

// HTTPHeaders returns the MCP request headers of the workload on a wire,
// in a fixed order, without Host, Content-Length or Authorization.
func (w Workload) HTTPHeaders(modern bool) [][2]string {
	h := [][2]string{
		{"Content-Type", "application/json"},
		{"Accept", "application/json, text/event-stream"},
	}
	if modern {
		return append(h, [2]string{"MCP-Protocol-Version", ProtoModern},
			[2]string{"Mcp-Method", w.method}, [2]string{"Mcp-Name", w.target})
	}
	return append(h, [2]string{"MCP-Protocol-Version", ProtoLegacy})
}

// Text checks an answer to request id and returns its text.
func (w Workload) Text(msg []byte, id int64) (string, error) { return w.text(msg, id) }

// Expect checks the first answer's text and returns the text every later
// answer must carry.
func (w Workload) Expect(text string) (string, error) { return w.expect(text) }

func expectFile(text string) (string, error) {
	if text != FileText {
		return "", fmt.Errorf("text %q, want the file's %q", text, FileText)
	}
	return text, nil
}

// readFileText checks a read_file answer (CallText's rules) and returns
// result.content of its envelope, after checking success and toolName.
func readFileText(msg []byte, id int64) (string, error) {
	text, err := CallText(msg, id)
	if err != nil {
		return "", err
	}
	var env struct {
		Success  bool   `json:"success"`
		ToolName string `json:"toolName"`
		Result   struct {
			Content *string `json:"content"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(text), &env); err != nil || !env.Success || env.ToolName != "read_file" || env.Result.Content == nil {
		return "", fmt.Errorf("not a read_file success envelope: %.200s", text)
	}
	return *env.Result.Content, nil
}

// completedTaskText checks a 2026-07-28 tasks/get answer to request id: a
// complete result whose task is completed, its CallToolResult one text
// block without isError; it returns that text.
func completedTaskText(msg []byte, id int64) (string, error) {
	var r struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   json.RawMessage `json:"error"`
		Result  *struct {
			ResultType string `json:"resultType"`
			Status     string `json:"status"`
			Result     *struct {
				Content []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
				IsError bool `json:"isError"`
			} `json:"result"`
		} `json:"result"`
	}
	if err := json.Unmarshal(msg, &r); err != nil {
		return "", fmt.Errorf("undecodable answer: %v: %.200s", err, msg)
	}
	switch {
	case r.JSONRPC != "2.0" || string(r.ID) != strconv.FormatInt(id, 10):
		return "", fmt.Errorf("not the answer to request %d: %.200s", id, msg)
	case r.Error != nil:
		return "", fmt.Errorf("JSON-RPC error: %s", r.Error)
	case r.Result == nil || r.Result.ResultType != "complete" || r.Result.Status != "completed" || r.Result.Result == nil:
		return "", fmt.Errorf("not a completed task: %.200s", msg)
	case r.Result.Result.IsError || len(r.Result.Result.Content) != 1 || r.Result.Result.Content[0].Type != "text":
		return "", fmt.Errorf("the task's result is not one text block without isError: %.200s", msg)
	}
	return r.Result.Result.Content[0].Text, nil
}

// TaskID returns the id of a CreateTaskResult (2026-07-28) answering
// request id.
func TaskID(msg []byte, id int64) (string, error) {
	var r struct {
		ID     json.RawMessage `json:"id"`
		Result struct {
			ResultType string `json:"resultType"`
			TaskID     string `json:"taskId"`
		} `json:"result"`
	}
	if err := json.Unmarshal(msg, &r); err != nil || string(r.ID) != strconv.FormatInt(id, 10) ||
		r.Result.ResultType != "task" || r.Result.TaskID == "" {
		return "", fmt.Errorf("not a CreateTaskResult answering request %d: %.200s", id, msg)
	}
	return r.Result.TaskID, nil
}
