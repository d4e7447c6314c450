package httploopback_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/httploopback"
	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
)

// TestK3RequestWithIDIsAnswered: a request with an id is never taken for a
// notification.
func TestK3RequestWithIDIsAnswered(t *testing.T) {
	e := start(t, fake.New(), httploopback.Limits{})
	resp, b := e.post(t, `{"jsonrpc":"2.0","id":5,"method":"","params":{}}`)
	if r := decode(t, b); resp.StatusCode != 200 || string(r.ID) != "5" || r.Error == nil || r.Error.Code != -32601 {
		t.Errorf("empty method: %d %s, want 200 -32601 id 5", resp.StatusCode, b)
	}
	resp, b = e.post(t, `{"jsonrpc":"2.0","id":null,"method":"tools/list"}`)
	if r := decode(t, b); resp.StatusCode != 400 || r.ID != nil || r.Error == nil || r.Error.Code != -32600 {
		t.Errorf("null id: %d %s, want 400 -32600 without id", resp.StatusCode, b)
	}
}

// TestK4BodySize: 1 MiB + 1 byte → 413 before any parsing, declared (its
// body never sent) or chunked; exactly 1 MiB is served.
func TestK4BodySize(t *testing.T) {
	e := start(t, fake.New(), httploopback.Limits{})
	const limit = 1 << 20

	c := dial(t, e.addr)
	c.send(t, e.head(limit+1), nil)
	if resp, b := c.response(t); resp.StatusCode != 413 || len(b) != 0 {
		t.Errorf("declared 1 MiB + 1: %d %q, want 413 empty", resp.StatusCode, b)
	}

	c = dial(t, e.addr)
	c.send(t, e.head(0, "Content-Length:", "Transfer-Encoding: chunked"), nil)
	go func() {
		// Two chunks, 1 MiB + 1 bytes of a JSON string in all; the server
		// may close before all of it is written.
		w := bufio.NewWriter(c)
		prefix := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"`
		fmt.Fprintf(w, "%x\r\n%s\r\n", len(prefix), prefix)
		rest := limit + 1 - len(prefix)
		fmt.Fprintf(w, "%x\r\n%s\r\n0\r\n\r\n", rest, strings.Repeat("a", rest))
		_ = w.Flush()
	}()
	if resp, b := c.response(t); resp.StatusCode != 413 || len(b) != 0 {
		t.Errorf("chunked 1 MiB + 1: %d %q, want 413 empty", resp.StatusCode, b)
	}

	prefix, suffix := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"`, `"}}`
	body := prefix + strings.Repeat("a", limit-len(prefix)-len(suffix)) + suffix
	if resp, b := e.post(t, body); resp.StatusCode != 200 || decode(t, b).Result == nil {
		t.Errorf("exactly 1 MiB: %d %.200s", resp.StatusCode, b)
	}
}

// TestK6Accept: Accept and Content-Type decisions over the host.
func TestK6Accept(t *testing.T) {
	e := start(t, fake.New(), httploopback.Limits{})
	list := `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`
	resp, b := e.post(t, list, "Accept", "application/json")
	if r := decode(t, b); resp.StatusCode != 406 || r.ID != nil || r.Error == nil || r.Error.Code != -32600 {
		t.Errorf("Accept: application/json → %d %s, want 406 -32600 without id", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("406 Content-Type %q", ct)
	}
	if resp, _ := e.post(t, list, "Content-Type", "text/plain"); resp.StatusCode != 415 {
		t.Errorf("text/plain → %d, want 415", resp.StatusCode)
	}
	if resp, _ := e.post(t, list, "Content-Type", "application/json; charset=utf-8"); resp.StatusCode != 200 {
		t.Errorf("charset → %d, want 200", resp.StatusCode)
	}
	req := e.request(t.Context(), list)
	req.Method = "PUT"
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Errorf("PUT → %d Allow %q, want 405 POST", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// TestK7Batches: arrays only under 2025-03-26.
func TestK7Batches(t *testing.T) {
	e := start(t, fake.New(), httploopback.Limits{})
	batch := `[{"jsonrpc":"2.0","id":2,"method":"ping"}]`
	resp, b := e.post(t, batch, "MCP-Protocol-Version", "2025-11-25")
	if r := decode(t, b); resp.StatusCode != 400 || r.ID != nil || r.Error == nil || r.Error.Code != -32600 {
		t.Errorf("2025-11-25 batch: %d %s, want 400 -32600", resp.StatusCode, b)
	}
	resp, b = e.post(t, `[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":"x","method":"tools/list"}]`,
		"MCP-Protocol-Version", "2025-03-26")
	var arr []rpcReply
	if err := json.Unmarshal(b, &arr); resp.StatusCode != 200 || err != nil || len(arr) != 2 {
		t.Errorf("2025-03-26 batch: %d %s", resp.StatusCode, b)
	}
	resp, b = e.post(t, `[{"jsonrpc":"2.0","method":"notifications/initialized"}]`, "MCP-Protocol-Version", "2025-03-26")
	if resp.StatusCode != 202 || len(b) != 0 {
		t.Errorf("notifications-only batch: %d %q, want 202 empty", resp.StatusCode, b)
	}
}

