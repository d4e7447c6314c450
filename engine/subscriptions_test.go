package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/enginetest"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
	"github.com/agentmcp/agentmcp/ports"
)

const listenMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// subscriber is a session serving f's features, subscriptions included.
func subscriber(t *testing.T, f *fake.Features) *engine.Engine {
	return enginetest.New(t, featured{fake.New(), f}, engine.Options{Name: "agentmcp-test", Version: "1.2.3"}, 10*time.Second)
}

// expectResult reads the next message and checks it answers id with a
// result.
func expectResult(t *testing.T, c *client, id int) map[string]any {
	t.Helper()
	m := c.recv()
	if m["id"] != float64(id) || m["result"] == nil {
		t.Fatalf("want the result of %d, got %v", id, m)
	}
	return m["result"].(map[string]any)
}

// TestSubscriptionsBound: one stream asks for 10,000 subscriptions; it
// holds at most engine.MaxSubscriptions (every one past it -32602, nothing
// held for it), its goroutines do not grow with them, another stream of
// the same engine still subscribes and gets its update, and when the first
// stream ends every one of its subscriptions is released.
func TestSubscriptionsBound(t *testing.T) {
	leakcheck.Check(t)
	f := &fake.Features{}
	e := subscriber(t, f)
	c := newClient(t, e)
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`)
	c.recv()
	base := runtime.NumGoroutine()
	refused := 0
	for i := 1; i <= 10000; i++ {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":"fake://items/%d"}}`, i, i))
		m := c.recv()
		if m["id"] != float64(i) {
			t.Fatalf("answer %v to request %d", m, i)
		}
		switch {
		case i <= engine.MaxSubscriptions && m["result"] == nil:
			t.Fatalf("subscription %d refused: %v", i, m)
		case i > engine.MaxSubscriptions:
			e, _ := m["error"].(map[string]any)
			if e == nil || e["code"] != float64(-32602) || !strings.Contains(fmt.Sprint(e["message"]), "256 resource subscriptions") {
				t.Fatalf("subscription %d: got %v, want -32602 naming the bound", i, m)
			}
			refused++
		}
	}
	if n := f.Subscriptions(); n != engine.MaxSubscriptions || refused != 10000-engine.MaxSubscriptions {
		t.Fatalf("the session holds %d subscriptions (%d refused), want %d", n, refused, engine.MaxSubscriptions)
	}
	// One writer for the stream, whatever it holds; the requests' workers
	// are bounded (a handful kept idle).
	if grown := runtime.NumGoroutine() - base; grown > 8 {
		t.Errorf("goroutines grew by %d for %d subscriptions", grown, engine.MaxSubscriptions)
	}

	other := newClient(t, e)
	other.send(`{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"fake://text"}}`)
	expectResult(t, other, 1)
	f.Update("fake://text")
	if m := other.recv(); m["method"] != "notifications/resources/updated" {
		t.Fatalf("the other stream got %v, want its update", m)
	}

	c.in.Close()
	if err := <-c.done; err != nil {
		t.Fatal(err)
	}
	c.done <- nil
	if n := f.Subscriptions(); n != 1 {
		t.Fatalf("after the stream ended the session holds %d subscriptions, want the other stream's 1", n)
	}
}

// gate is a stream's output that hands each line written to out and holds
// the write of every notifications/resources/updated until released: the
// client reading slowly.
type gate struct {
	out     chan string
	release chan struct{}
}

func (g *gate) Write(p []byte) (int, error) {
	g.out <- strings.TrimSpace(string(p))
	if bytes.Contains(p, []byte("notifications/resources/updated")) {
		<-g.release
	}
	return len(p), nil
}

// TestSubscriptionsCoalesce: while the client is slow to read one update,
// a hundred more changes of the resource become exactly one more
// notification, and the session's updated never waits for the client
// (every Update returns while the write is held).
func TestSubscriptionsCoalesce(t *testing.T) {
	f := &fake.Features{}
	e := subscriber(t, f)
	g := &gate{out: make(chan string, 16), release: make(chan struct{})}
	inR, inW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- e.ServeConn(context.Background(), inR, g, engine.ConnOptions{}) }()
	next := func(want string) {
		t.Helper()
		if l := <-g.out; !strings.Contains(l, want) {
			t.Fatalf("wrote %s, want %s", l, want)
		}
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"fake://text"}}`+"\n")
	next(`"id":1,"result":{}`)
	f.Update("fake://text")
	next("notifications/resources/updated") // its write is held
	for range 100 {
		f.Update("fake://text")
	}
	g.release <- struct{}{}
	next("notifications/resources/updated") // the one more, for all hundred
	g.release <- struct{}{}
	io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"resources/unsubscribe","params":{"uri":"fake://text"}}`+"\n")
	next(`"id":2,"result":{}`) // and no third update before it
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-g.out:
		t.Fatalf("wrote %s after the unsubscribe", l)
	default:
	}
}

