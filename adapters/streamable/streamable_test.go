package streamable_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/streamable"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/enginetest"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/waitfor"
	"github.com/agentmcp/agentmcp/ports"
)

const (
	jsonSSE = "application/json, text/event-stream"
	ping    = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	modern  = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
)

// serve starts a Handler for a fresh fake session on a real loopback socket.
// Unless opts says otherwise, an unread body is drained for a minute: a
// refusal that waited for the body would then miss raw's 5 s deadline.
func serve(t *testing.T, opts streamable.Options) (*fake.Session, string) {
	t.Helper()
	if opts.UnreadBodyGrace == 0 {
		opts.UnreadBodyGrace = time.Minute
	}
	s := fake.New()
	h, err := streamable.NewHandler(newEngine(t, s), opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return s, srv.Listener.Addr().String()
}

// newEngine builds the engine for s, shut down when the test ends.
func newEngine(t *testing.T, s ports.Session) *engine.Engine {
	t.Helper()
	return enginetest.New(t, s, engine.Options{Name: "t", Version: "1"}, 10*time.Second)
}

// raw sends head (request line and headers, without the blank line) and,
// when body is not nil, body; it returns the response and its body. The
// response must come within 5 s: a refusal that waited for a body that
// never arrives fails the test.
func raw(t *testing.T, addr, head string, body []byte) (*http.Response, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	msg := strings.ReplaceAll(strings.TrimSpace(head), "\n", "\r\n") + "\r\n\r\n"
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	if body != nil {
		if _, err := c.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading response body: %v", err)
	}
	return resp, b
}

type rpcReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func decode(t *testing.T, b []byte) rpcReply {
	t.Helper()
	var r rpcReply
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return r
}

// TestRefusalOrder walks docs/SPEC.md §4's refusal table from "method not POST" on.
// Each row breaks its own check and every later one, so only the table's
// order gives the expected answer. Rows refused before the body is read
// declare a body that never arrives: their answer must come anyway.
func TestRefusalOrder(t *testing.T) {
	_, addr := serve(t, streamable.Options{})
	// busyAddr's only in-flight slot is held by a slow call.
	busySession, busyAddr := serve(t, streamable.Options{MaxInFlight: 1})
	started := busySession.Started()
	held := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+busyAddr+"/", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", jsonSSE)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		held <- err
	}()
	<-started
	t.Cleanup(func() { busySession.Release(); <-held })

	const tooBig = 2 << 20
	tests := []struct {
		name        string
		busy        bool
		method, ct  string
		accept      string
		extra       string // more header lines
		declared    int    // Content-Length when no body is sent
		body        string // sent when declared is 0
		wantStatus  int
		wantCode    int    // JSON-RPC error code; 0: no JSON-RPC error expected
		wantID      string // "" means no id
		wantCT      string
		wantEmpty   bool
		wantHeaders map[string]string
	}{
		{name: "405 before everything", busy: true, method: "PUT", ct: "text/plain", accept: "application/json", declared: tooBig,
			wantStatus: 405, wantEmpty: true, wantHeaders: map[string]string{"Allow": "POST"}},
		{name: "405 GET", method: "GET", ct: "application/json", accept: jsonSSE, declared: 10,
			wantStatus: 405, wantEmpty: true, wantHeaders: map[string]string{"Allow": "POST"}},
		{name: "415 before 406", busy: true, method: "POST", ct: "text/plain", accept: "application/json", declared: tooBig,
			wantStatus: 415, wantCode: engine.CodeInvalidRequest, wantCT: "application/json"},
		{name: "415 no Content-Type", method: "POST", accept: jsonSSE, declared: 10,
			wantStatus: 415, wantCode: engine.CodeInvalidRequest, wantCT: "application/json"},
		{name: "406 before 503", busy: true, method: "POST", ct: "application/json; charset=utf-8", accept: "application/json", declared: tooBig,
			wantStatus: 406, wantCode: engine.CodeInvalidRequest, wantCT: "application/json"},
		{name: "503 before 413", busy: true, method: "POST", ct: "application/json", accept: jsonSSE, declared: tooBig,
			wantStatus: 503, wantEmpty: true},
		{name: "413 declared, before reading", method: "POST", ct: "application/json", accept: jsonSSE, declared: tooBig,
			wantStatus: 413, wantEmpty: true},
		{name: "400 not JSON", method: "POST", ct: "application/json", accept: jsonSSE, body: `{"jsonrpc":"2.0","id":7,`,
			wantStatus: 400, wantCode: engine.CodeParseError, wantCT: "application/json"},
		{name: "400 not a request", method: "POST", ct: "application/json", accept: jsonSSE, body: `{"jsonrpc":"1.0","id":11,"method":"ping"}`,
			wantStatus: 400, wantCode: engine.CodeInvalidRequest, wantID: "11", wantCT: "application/json"},
		{name: "400 modern header mismatch", method: "POST", ct: "application/json", accept: jsonSSE,
			body:       `{"jsonrpc":"2.0","id":"m","method":"tools/list","params":{` + modern + `}}`,
			wantStatus: 400, wantCode: engine.CodeHeaderMismatch, wantID: `"m"`, wantCT: "application/json"},
		{name: "404 modern unknown method", method: "POST", ct: "application/json", accept: jsonSSE,
			extra:      "MCP-Protocol-Version: 2026-07-28\nMcp-Method: ping",
			body:       `{"jsonrpc":"2.0","id":3,"method":"ping","params":{` + modern + `}}`,
			wantStatus: 404, wantCode: engine.CodeMethodNotFound, wantID: "3", wantCT: "application/json"},
		{name: "202 notification", method: "POST", ct: "application/json", accept: jsonSSE,
			body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, wantStatus: 202, wantEmpty: true},
		{name: "202 response", method: "POST", ct: "application/json", accept: jsonSSE,
			body: `{"jsonrpc":"2.0","id":"srv-1","result":{}}`, wantStatus: 202, wantEmpty: true},
		{name: "200 request", method: "POST", ct: "application/json", accept: jsonSSE, body: ping,
			wantStatus: 200, wantID: "1", wantCT: "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := addr
			if tt.busy {
				a = busyAddr
			}
			head := fmt.Sprintf("%s / HTTP/1.1\nHost: %s", tt.method, a)
			if tt.ct != "" {
				head += "\nContent-Type: " + tt.ct
			}
			head += "\nAccept: " + tt.accept
			if tt.extra != "" {
				head += "\n" + tt.extra
			}
			var body []byte
			if tt.declared > 0 {
				head += fmt.Sprintf("\nContent-Length: %d", tt.declared)
			} else {
				body = []byte(tt.body)
				head += fmt.Sprintf("\nContent-Length: %d", len(body))
			}
			resp, b := raw(t, a, head, body)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d (body %q)", resp.StatusCode, tt.wantStatus, b)
			}
			for k, v := range tt.wantHeaders {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			if resp.Header.Get("Mcp-Session-Id") != "" {
				t.Errorf("Mcp-Session-Id minted")
			}
			if tt.wantEmpty {
				if len(b) != 0 {
					t.Errorf("body %q, want empty", b)
				}
				return
			}
			if got := resp.Header.Get("Content-Type"); got != tt.wantCT {
				t.Errorf("Content-Type %q, want %q", got, tt.wantCT)
			}
			r := decode(t, b)
			if string(r.ID) != tt.wantID {
				t.Errorf("id %s, want %q", r.ID, tt.wantID)
			}
			switch {
			case tt.wantCode == 0 && r.Error != nil:
				t.Errorf("error %+v, want a result", r.Error)
			case tt.wantCode != 0 && (r.Error == nil || r.Error.Code != tt.wantCode):
				t.Errorf("body %s, want error %d", b, tt.wantCode)
			}
		})
	}
}