// TestK9BrokenBody: a body that breaks off gets 400 or nothing, never 500,
// and leaves no goroutine waiting.
func TestK9BrokenBody(t *testing.T) {
	base := leakcheck.Snapshot()
	h, err := httploopback.New(newEngine(t, fake.New(), engine.Options{}), httploopback.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = h.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ep := h.Endpoint()
	e := &env{host: h, ep: ep, addr: strings.TrimSuffix(strings.TrimPrefix(ep.URL, "http://"), "/mcp")}
	conn, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &rawConn{Conn: conn, br: bufio.NewReader(conn)}
	c.send(t, e.head(1000), []byte(`{"jsonrpc"`))
	if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(guard))
	resp, err := http.ReadResponse(c.br, nil)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		// abandoned
	case err != nil:
		t.Fatalf("reading: %v", err)
	case resp.StatusCode != 400:
		t.Fatalf("status %d, want 400", resp.StatusCode)
	default:
		b, _ := io.ReadAll(resp.Body)
		t.Logf("400 %s", b)
	}
	conn.Close()
	if err := h.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	base.Verify(t)
}

// TestBothEras serves a legacy session (initialize, then requests naming
// the negotiated revision) and modern requests (no handshake, headers
// mirroring the body) over real HTTP requests.
func TestBothEras(t *testing.T) {
	e := start(t, fake.New(), httploopback.Limits{})
	t.Run("legacy", func(t *testing.T) {
		resp, b := e.post(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
		if resp.StatusCode != 200 || resp.Header.Get("Mcp-Session-Id") != "" {
			t.Fatalf("initialize: %d, session id %q", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
		}
		var init struct {
			ProtocolVersion string          `json:"protocolVersion"`
			Capabilities    json.RawMessage `json:"capabilities"`
		}
		if err := json.Unmarshal(decode(t, b).Result, &init); err != nil || init.ProtocolVersion != "2025-11-25" || string(init.Capabilities) != `{"tools":{},"tasks":{"cancel":{},"requests":{"tools":{"call":{}}}}}` {
			t.Fatalf("initialize result %s", b)
		}
		v := []string{"MCP-Protocol-Version", "2025-11-25", "Mcp-Session-Id", "ignored", "Last-Event-ID", "7"}
		if resp, _ := e.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, v...); resp.StatusCode != 202 {
			t.Fatalf("initialized: %d", resp.StatusCode)
		}
		_, b = e.post(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, v...)
		var list struct {
			Tools []struct{ Name string } `json:"tools"`
		}
		if err := json.Unmarshal(decode(t, b).Result, &list); err != nil || len(list.Tools) == 0 || list.Tools[len(list.Tools)-1].Name != "agent_submit" {
			t.Fatalf("tools/list %s", b)
		}
		_, b = e.post(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`, v...)
		if text, isErr := toolText(t, decode(t, b)); isErr || !strings.Contains(text, `"result":{"text":"hi"}`) {
			t.Errorf("echo: %s", b)
		}
		_, b = e.post(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"hello"}}}`, v...)
		if text, isErr := toolText(t, decode(t, b)); isErr || text != "echo: hello" {
			t.Errorf("agent_submit: %s", b)
		}
	})
	t.Run("modern", func(t *testing.T) {
		resp, b := e.post(t, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+modernMeta+`}}`, modernHeaders("server/discover", "")...)
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"supportedVersions":["2026-07-28"`) {
			t.Fatalf("discover: %d %s", resp.StatusCode, b)
		}
		_, b = e.post(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{`+modernMeta+`}}`, modernHeaders("tools/list", "")...)
		if !strings.Contains(string(b), `"resultType":"complete"`) || !strings.Contains(string(b), `"agent_submit"`) {
			t.Fatalf("tools/list %s", b)
		}
		_, b = e.post(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},`+modernMeta+`}}`, modernHeaders("tools/call", "echo")...)
		if text, isErr := toolText(t, decode(t, b)); isErr || !strings.Contains(text, `"result":{"text":"hi"}`) {
			t.Errorf("echo: %s", b)
		}
		_, b = e.post(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"hello"},`+modernMeta+`}}`, modernHeaders("tools/call", "agent_submit")...)
		if text, isErr := toolText(t, decode(t, b)); isErr || text != "echo: hello" {
			t.Errorf("agent_submit: %s", b)
		}
		resp, b = e.post(t, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo",`+modernMeta+`}}`, modernHeaders("tools/call", "other")...)
		if r := decode(t, b); resp.StatusCode != 400 || r.Error == nil || r.Error.Code != -32020 {
			t.Errorf("Mcp-Name mismatch: %d %s, want 400 -32020", resp.StatusCode, b)
		}
	})
}