// TestListenShutdown: the server ending a subscriptions/listen (Shutdown)
// answers it with the graceful result carrying its subscriptionId, after
// the acknowledgement, and releases what it held.
func TestListenShutdown(t *testing.T) {
	f := &fake.Features{}
	e, err := engine.New(featured{fake.New(), f}, engine.Options{Name: "agentmcp-test", Version: "1.2.3"})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, e)
	c.send(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["fake://text"]},` + listenMeta + `}}`)
	if m := c.recv(); m["method"] != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first message %v, want the acknowledgement", m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := enginetest.Shutdown(ctx, e); err != nil {
		t.Fatal(err)
	}
	m := c.recv()
	got, _ := json.Marshal(m)
	want := `{"id":"L","jsonrpc":"2.0","result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"agentmcp-test","version":"1.2.3"},"io.modelcontextprotocol/subscriptionId":"L"},"resultType":"complete"}}`
	if string(got) != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	if n := f.Subscriptions(); n != 0 {
		t.Fatalf("%d subscriptions held after the listen ended", n)
	}
}

// TestListenSharesTheStreamBound: a stream's legacy subscriptions and its
// listens share engine.MaxSubscriptions; a listen past it acknowledges
// none of the URIs beyond it, and more URIs than the bound in one filter
// is -32602.
func TestListenSharesTheStreamBound(t *testing.T) {
	f := &fake.Features{}
	c := newClient(t, subscriber(t, f))
	for i := 1; i < engine.MaxSubscriptions; i++ {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":"fake://items/%d"}}`, i, i))
		expectResult(t, c, i)
	}
	c.send(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["fake://text","fake://blob"]},` + listenMeta + `}}`)
	ack, _ := json.Marshal(c.recv()["params"].(map[string]any)["notifications"])
	if string(ack) != `{"resourceSubscriptions":["fake://text"]}` {
		t.Fatalf("acknowledged %s, want the one URI left under the bound", ack)
	}
	uris := make([]string, engine.MaxSubscriptions+1)
	for i := range uris {
		uris[i] = fmt.Sprintf(`"fake://items/%d"`, i)
	}
	c.send(`{"jsonrpc":"2.0","id":"M","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":[` + strings.Join(uris, ",") + `]},` + listenMeta + `}}`)
	if e, _ := c.recv()["error"].(map[string]any); e == nil || e["code"] != float64(-32602) {
		t.Fatalf("a filter over the bound: %v, want -32602", e)
	}
}

// panicky panics in SubscribeResource.
type panicky struct{ *fake.Features }

func (panicky) SubscribeResource(context.Context, string, ports.Principal, func()) (func(), error) {
	panic("subscriber: told to panic")
}

type panickySession struct {
	*fake.Session
	f *fake.Features
}

func (s panickySession) Features() ports.Features {
	p := s.f.Ports()
	p.Subscriber = panicky{s.f}
	return p
}

// TestSubscribePanic: a session panicking in SubscribeResource is -32603
// with the fixed message, and what it did not hold is not counted against
// the stream's bound.
func TestSubscribePanic(t *testing.T) {
	e := enginetest.New(t, panickySession{fake.New(), &fake.Features{}}, engine.Options{}, 10*time.Second)
	c := newClient(t, e)
	for i := 1; i <= engine.MaxSubscriptions+1; i++ {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/subscribe","params":{"uri":"fake://text"}}`, i))
		m := c.recv()
		e, _ := m["error"].(map[string]any)
		if e == nil || e["code"] != float64(-32603) || strings.Contains(fmt.Sprint(e["message"]), "told to panic") {
			t.Fatalf("request %d: %v, want -32603 without the panic's value", i, m)
		}
	}
}

// TestSubscriptionsHTTP: over a stateless exchange a legacy subscribe is
// checked and answered {} but holds nothing; initialize declares no
// subscribe; a listen over an exchange lasts until its request ends,
// releasing what it held, and answers nothing then (Cancelled).
func TestSubscriptionsHTTP(t *testing.T) {
	f := &fake.Features{}
	e := subscriber(t, f)
	ctx := context.Background()
	r := e.Exchange(ctx, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}`), engine.ExchangeOptions{})
	if !bytes.Contains(r.Body, []byte(`"resources":{}`)) {
		t.Fatalf("legacy HTTP initialize: %s", r.Body)
	}
	r = e.Exchange(ctx, []byte(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"fake://text"}}`), engine.ExchangeOptions{})
	if string(r.Body) != `{"jsonrpc":"2.0","id":2,"result":{}}` || f.Subscriptions() != 0 {
		t.Fatalf("legacy HTTP subscribe: %s, %d held", r.Body, f.Subscriptions())
	}

	lctx, cancel := context.WithCancel(ctx)
	notes := make(chan string, 4)
	out := make(chan engine.Reply, 1)
	go func() {
		out <- e.Exchange(lctx, []byte(`{"jsonrpc":"2.0","id":3,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["fake://text"]},`+listenMeta+`}}`),
			engine.ExchangeOptions{Headers: engine.Headers{ProtocolVersion: "2026-07-28", HasProtocolVersion: true, Method: "subscriptions/listen", HasMethod: true},
				Notify: func(b []byte) { notes <- string(b) }})
	}()
	if n := <-notes; !strings.Contains(n, `subscriptionId":3`) || !strings.Contains(n, "acknowledged") {
		t.Fatalf("first notification %s, want the acknowledgement", n)
	}
	f.Update("fake://text")
	if n := <-notes; !strings.Contains(n, `subscriptionId":3},"uri":"fake://text"`) {
		t.Fatalf("update %s", n)
	}
	cancel()
	if r := <-out; r.Kind != engine.Cancelled {
		t.Fatalf("a listen its client closed answered %v %s", r.Kind, r.Body)
	}
	if n := f.Subscriptions(); n != 0 {
		t.Fatalf("%d subscriptions held after the listen's request ended", n)
	}
}
