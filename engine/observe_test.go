package engine_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/waitfor"
	"github.com/agentmcp/agentmcp/ports"
)

// recorder is an Observer that records requests and the contexts they ran in.
type recorder struct {
	ports.NopObserver
	mu   sync.Mutex
	seen []string // "start <request>" / "end <error.type>"
}

type recKey struct{}

func (r *recorder) StartRequest(ctx context.Context, req ports.ObservedRequest) (context.Context, func(ports.RequestEnd)) {
	r.mu.Lock()
	r.seen = append(r.seen, "start "+req.Method+" "+req.Tool+" "+req.ProtocolVersion+" "+req.RequestID+" "+req.TraceParent+" "+req.TraceState)
	r.mu.Unlock()
	return context.WithValue(ctx, recKey{}, req.RequestID), func(e ports.RequestEnd) {
		r.mu.Lock()
		r.seen = append(r.seen, "end "+req.RequestID+" "+e.ErrorType)
		r.mu.Unlock()
	}
}

// ctxSession records the recorder's request id in each tool call's context.
type ctxSession struct {
	*fake.Session
	ids []any
}

func (c *ctxSession) InvokeTool(ctx context.Context, name string, args json.RawMessage, caller ports.Caller) (domain.Envelope, error) {
	c.ids = append(c.ids, ctx.Value(recKey{}))
	return c.Session.InvokeTool(ctx, name, args, caller)
}

// TestObserverSeesRequests: the engine tells its Observer each request that
// reaches the session, with the method, tool, version, id and _meta trace
// context, and how it ended (docs/SPEC.md §13); the context the Observer
// returns is the one the call runs in; arguments never reach it.
func TestObserverSeesRequests(t *testing.T) {
	rec := &recorder{}
	s := &ctxSession{Session: fake.New()}
	e, err := engine.New(s, engine.Options{Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	ex := func(body string, h engine.Headers) {
		t.Helper()
		e.Exchange(t.Context(), []byte(body), engine.ExchangeOptions{Headers: h})
	}
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"k=v"}`
	modern := func(method, name string) engine.Headers {
		return engine.Headers{ProtocolVersion: "2026-07-28", HasProtocolVersion: true, Method: method, HasMethod: true, Name: name, HasName: name != ""}
	}
	ex(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+meta+`}}`, modern("tools/list", ""))
	ex(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"text":"secret words"},`+meta+`}}`, modern("tools/call", "echo"))
	ex(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fail","arguments":{}}}`, engine.Headers{})
	ex(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":[]}}`, engine.Headers{})
	ex(`{"jsonrpc":"2.0","id":5,"method":"ping"}`, engine.Headers{}) // answered before the session: not observed
	tp := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01 k=v"
	want := []string{
		"start tools/list  2026-07-28 1 " + tp, "end 1 ",
		`start tools/call echo 2026-07-28 "a" ` + tp, `end "a" `,
		"start tools/call fail 2025-03-26 3  ", "end 3 tool_error",
		"start tools/call echo 2025-03-26 4  ", "end 4 -32602",
	}
	if !reflect.DeepEqual(rec.seen, want) {
		t.Errorf("observed\n%s\nwant\n%s", strings.Join(rec.seen, "\n"), strings.Join(want, "\n"))
	}
	if want := []any{`"a"`, "3", "4"}; !reflect.DeepEqual(s.ids, want[:2]) {
		t.Errorf("the session's calls ran in the observer's contexts of requests %v, want %v", s.ids, want[:2])
	}
	for _, s := range rec.seen {
		if strings.Contains(s, "secret") {
			t.Errorf("an argument reached the observer: %q", s)
		}
	}
}

// TestObserverContextReachesParkedCalls: under input-required rounds a
// call outlives its request (docs/SPEC.md §6); it still runs with the
// context values the Observer gave the request that started it, so a
// tracer's spans nest (docs/SPEC.md §13), and Shutdown still ends it.
func TestObserverContextReachesParkedCalls(t *testing.T) {
	rec := &recorder{}
	s := &ctxSession{Session: fake.New()}
	e, err := engine.New(s, engine.Options{Observer: rec, AskClient: true})
	if err != nil {
		t.Fatal(err)
	}
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`
	h := engine.Headers{ProtocolVersion: "2026-07-28", HasProtocolVersion: true, Method: "tools/call", HasMethod: true, Name: "echo", HasName: true}
	r := e.Exchange(t.Context(), []byte(`{"jsonrpc":"2.0","id":"r1","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},`+meta+`}}`), engine.ExchangeOptions{Headers: h})
	if !strings.Contains(string(r.Body), `"resultType":"complete"`) {
		t.Fatalf("answer %s", r.Body)
	}
	if !reflect.DeepEqual(s.ids, []any{`"r1"`}) {
		t.Errorf("the parked call ran with the observer's context of %v, want request \"r1\"", s.ids)
	}

	// A call blocked in the session ends with Shutdown, as without an
	// Observer.
	started := s.Started()
	h.Name = "slow"
	done := make(chan engine.Reply, 1)
	go func() {
		done <- e.Exchange(context.Background(), []byte(`{"jsonrpc":"2.0","id":"r2","method":"tools/call","params":{"name":"slow","arguments":{},`+meta+`}}`), engine.ExchangeOptions{Headers: h})
	}()
	waitfor.Value(t, started, 10*time.Second, "the slow call to start")
	shutdown(t, e)
	if r := waitfor.Value(t, done, 10*time.Second, "the slow call's answer"); !strings.Contains(string(r.Body), "server is shutting down") {
		t.Errorf("slow call after Shutdown: %s", r.Body)
	}
}
