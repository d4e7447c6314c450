package interop

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inbox collects what a client was told, in order, for a test to wait
// on: put never blocks, await waits (until ctx ends) for the next item
// that is want.
type inbox struct {
	mu     sync.Mutex
	items  []string
	next   int           // the index await looks from
	signal chan struct{} // one token: something was put
}

func newInbox() *inbox { return &inbox{signal: make(chan struct{}, 1)} }

func (b *inbox) put(item string) {
	b.mu.Lock()
	b.items = append(b.items, item)
	b.mu.Unlock()
	select {
	case b.signal <- struct{}{}:
	default:
	}
}

// mark is the count of items so far: since(mark) is what came after it.
func (b *inbox) mark() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.items)
}

func (b *inbox) since(mark int) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.items[mark:])
}

// await waits for the next item that is want, past the one the previous
// await found, and fails t when ctx ends first.
func (b *inbox) await(ctx context.Context, t *testing.T, want, after string) {
	t.Helper()
	for {
		b.mu.Lock()
		i := slices.Index(b.items[b.next:], want)
		if i >= 0 {
			b.next += i + 1
		}
		items := slices.Clone(b.items)
		b.mu.Unlock()
		if i >= 0 {
			return
		}
		select {
		case <-b.signal:
		case <-ctx.Done():
			t.Fatalf("no %q after %s; the client was told %q", want, after, items)
		}
	}
}

// ackTransport wraps a client transport and puts the URIs of each
// notifications/subscriptions/acknowledged the server sends in acks, one
// item per URI: go-sdk v1.8.0's Subscribe on 2026-07-28 sends
// subscriptions/listen and returns without waiting for it, so a test
// waits here before it changes the file.
type ackTransport struct {
	inner mcp.Transport
	acks  *inbox
}

func (t *ackTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &ackConn{Connection: conn, acks: t.acks}, nil
}

type ackConn struct {
	mcp.Connection
	acks *inbox
}

