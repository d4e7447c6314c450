package jsonrpc_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/internal/jsonrpc"
)

// echoHandler answers each request on its own goroutine after Accept,
// holding the ones whose method is "hold" until release is closed;
// "call" makes an outgoing Call first and answers its result.
type echoHandler struct {
	c       *jsonrpc.Conn
	release chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	notes   []string
	closed  bool
}

func (h *echoHandler) Request(m jsonrpc.Message, _ bool, to jsonrpc.Replier) {
	r, err := h.c.Accept(m.ID)
	if err != nil {
		to.Reply(jsonrpc.EncodeError(m.ID, jsonrpc.NewError(jsonrpc.CodeInternalError, err.Error())))
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		result := []byte(`"` + m.Method + `"`)
		switch m.Method {
		case "hold":
			select {
			case <-h.release:
			case <-r.Context().Done():
				result = []byte(`"cancelled"`)
			}
		case "call":
			_, got, err := h.c.Call(r.Context(), "ask", []byte(`{"q":1}`))
			if err != nil {
				got = []byte(`"` + err.Error() + `"`)
			}
			result = got
		}
		if !r.Finish() {
			to.Reply(jsonrpc.EncodeResponse(m.ID, result, nil))
		} else {
			to.Reply(nil)
		}
		r.Done()
	}()
}

func (h *echoHandler) Notification(m jsonrpc.Message) {
	h.mu.Lock()
	h.notes = append(h.notes, m.Method)
	h.mu.Unlock()
	if m.Method == "cancel" {
		id, _ := jsonrpc.ParseID(m.Params[1 : len(m.Params)-1])
		h.c.Cancel(id, errors.New("cancelled"))
	}
}

func (h *echoHandler) Batch([]byte) *jsonrpc.Error { return nil }
func (h *echoHandler) Closed()                     { h.mu.Lock(); h.closed = true; h.mu.Unlock() }

// TestConn: the connection's JSON-RPC mechanics on their own — a request
// reusing an id in flight is -32600 and the first is untouched; the
// in-flight bound refuses at once; Cancel writes nothing for the request;
// an outgoing Call gets the peer's response (one for an unknown id is
// ignored); a batch answers one array; the end of input drains and runs
// Closed.
func TestConn(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &echoHandler{release: make(chan struct{})}
	h.c = jsonrpc.NewConn(context.Background(), outW, h, jsonrpc.ConnOptions{MaxInFlight: 2})
	served := make(chan error, 1)
	go func() { served <- h.c.Serve(context.Background(), inR); outW.Close() }()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	send := func(s string) {
		t.Helper()
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	recv := func() string {
		t.Helper()
		select {
		case l := <-lines:
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("no line")
			return ""
		}
	}
	expect := func(want string) {
		t.Helper()
		if got := recv(); got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"hold"}`)
	send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	expect(`{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid Request: id is already in flight"}}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"hold"}`)
	send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	expect(`{"jsonrpc":"2.0","id":3,"error":{"code":-32603,"message":"too many requests in flight"}}`)
	send(`{"jsonrpc":"2.0","method":"cancel","params":[2]}`)
	send(`{"jsonrpc":"2.0","id":6,"method":"ping"}`)                        // read after the cancel: its answer says the cancel was served
	if got := recv(); !strings.HasPrefix(got, `{"jsonrpc":"2.0","id":6,`) { // served or refused busy, as the cancelled one ended first or not
		t.Errorf("got %s, want the answer to 6", got)
	}
	close(h.release)
	expect(`{"jsonrpc":"2.0","id":1,"result":"hold"}`) // nothing for the cancelled 2
	send(`{"jsonrpc":"2.0","id":4,"method":"call"}`)
	expect(`{"jsonrpc":"2.0","id":"srv-1","method":"ask","params":{"q":1}}`)
	send(`{"jsonrpc":"2.0","id":"srv-9","result":"nobody asked"}`)
	send(`{"jsonrpc":"2.0","id":"srv-1","result":"an answer"}`)
	expect(`{"jsonrpc":"2.0","id":4,"result":"an answer"}`)
	send(`[{"jsonrpc":"2.0","id":5,"method":"a"},{"jsonrpc":"2.0","method":"note"},7]`)
	if got := recv(); !strings.HasPrefix(got, `[`) || !strings.Contains(got, `"id":5,"result":"a"`) || !strings.Contains(got, `-32600`) {
		t.Errorf("batch answer %s", got)
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Errorf("Serve at the end of input: %v", err)
	}
	h.wg.Wait()
	if !h.closed {
		t.Error("Closed did not run")
	}
}