// do sends body with the standard headers plus extra (name, value pairs).
func do(ctx context.Context, addr, body string, extra ...string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", jsonSSE)
	for i := 0; i+1 < len(extra); i += 2 {
		req.Header.Add(extra[i], extra[i+1])
	}
	return http.DefaultClient.Do(req)
}

func post(t *testing.T, ctx context.Context, addr, body string, extra ...string) *http.Response {
	t.Helper()
	resp, err := do(ctx, addr, body, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestAcceptAndContentType pins docs/SPEC.md K6's decisions: both media types must be
// acceptable (wildcards count, q=0 does not); Content-Type parameters are
// allowed.
func TestAcceptAndContentType(t *testing.T) {
	_, addr := serve(t, streamable.Options{})
	tests := []struct {
		ct, accept string
		want       int
	}{
		{"application/json", "application/json", 406},
		{"application/json", "text/event-stream", 406},
		{"application/json", "", 406},
		{"application/json", "application/json, text/event-stream;q=0", 406},
		{"application/json", "application/json, text/event-stream", 200},
		{"application/json", "text/event-stream, application/json;q=0.5", 200},
		{"application/json", "APPLICATION/JSON, Text/Event-Stream", 200},
		{"application/json", "*/*", 200},
		{"application/json", "application/*, text/*", 200},
		{"application/json; charset=utf-8", jsonSSE, 200},
		{"Application/JSON", jsonSSE, 200},
		{"text/plain", jsonSSE, 415},
		{"application/json-seq", jsonSSE, 415},
		{"application/jsonx; charset=utf-8", jsonSSE, 415},
	}
	for _, tt := range tests {
		t.Run(tt.ct+" | "+tt.accept, func(t *testing.T) {
			req, _ := http.NewRequest("POST", "http://"+addr+"/", strings.NewReader(ping))
			req.Header.Set("Content-Type", tt.ct)
			if tt.accept != "" {
				req.Header.Set("Accept", tt.accept)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d (%s)", resp.StatusCode, tt.want, b)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q: never SSE here", ct)
			}
		})
	}
}

// sseEvents reads a text/event-stream and sends each event's data, and ""
// for each keep-alive comment, until the stream ends.
func sseEvents(r io.Reader) <-chan string {
	out := make(chan string)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(r)
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == ": keep-alive":
				out <- ""
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			case line == "" && data != nil:
				out <- strings.Join(data, "\n")
				data = nil
			}
		}
	}()
	return out
}