func (c *ackConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && req.Method == "notifications/subscriptions/acknowledged" {
		var p struct {
			Notifications struct {
				ResourceSubscriptions []string `json:"resourceSubscriptions"`
			} `json:"notifications"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			for _, uri := range p.Notifications.ResourceSubscriptions {
				c.acks.put(uri)
			}
		}
	}
	return msg, err
}

// TestGoSDKSubscribe: the official Go SDK client, over stdio in both eras
// (2025-11-25: resources/subscribe and unsubscribe; 2026-07-28: its
// Subscribe opens a subscriptions/listen per URI), sees resources.subscribe
// declared, subscribes to a workspace file and is told
// (notifications/resources/updated, through its ResourceUpdatedHandler)
// when an editor saves it (a new file renamed over it), when it is
// written in place, when the agent's approved turn writes it, and when it
// is removed; each read after an update is fresh. Subscribed to a
// conversation, it is told when a turn of it is stored. Over 2025-11-25,
// once unsubscribed from the file it is not told of a later write while
// another file of its directory is.
func TestGoSDKSubscribe(t *testing.T) {
	for _, version := range []string{"2025-11-25", modernVersion} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			testGoSDKSubscribe(t, version)
		})
	}
}

func testGoSDKSubscribe(t *testing.T, version string) {
	modern := version == modernVersion
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	f := newResourceFixture(t)
	stderr := serverStderr(t)
	cmd := serverCommand(ctx, f.ws, f.flags...)
	cmd.Stderr = stderr
	rec, acks, updates := &wireRecorder{}, newInbox(), newInbox()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("wire:\n%s", rec.dump())
		}
	})
	transport := &ackTransport{inner: &recordingTransport{inner: &mcp.CommandTransport{Command: cmd}, wire: rec}, acks: acks}
	script := &elicitScript{}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentmcp-interop-subscribe", Version: "v1"}, &mcp.ClientOptions{
		ElicitationHandler: script.handle,
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			item := req.Params.URI
			if _, ok := req.Params.Meta["io.modelcontextprotocol/subscriptionId"]; modern && !ok {
				item += " (without its subscriptionId)"
			}
			updates.put(item)
		},
	})
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect at %s: %v", version, err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated %q, want %q", got, version)
	}
	if caps := cs.InitializeResult().Capabilities; caps == nil || caps.Resources == nil || !caps.Resources.Subscribe || caps.Resources.ListChanged {
		t.Fatalf("capabilities %+v, want resources.subscribe and no listChanged", caps)
	}

	subscribe := func(uri string) {
		t.Helper()
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
		if modern {
			acks.await(ctx, t, uri, "its subscriptions/listen")
		}
	}
	read := func(uri string) string {
		t.Helper()
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(res.Contents) != 1 {
			t.Fatalf("resources/read %s: %+v, %v", uri, res, err)
		}
		return res.Contents[0].Text
	}
	turn := func(prompt string, answers []promptAnswer, want string) {
		t.Helper()
		script.begin(answers)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "agent_submit", Arguments: map[string]any{"prompt": prompt, "conversation": "docs"}})
		script.end()
		if err != nil {
			t.Fatalf("agent_submit %q: %v", prompt, err)
		}
		if text := singleText(t, "agent_submit", res); res.IsError || text != want {
			t.Fatalf("agent_submit %q = {isError:%v text:%q}, want %q", prompt, res.IsError, text, want)
		}
	}

	hello, helloPath := f.prefix+"hello.txt", filepath.Join(f.root, "hello.txt")
	subscribe(hello)
	tmp := filepath.Join(f.root, ".hello.txt.swp")
	if err := os.WriteFile(tmp, []byte("saved by an editor\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, helloPath); err != nil {
		t.Fatal(err)
	}
	updates.await(ctx, t, hello, "an editor's save")
	if got := read(hello); got != "saved by an editor\n" {
		t.Errorf("hello.txt after the save: %q", got)
	}
	if err := os.WriteFile(helloPath, []byte("written in place\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	updates.await(ctx, t, hello, "a write in place")
	turn("Write hello.txt with a greeting.", []promptAnswer{allowOnce, overwriteFile}, "I wrote hello.txt.")
	updates.await(ctx, t, hello, "the agent's write")
	if got := read(hello); got != wroteContent {
		t.Errorf("hello.txt after the agent's write: %q, want %q", got, wroteContent)
	}

	conv := "agentmcp://conversations/docs"
	subscribe(conv)
	turn("hello", nil, "still here: hello")
	updates.await(ctx, t, conv, "a turn stored in docs")

	greeting := f.prefix + f.ws.file
	subscribe(greeting)
	if err := os.Remove(filepath.Join(f.root, f.ws.file)); err != nil {
		t.Fatal(err)
	}
	updates.await(ctx, t, greeting, "its removal")

	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: hello}); err != nil {
		t.Fatalf("unsubscribe %s: %v", hello, err)
	}
	if !modern {
		// resources/unsubscribe was answered: nothing of hello.txt is held.
		// (On 2026-07-28 go-sdk ends the listen without waiting, so a
		// write now could still be told.) hello.txt is written, then
		// pixel.png in the same directory twice, each after the previous
		// update: an update of hello.txt, were it still held, would have
		// been sent a whole coalescing period before pixel.png's second.
		pixel, pixelPath := f.prefix+"pixel.png", filepath.Join(f.root, "pixel.png")
		subscribe(pixel)
		mark := updates.mark()
		if err := os.WriteFile(helloPath, []byte("after the unsubscribe\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if err := os.WriteFile(pixelPath, []byte{byte(i)}, 0o644); err != nil {
				t.Fatal(err)
			}
			updates.await(ctx, t, pixel, "a write of pixel.png")
		}
		if got := updates.since(mark); slices.Contains(got, hello) {
			t.Errorf("told %q after unsubscribing from %s", got, hello)
		}
	}
	if err := cs.Close(); err != nil {
		t.Errorf("closing the session: %v", err)
	}
}
