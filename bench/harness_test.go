package bench

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"testing"
)

// These tests run with plain `go test ./...` (no -bench): every server the
// benchmarks measure answers the workload correctly on every transport, the
// HTTP client really keeps its connection alive, and the per-answer check
// rejects what a broken server could send.

const smokeCalls = 20

func TestStdioServersAnswer(t *testing.T) {
	for _, s := range stdioServers() {
		t.Run(s.name, func(t *testing.T) {
			c, closeAll := openStdio(t, s)
			defer closeAll()
			want := expectText(t, c.call, s.envelope)
			for id := int64(1000); id < 1000+smokeCalls; id++ {
				if got, err := c.call(id); err != nil || got != want {
					t.Fatalf("call %d: %q, %v", id, got, err)
				}
			}
		})
	}
}

func TestHTTPServersAnswer(t *testing.T) {
	for _, wire := range []struct {
		name   string
		modern bool
	}{{protoLegacy, false}, {protoModern, true}} {
		for _, s := range httpServers() {
			if wire.modern && !s.modern {
				continue
			}
			t.Run(wire.name+"/"+s.name, func(t *testing.T) {
				url, extra, stop := s.start(t)
				defer stop()
				defer sharedTransport.CloseIdleConnections()
				c := newHTTPClient(url, extra, wire.modern)
				want := expectText(t, c.call, s.envelope)

				// Every call after the warm-up reuses the kept-alive
				// connection: the benchmarks measure no TCP handshakes.
				var fresh atomic.Int32
				trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
					if !i.Reused {
						fresh.Add(1)
					}
				}}
				for id := int64(1000); id < 1000+smokeCalls; id++ {
					got, err := tracedCall(c, id, trace)
					if err != nil || got != want {
						t.Fatalf("call %d: %q, %v", id, got, err)
					}
				}
				if n := fresh.Load(); n != 0 {
					t.Errorf("%d of %d calls opened a new connection", n, smokeCalls)
				}
			})
		}
	}
}

// tracedCall is httpClient.call with a client trace on the request.
func tracedCall(c *httpClient, id int64, trace *httptrace.ClientTrace) (string, error) {
	saved := sharedClient.Transport
	defer func() { sharedClient.Transport = saved }()
	sharedClient.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return saved.RoundTrip(r.WithContext(httptrace.WithClientTrace(context.Background(), trace)))
	})
	return c.call(id)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestCallTextRejects(t *testing.T) {
	good := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hello world"}]}}`
	if text, err := callText([]byte(good), 7); err != nil || text != echoText {
		t.Fatalf("good answer: %q, %v", text, err)
	}
	for name, msg := range map[string]string{
		"wrong id":       `{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"hello world"}]}}`,
		"string id":      `{"jsonrpc":"2.0","id":"7","result":{"content":[{"type":"text","text":"hello world"}]}}`,
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
		if _, err := callText([]byte(msg), 7); err == nil {
			t.Errorf("%s: accepted %s", name, msg)
		}
	}
	if _, err := callText([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`), 7); err != errNotResponse {
		t.Errorf("notification: %v, want errNotResponse", err)
	}
}

func TestCheckEnvelope(t *testing.T) {
	if err := checkEnvelope(`{"success":true,"toolName":"echo","result":{"text":"hello world"}}`); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{
		`hello world`,
		`{"success":false,"toolName":"echo","error":"it failed"}`,
		`{"success":true,"toolName":"other","result":{"text":"hello world"}}`,
		`{"success":true,"toolName":"echo","result":{"text":"hello"}}`,
		`{"toolName":"echo","result":{"text":"hello world"}}`,
	} {
		if err := checkEnvelope(text); err == nil {
			t.Errorf("accepted %s", text)
		}
	}
}

func TestSSEData(t *testing.T) {
	body := ": keep-alive\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n" +
		"event: message\r\nid: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\r\n\r\n"
	data, ok := sseData([]byte(body))
	if !ok || !strings.HasPrefix(string(data), `{"jsonrpc":"2.0","id":3`) {
		t.Fatalf("sseData = %q, %v", data, ok)
	}
	if _, ok := sseData([]byte(": keep-alive\n\n")); ok {
		t.Fatal("found an answer in a comment")
	}
}
