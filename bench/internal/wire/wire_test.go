package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCallTextRejects(t *testing.T) {
	good := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello world"}]}}`
	if text, err := CallText([]byte(good), 7); err != nil || text != EchoText {
		t.Fatalf("good answer: %q, %v", text, err)
	}
	for name, msg := range map[string]string{
		"wrong id":       `{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"hello world"}]}}`,
		"string id":      `{"jsonrpc":"2.0","id":"7","result":{"content":[{"type":"text","text":"hello world"}]}}`,
		"fraction id":    `{"jsonrpc":"2.0","id":7.0,"result":{"content":[{"type":"text","text":"hello world"}]}}`,
		"null id":        `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad"}}`,
		"error":          `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad"}}`,
		"isError":        `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello world"}],"isError":true}}`,
		"no content":     `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`,
		"two blocks":     `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}`,
		"not text":       `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"image","data":"","mimeType":"image/png"}]}}`,
		"no result":      `{"jsonrpc":"2.0","id":7}`,
		"wrong version":  `{"jsonrpc":"1.0","id":7,"result":{"content":[{"type":"text","text":"hello world"}]}}`,
		"not JSON":       `hello world`,
		"truncated JSON": good[:40],
	} {
		if _, err := CallText([]byte(msg), 7); err == nil {
			t.Errorf("%s: accepted %s", name, msg)
		}
	}
	if _, err := CallText([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`), 7); err != ErrNotResponse {
		t.Errorf("notification: %v, want ErrNotResponse", err)
	}
}

func TestCheckEnvelope(t *testing.T) {
	if err := CheckEnvelope(EnvelopeText); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{
		`hello world`,
		`{"success":false,"toolName":"echo","error":"it failed"}`,
		`{"success":true,"toolName":"other","result":{"text":"hello world"}}`,
		`{"success":true,"toolName":"echo","result":{"text":"hello"}}`,
		`{"toolName":"echo","result":{"text":"hello world"}}`,
	} {
		if err := CheckEnvelope(text); err == nil {
			t.Errorf("accepted %s", text)
		}
	}
}

func TestExpect(t *testing.T) {
	for _, ok := range []string{EchoText, EnvelopeText} {
		if got, err := Expect(ok); err != nil || got != ok {
			t.Errorf("Expect(%q) = %q, %v", ok, got, err)
		}
	}
	for _, bad := range []string{"", "hello", "hello world ", `{"success":true,"toolName":"echo","result":{"text":"bye"}}`} {
		if _, err := Expect(bad); err == nil {
			t.Errorf("Expect(%q) accepted", bad)
		}
	}
}

func TestSSEData(t *testing.T) {
	body := ": keep-alive\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n" +
		"event: message\r\nid: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\r\n\r\n"
	data, ok := SSEData([]byte(body))
	if !ok || !strings.HasPrefix(string(data), `{"jsonrpc":"2.0","id":3`) {
		t.Fatalf("SSEData = %q, %v", data, ok)
	}
	if _, ok := SSEData([]byte(": keep-alive\n\n")); ok {
		t.Fatal("found an answer in a comment")
	}
}

func TestHTTPAnswer(t *testing.T) {
	answer := `{"jsonrpc":"2.0","id":3,"result":{}}`
	if got, err := HTTPAnswer(200, "application/json", []byte(answer)); err != nil || string(got) != answer {
		t.Errorf("JSON body: %q, %v", got, err)
	}
	if got, err := HTTPAnswer(200, "text/event-stream", []byte("event: message\ndata: "+answer+"\n\n")); err != nil || string(got) != answer {
		t.Errorf("event stream: %q, %v", got, err)
	}
	if _, err := HTTPAnswer(200, "text/event-stream", []byte(": keep-alive\n\n")); err == nil {
		t.Error("an event stream without an answer was accepted")
	}
	if _, err := HTTPAnswer(503, "application/json", []byte(answer)); err == nil || !strings.Contains(err.Error(), "status 503") {
		t.Errorf("503: %v, want a status error", err)
	}
}

// The requests are valid JSON-RPC, and the bare answer to each is an answer
// the checker accepts with the request's id.
func TestRequestAndBareAnswer(t *testing.T) {
	for _, modern := range []bool{false, true} {
		req := AppendCall(nil, 123456789, modern)
		var v struct {
			ID     int64  `json:"id"`
			Method string `json:"method"`
			Params struct {
				Name      string            `json:"name"`
				Arguments map[string]string `json:"arguments"`
				Meta      map[string]any    `json:"_meta"`
			} `json:"params"`
		}
		if err := json.Unmarshal(req, &v); err != nil {
			t.Fatalf("%s: %v", req, err)
		}
		if v.ID != 123456789 || v.Method != "tools/call" || v.Params.Name != "echo" || v.Params.Arguments["text"] != EchoText || (v.Params.Meta != nil) != modern {
			t.Fatalf("request %s", req)
		}
		raw, ok := RawID(req)
		if !ok {
			t.Fatal("no raw id")
		}
		if text, err := CallText(AppendBareAnswer(nil, raw), 123456789); err != nil || text != EchoText {
			t.Fatalf("bare answer: %q, %v", text, err)
		}
	}
	if raw, ok := RawID([]byte(InitializeLine)); !ok || string(raw) != "1" {
		t.Fatalf("initialize raw id %q", raw)
	}
}

// TestWorkloads: Echo's request is AppendCall's; the workspace workloads'
// checks accept their good answer and reject the ways a server could get it
// wrong (a broken server must never look fast).
func TestWorkloads(t *testing.T) {
	for _, modern := range []bool{false, true} {
		if got, want := string(Echo.AppendRequest(nil, 9, modern)), `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{`; !strings.HasPrefix(got, want) || !json.Valid([]byte(got)) {
			t.Errorf("echo request %s", got)
		}
	}
	get := TasksGet("abc")
	if req := string(get.AppendRequest(nil, 5, true)); !json.Valid([]byte(req)) || !strings.Contains(req, `"method":"tasks/get","params":{"_meta":{`) ||
		!strings.Contains(req, `"io.modelcontextprotocol/tasks":{}`) || !strings.HasSuffix(req, `"taskId":"abc"}}`) {
		t.Errorf("tasks/get request %s", req)
	}
	if h := get.HTTPHeaders(true); h[len(h)-2] != [2]string{"Mcp-Method", "tasks/get"} || h[len(h)-1] != [2]string{"Mcp-Name", "abc"} {
		t.Errorf("tasks/get headers %q", h)
	}

	readOK := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{\"success\":true,\"toolName\":\"read_file\",\"result\":{\"path\":\"notes.txt\",\"content\":\"hello world\\n\"},\"duration\":0.1,\"executionId\":\"exec-3\"}"}]}}`
	if text, err := ReadFile.Text([]byte(readOK), 7); err != nil || text != FileText {
		t.Errorf("read_file answer: %q, %v", text, err)
	}
	for _, bad := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{\"success\":false,\"toolName\":\"read_file\",\"error\":\"no\"}"}]}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"{\"success\":true,\"toolName\":\"echo\",\"result\":{\"content\":\"hello world\\n\"}}"}]}}`,
		`{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"x"}]}}`,
	} {
		if _, err := ReadFile.Text([]byte(bad), 7); err == nil {
			t.Errorf("read_file accepted %s", bad)
		}
	}

	taskOK := `{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","taskId":"abc","status":"completed","result":{"content":[{"type":"text","text":"hello world\n"}]}}}`
	if text, err := get.Text([]byte(taskOK), 7); err != nil || text != FileText {
		t.Errorf("tasks/get answer: %q, %v", text, err)
	}
	for name, bad := range map[string]string{
		"working":   `{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","taskId":"abc","status":"working"}}`,
		"isError":   `{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","status":"completed","result":{"content":[{"type":"text","text":"x"}],"isError":true}}}`,
		"error":     `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Failed to retrieve task: Task not found"}}`,
		"wrong id":  strings.Replace(taskOK, `"id":7`, `"id":6`, 1),
		"not typed": strings.Replace(taskOK, `"resultType":"complete",`, ``, 1),
	} {
		if _, err := get.Text([]byte(bad), 7); err == nil {
			t.Errorf("tasks/get accepted %s: %s", name, bad)
		}
	}
	if id, err := TaskID([]byte(`{"jsonrpc":"2.0","id":1,"result":{"resultType":"task","taskId":"abc","status":"working"}}`), 1); err != nil || id != "abc" {
		t.Errorf("TaskID: %q, %v", id, err)
	}
	if _, err := TaskID([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`), 1); err == nil {
		t.Error("TaskID accepted a CallToolResult")
	}
}