// sseEvents reads an event stream: each event's data, and "" for each
// keep-alive comment.
func sseEvents(r io.Reader) []string {
	var out, data []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		switch line := sc.Text(); {
		case line == ": keep-alive":
			out = append(out, "")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		case line == "" && data != nil:
			out = append(out, strings.Join(data, "\n"))
			data = nil
		}
	}
	return out
}

// TestSSE: progress before the answer → an event stream, for a legacy and
// a modern client; a slow answer → an event stream with keep-alives.
func TestSSE(t *testing.T) {
	s := fake.New()
	started := s.Started()
	e := start(t, s, httploopback.Limits{SSEAfter: 20 * time.Millisecond, KeepAlive: 10 * time.Millisecond})
	for _, tt := range []struct {
		name, body string
		extra      []string
	}{
		{"legacy", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{"n":2},"_meta":{"progressToken":1}}}`, nil},
		{"modern", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"progress","arguments":{"n":2},"_meta":{"progressToken":1,` + modernMeta[len(`"_meta":{`):] + `}}`,
			modernHeaders("tools/call", "progress")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := e.post(t, tt.body, tt.extra...)
			<-started
			if resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("X-Accel-Buffering") != "no" {
				t.Fatalf("headers %v", resp.Header)
			}
			ev := sseEvents(bytes.NewReader(b))
			if len(ev) != 3 || !strings.Contains(ev[0], `"progress":1`) || !strings.Contains(ev[1], `"progress":2`) || decode(t, []byte(ev[2])).Result == nil {
				t.Fatalf("events %q", ev)
			}
		})
	}
	t.Run("slow answer", func(t *testing.T) {
		resp, err := e.client.Do(e.request(t.Context(), slowCall(3)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		<-started
		if resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("Content-Type %q", resp.Header.Get("Content-Type"))
		}
		br := bufio.NewReader(resp.Body)
		for range 2 {
			line, err := br.ReadString('\n')
			if err != nil || line != ": keep-alive\n" {
				t.Fatalf("line %q %v, want a keep-alive comment", line, err)
			}
			br.ReadString('\n')
		}
		s.Release()
		rest, _ := io.ReadAll(br)
		ev := sseEvents(bytes.NewReader(rest))
		if len(ev) == 0 || decode(t, []byte(ev[len(ev)-1])).Result == nil {
			t.Fatalf("events %q", ev)
		}
	})
}

// TestManyClients: 50 concurrent clients, each with its own connections and
// both eras, each receive only their own results.
func TestManyClients(t *testing.T) {
	e := start(t, fake.New(), httploopback.Limits{})
	const clients, rounds = 50, 4
	// At most 12 requests at once, under the host's 16: a client sees 503
	// only in the instant between another's answer and its slot coming
	// back, and retries then.
	sem := make(chan struct{}, 12)
	var wg sync.WaitGroup
	var retried atomic.Int64
	errs := make(chan error, clients*rounds)
	for i := range clients {
		wg.Go(func() {
			tr := &http.Transport{DisableKeepAlives: i%2 == 0}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			for r := range rounds {
				tag := fmt.Sprintf("client-%d-round-%d", i, r)
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s","method":"tools/call","params":{"name":"agent_submit","arguments":{"prompt":"%s"}}}`, tag, tag)
				var extra []string
				if r%2 == 1 {
					body = fmt.Sprintf(`{"jsonrpc":"2.0","id":"%s","method":"tools/call","params":{"name":"echo","arguments":{"text":"%s"},%s}}`, tag, tag, modernMeta)
					extra = modernHeaders("tools/call", "echo")
				}
				b, err := func() ([]byte, error) {
					for attempt := 0; ; attempt++ {
						sem <- struct{}{}
						resp, err := client.Do(e.request(context.Background(), body, extra...))
						<-sem
						if err != nil {
							return nil, err
						}
						b, err := io.ReadAll(resp.Body)
						resp.Body.Close()
						if resp.StatusCode == 503 && attempt < 100 {
							retried.Add(1)
							continue
						}
						if resp.StatusCode != 200 {
							return nil, fmt.Errorf("%s: status %d", tag, resp.StatusCode)
						}
						return b, err
					}
				}()
				if err != nil {
					errs <- err
					continue
				}
				var reply rpcReply
				if err := json.Unmarshal(b, &reply); err != nil {
					errs <- err
					continue
				}
				want := `"` + tag + `"`
				if string(reply.ID) != want || !strings.Contains(string(reply.Result), tag) ||
					strings.Count(string(reply.Result), "client-") != 1 {
					errs <- fmt.Errorf("%s got %s", tag, b)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	t.Logf("%d requests, %d retried after a 503", clients*rounds, retried.Load())
	for err := range errs {
		t.Error(err)
	}
}
