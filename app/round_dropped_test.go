package app_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/app"
	"github.com/agentmcp/agentmcp/internal/hostile"
	"github.com/agentmcp/agentmcp/ports"
)

// turnEnds is an Observer that reports each agent turn's end.
type turnEnds struct {
	ports.NopObserver
	ended chan string // error.type of each ended turn
}

func (o *turnEnds) StartTurn(ctx context.Context, _ ports.ObservedTurn) (context.Context, func(ports.TurnEnd)) {
	return ctx, func(e ports.TurnEnd) { o.ended <- e.ErrorType }
}

// TestDroppedRetryEndsParkedCall: a 2026-07-28 client's agent_submit is
// parked on its write's approval (input_required); the client retries
// without an answer (docs/SPEC.md §6: the same prompt again under a fresh
// token) from a raw socket that closes as soon as it has sent the retry.
// Nobody holds the fresh token, so the parked call ends: the prompt
// settles closed, the turn ends, and the next agent_submit is served
// (issue 30: the call was re-parked under the fresh token and the
// conversation stayed busy until --approval-timeout).
func TestDroppedRetryEndsParkedCall(t *testing.T) {
	const elicit = `{"elicitation":{"form":{}}}`
	for _, carrier := range []string{"http", "unix"} {
		t.Run(carrier, func(t *testing.T) {
			root := t.TempDir()
			model := writingModel(t)
			obs := &turnEnds{ended: make(chan string, 8)}
			c := serveOverWith(t, carrier, app.MainOptions{Observer: obs}, "--root", root, "--ask-client",
				"--model", "m", "--model-url", model.URL, "--ephemeral", "--no-model-probe")
			first := c.do(modernCall(1, "tools/call", `"name":"agent_submit","arguments":{"prompt":"write x.txt"}`, elicit), 1, "tools/call", "agent_submit")
			r, _ := first["result"].(map[string]any)
			token, _ := r["requestState"].(string)
			if r["resultType"] != "input_required" || token == "" {
				t.Fatalf("the call = %v, want it parked on the write's approval", first)
			}
			retry := modernCall(2, "tools/call", `"name":"agent_submit","arguments":{"prompt":"write x.txt"},"requestState":"`+token+`"`, elicit)
			var raw net.Conn
			var msg string
			switch carrier {
			case "http":
				u, err := url.Parse(c.url)
				if err != nil {
					t.Fatal(err)
				}
				if raw, err = net.Dial("tcp", u.Host); err != nil {
					t.Fatal(err)
				}
				msg = fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
					"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"+
					"Mcp-Name: agent_submit\r\nContent-Length: %d\r\n\r\n%s", u.Path, u.Host, c.token, len(retry), retry)
			case "unix":
				// A round is valid only on the stream that minted it: the
				// retry comes on that connection, which then closes.
				raw, msg = c.w.(net.Conn), retry+"\n"
			}
			// At once: nobody reads the fresh token.
			if tcp, ok := raw.(*net.TCPConn); ok {
				if err := hostile.SendAndLeave(tcp, []byte(msg)); err != nil {
					t.Fatal(err)
				}
			} else {
				if _, err := io.WriteString(raw, msg); err != nil {
					t.Fatal(err)
				}
				raw.Close()
			}
			select {
			case <-obs.ended:
			case <-time.After(30 * time.Second): // a hang guard: the approval timeout is 5 minutes
				t.Fatal("the parked turn did not end after its retry's connection closed")
			}
			if _, err := os.Stat(filepath.Join(root, "x.txt")); err == nil {
				t.Error("the unapproved write landed")
			}
			if carrier == "unix" {
				c.redial()
			}
			next := c.do(modernCall(3, "tools/call", `"name":"agent_submit","arguments":{"prompt":"hello"}`, elicit), 3, "tools/call", "agent_submit")
			if text, _ := submitTextOf(next); text != "served: hello" {
				t.Errorf("the next agent_submit = %v, want it served", next)
			}
		})
	}
}