// TestSSEWhenProgressPrecedes: a call that reports progress is answered as
// an event stream: the progress notifications, then the response.
func TestSSEWhenProgressPrecedes(t *testing.T) {
	_, addr := serve(t, streamable.Options{})
	resp := post(t, t.Context(), addr,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"progress","arguments":{"n":3},"_meta":{"progressToken":"tok"}}}`,
		"MCP-Protocol-Version", "2025-11-25")
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	if got := resp.Header.Get("X-Accel-Buffering"); got != "no" {
		t.Errorf("X-Accel-Buffering %q", got)
	}
	var events []string
	for ev := range sseEvents(resp.Body) {
		events = append(events, ev)
	}
	if len(events) != 4 {
		t.Fatalf("events %q, want 3 progress + 1 response", events)
	}
	for i, ev := range events[:3] {
		want := fmt.Sprintf(`"progress":%d`, i+1)
		if !strings.Contains(ev, `"method":"notifications/progress"`) || !strings.Contains(ev, want) || !strings.Contains(ev, `"progressToken":"tok"`) {
			t.Errorf("event %d: %s", i, ev)
		}
	}
	if r := decode(t, []byte(events[3])); string(r.ID) != "9" || r.Result == nil {
		t.Errorf("last event %s, want the response", events[3])
	}

	// Without a progressToken the same call is plain JSON.
	resp = post(t, t.Context(), addr, `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"progress","arguments":{"n":3}}}`)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q without progressToken", ct)
	}
}

// TestSSEAfterDelay: an answer slower than SSEAfter switches to an event
// stream with keep-alive comments; a batch never does.
func TestSSEAfterDelay(t *testing.T) {
	s, addr := serve(t, streamable.Options{SSEAfter: 20 * time.Millisecond, KeepAlive: 10 * time.Millisecond})
	started := s.Started()

	// A 2025-03-26 batch holding a slow call, started first.
	type result struct {
		resp *http.Response
		err  error
	}
	batchResp := make(chan result, 1)
	go func() {
		resp, err := do(t.Context(), addr,
			`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}},{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
		batchResp <- result{resp, err}
	}()
	<-started

	resp := post(t, t.Context(), addr, `{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"slow"}}`)
	<-started
	// The headers arrived: SSEAfter has passed since the batch started too.
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	events := sseEvents(resp.Body)
	for range 2 {
		if ev := <-events; ev != "" {
			t.Fatalf("event %q, want a keep-alive comment", ev)
		}
	}
	s.Release()
	for ev := range events {
		if ev == "" {
			continue
		}
		if r := decode(t, []byte(ev)); string(r.ID) != `"s"` || r.Result == nil {
			t.Errorf("event %s, want the response", ev)
		}
	}
	res := <-batchResp
	if res.err != nil {
		t.Fatal(res.err)
	}
	br := res.resp
	defer br.Body.Close()
	b, _ := io.ReadAll(br.Body)
	if ct := br.Header.Get("Content-Type"); ct != "application/json" || br.StatusCode != 200 {
		t.Fatalf("batch: %d %q %s, want 200 application/json", br.StatusCode, ct, b)
	}
	var arr []rpcReply
	if err := json.Unmarshal(b, &arr); err != nil || len(arr) != 2 {
		t.Fatalf("batch body %s: %v", b, err)
	}
}

