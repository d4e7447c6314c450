package load

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/internal/hostile"
)

// askMeta is a 2026-07-28 request's _meta declaring form elicitation, so
// a call runs under input-required rounds when the engine asks its clients.
const askMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`

// EchoCall is the tools/call of echo with id seq and text; modern adds a
// 2026-07-28 _meta declaring no capabilities. Every carrier's load test
// sends it, so every carrier is judged on the same request.
func EchoCall(seq int, text string, modern bool) string {
	meta := ""
	if modern {
		meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}%s}}`, seq, text, meta)
}

// JudgeEcho checks the answer b to EchoCall(seq, text, …): the request's
// id and the echoed text exactly.
func JudgeEcho(b []byte, seq int, text string) (Outcome, string) {
	var r struct {
		ID     json.RawMessage
		Result struct {
			Content []struct{ Text string }
			IsError bool
		}
		Error *struct{ Message string }
	}
	if json.Unmarshal(b, &r) != nil || string(r.ID) != fmt.Sprint(seq) || r.Error != nil || len(r.Result.Content) != 1 || r.Result.IsError {
		return Wrong, fmt.Sprintf("%.200s", b)
	}
	var env struct {
		Success bool
		Result  struct{ Text string }
	}
	if json.Unmarshal([]byte(r.Result.Content[0].Text), &env) != nil || !env.Success || env.Result.Text != text {
		return Wrong, fmt.Sprintf("echo of %q: %.200s", text, r.Result.Content[0].Text)
	}
	return OK, ""
}

// JudgeHTTPEcho is JudgeEcho for an HTTP answer, which must also be 200.
func JudgeHTTPEcho(status int, b []byte, seq int, text string) (Outcome, string) {
	if status != http.StatusOK {
		return Wrong, fmt.Sprintf("status %d: %.200s", status, b)
	}
	return JudgeEcho(b, seq, text)
}

// HTTPHost is a Streamable HTTP host under load, as its clients reach it.
type HTTPHost struct {
	URL   string // where requests are posted: http://127.0.0.1:<port>/mcp
	Host  string // the Host header they carry
	Addr  string // what misbehaving clients dial: 127.0.0.1:<port>
	Token string // a bearer token the host admits
}

// Post sends body with token as the bearer from c; modern adds the headers
// a 2026-07-28 tools/call of tool name must carry. It returns the status
// and the whole body.
func (h HTTPHost) Post(ctx context.Context, c *http.Client, token, body string, modern bool, name string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", h.URL, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Host = h.Host
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if modern {
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", name)
	}
	// A host at its connection bound closes idle kept-alive connections to
	// admit newcomers (docs/SPEC.md §8), so a request can meet a connection
	// the host closed before reading it: net/http replays such a request
	// on a new connection only when it is marked replayable, as a client
	// that follows RFC 9112 §9.3.1 does. The key is never read by a host.
	req.Header.Set("Idempotency-Key", strconv.FormatUint(idempotencyKeys.Add(1), 10))
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

var idempotencyKeys atomic.Uint64

// HTTPClients are n well-behaved clients, one kept-alive connection each,
// and what closes their idle connections (a Scenario's Idle).
func HTTPClients(n int) (clients []*http.Client, idle func()) {
	clients = make([]*http.Client, n)
	for i := range clients {
		clients[i] = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	}
	return clients, func() {
		for _, c := range clients {
			c.CloseIdleConnections()
		}
	}
}

// Misbehave is a Scenario's Misbehave for h, the same three clients beside
// every HTTP host's load (docs/SPEC.md §8): one holds 300 idle connections
// and reconnects as each is closed; one sends batches with large answers
// and never reads (for three times stall, the host's write-stall timeout);
// one abandons input-required rounds, and calls it leaves while they run.
// What stops them fails t unless each ran as meant.
func (h HTTPHost) Misbehave(t testing.TB, stall time.Duration) func() (stop func() string) {
	var batch []string
	for i := range 16 {
		batch = append(batch, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}}}`,
			i, strings.Repeat("x", 60<<10)))
	}
	batchBody := "[" + strings.Join(batch, ",") + "]"
	stuck := []byte(fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
		h.Host, h.Token, len(batchBody), batchBody))
	abandonClient := &http.Client{Transport: &http.Transport{}}
	return func() func() string {
		churn := hostile.Churn(h.Addr, 300)
		neverReads := hostile.Repeat(func(ctx context.Context) error { return hostile.NeverRead(ctx, h.Addr, stuck, 3*stall) })
		abandons := hostile.Repeat(func(ctx context.Context) error {
			status, b, err := h.Post(ctx, abandonClient, h.Token, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":{"text":"x"},`+askMeta+`}}`, true, "write")
			if err != nil || status != 200 || !strings.Contains(string(b), `"input_required"`) {
				return fmt.Errorf("write: %d %s %v", status, b, err)
			}
			// Never retried. Then a call whose client leaves while it runs.
			leave, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			defer cancel()
			_, _, _ = h.Post(leave, abandonClient, h.Token, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{},`+askMeta+`}}`, true, "slow")
			return nil
		})
		return func() string {
			neverReads.Stop()
			abandons.Stop()
			churn.Stop()
			abandonClient.CloseIdleConnections()
			if neverReads.Rounds() == 0 || abandons.Rounds() == 0 || abandons.Errors() > 0 || churn.Closed() == 0 {
				t.Errorf("a misbehaving client did not run as meant: %d never-read batches, %d abandoned rounds (%d failed), %d idle connections closed",
					neverReads.Rounds(), abandons.Rounds(), abandons.Errors(), churn.Closed())
			}
			return fmt.Sprintf("%d idle connections closed for newcomers, %d never-read batches, %d abandoned rounds",
				churn.Closed(), neverReads.Rounds(), abandons.Rounds())
		}
	}
}