// TestBatchHoldsAtMostHalfTheSlots: a batch runs its elements at most
// MaxInFlight/2 at a time and holds that many slots, so one connection never
// holds every slot (docs/SPEC.md §5.2); the rest stay for other clients,
// and a batch whose slots are not free gets 503 without running anything.
func TestBatchHoldsAtMostHalfTheSlots(t *testing.T) {
	s, addr := serve(t, streamable.Options{MaxInFlight: 4})
	started := s.Started()
	slow := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow"}}`, id)
	}
	batch := make(chan *http.Response, 1)
	go func() {
		resp, err := do(t.Context(), addr, "["+slow(1)+","+slow(2)+","+slow(3)+"]")
		if err != nil {
			t.Error(err)
		}
		batch <- resp
	}()
	<-started
	<-started // two elements run; the third waits for one of them
	singles := make(chan *http.Response, 2)
	for id := range 2 {
		go func() {
			resp, err := do(t.Context(), addr, slow(10+id))
			if err != nil {
				t.Error(err)
			}
			singles <- resp
		}()
	}
	<-started
	<-started // the other two slots are the other clients'
	if resp := post(t, t.Context(), addr, ping); resp.StatusCode != 503 {
		t.Fatalf("with every slot held: %d, want 503", resp.StatusCode)
	}
	if n := len(s.Calls()); n != 4 {
		t.Errorf("%d calls started, want 4 (the batch's third element waits)", n)
	}
	s.Release()
	for range 2 {
		if resp := <-singles; resp == nil || resp.StatusCode != 200 {
			t.Errorf("single slow call: %v", resp)
		}
	}
	resp := <-batch
	b, _ := io.ReadAll(resp.Body)
	var arr []rpcReply
	if resp.StatusCode != 200 || json.Unmarshal(b, &arr) != nil || len(arr) != 3 {
		t.Errorf("batch: %d %s, want its three answers", resp.StatusCode, b)
	}
	// With 2 slots a batch runs one element at a time.
	_, addr2 := serve(t, streamable.Options{MaxInFlight: 2})
	pings := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`
	if resp := post(t, t.Context(), addr2, pings); resp.StatusCode != 200 {
		t.Errorf("a batch that runs one at a time with 2 slots: %d", resp.StatusCode)
	}
}

// TestStreamedOversize: a chunked body is cut at the limit (docs/SPEC.md K4).
func TestStreamedOversize(t *testing.T) {
	_, addr := serve(t, streamable.Options{MaxBodyBytes: 100})
	req, _ := http.NewRequest("POST", "http://"+addr+"/", io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"`),
		bytes.NewReader(bytes.Repeat([]byte("a"), 100)), strings.NewReader(`"}}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", jsonSSE)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if req.ContentLength != 0 || resp.StatusCode != 413 {
		t.Fatalf("chunked (%d) status %d, want 413", req.ContentLength, resp.StatusCode)
	}
}

// TestPrincipalBindsRounds: with asking on, an input-required round minted
// for one principal (WithPrincipal) cannot be resumed by another; its own
// principal resumes it.
func TestPrincipalBindsRounds(t *testing.T) {
	s := fake.New()
	eng, err := engine.New(s, engine.Options{AskClient: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Shutdown(context.Background()) })
	h, err := streamable.NewHandler(eng, streamable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeMCP(w, r, ports.Principal{Subject: r.Header.Get("X-Principal")})
	}))
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	headers := func(who string) []string {
		return []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "write", "X-Principal", who}
	}
	call := func(who, extra string) rpcReply {
		t.Helper()
		resp := post(t, t.Context(), addr, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":{"text":"x"},`+extra+meta+`}}`, headers(who)...)
		b, _ := io.ReadAll(resp.Body)
		return decode(t, b)
	}
	var first struct {
		ResultType   string `json:"resultType"`
		RequestState string `json:"requestState"`
	}
	if r := call("alice", ""); json.Unmarshal(r.Result, &first) != nil || first.ResultType != "input_required" {
		t.Fatalf("first call: %s %+v", r.Result, r.Error)
	}
	answer := `"inputResponses":{"prompt":{"action":"accept","content":{"decision":"allow_once"}}},"requestState":"` + first.RequestState + `",`
	if r := call("bob", answer); r.Error == nil || r.Error.Code != engine.CodeInvalidParams {
		t.Fatalf("another principal's retry: %s %+v, want -32602", r.Result, r.Error)
	}
	r := call("alice", answer)
	if r.Error != nil || !strings.Contains(string(r.Result), `"resultType":"complete"`) || strings.Contains(string(r.Result), `"isError":true`) {
		t.Fatalf("own retry: %s %+v", r.Result, r.Error)
	}
}

// TestLongCallOutlivesBodyTimeoutBehindMiddleware: mounted behind
// middleware that reads the body first and hands on a copy (a signature
// check, a logger), the Handler's body deadline is set after net/http's
// background read has begun; it must still end with the body, so a call
// longer than BodyReadTimeout is not cancelled. Keep-alives pace the test
// past the timeout.
func TestLongCallOutlivesBodyTimeoutBehindMiddleware(t *testing.T) {
	const bodyTimeout = 20 * time.Millisecond
	s := fake.New()
	started := s.Started()
	h, err := streamable.NewHandler(newEngine(t, s), streamable.Options{BodyReadTimeout: bodyTimeout, SSEAfter: time.Millisecond, KeepAlive: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	req, err := http.NewRequestWithContext(t.Context(), "POST", srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", jsonSSE)
	began := time.Now()
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-started
	rest := waitfor.StreamPast(t, resp.Body, began, 5*bodyTimeout, s.Release)
	if !bytes.Contains(rest, []byte(`"result"`)) {
		t.Fatalf("no result in %q", rest)
	}
}
