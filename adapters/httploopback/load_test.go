package httploopback_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/adapters/engine"
	"github.com/agentmcp/agentmcp/adapters/httploopback"
	"github.com/agentmcp/agentmcp/internal/hostile"
	"github.com/agentmcp/agentmcp/internal/leakcheck"
	"github.com/agentmcp/agentmcp/internal/load"
)

const loadClients = 64

// TestLoad: 64 clients send 10⁵ tools/call to the loopback host, 5 % of
// them with a wrong token, while three clients misbehave beside them: one
// holds idle connections and reconnects as each is closed, one sends
// batches with large answers and never reads, one abandons input-required
// rounds and calls. Every answer is checked: no valid call refused, none
// answered wrongly, every wrong token refused; afterwards no goroutine is
// left and the live heap is back within 10 % (docs/SPEC.md §5.2, §8).
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	goroutines := leakcheck.Snapshot()
	const stall = 300 * time.Millisecond
	eng, err := engine.New(load.Session{}, engine.Options{AskClient: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := httploopback.NewWithLimits(eng, httploopback.Options{},
		httploopback.Limits{MaxInFlight: 128, MaxConns: 128, WriteStallTimeout: stall})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := h.Start(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimSuffix(strings.TrimPrefix(ep.URL, "http://"), "/mcp")
	post := func(ctx context.Context, c *http.Client, token, body string, modern bool, name string) (int, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, "POST", ep.URL, strings.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", jsonSSE)
		if modern {
			req.Header.Set("MCP-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", "tools/call")
			req.Header.Set("Mcp-Name", name)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}
	wrongTokens := []string{strings.Repeat("0", 64), ep.Token[:63] + "x", "", ep.Token + "0"}

	var batch []string
	for i := range 16 {
		batch = append(batch, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}}}`,
			i, strings.Repeat("x", 60<<10)))
	}
	batchBody := "[" + strings.Join(batch, ",") + "]"
	stuck := []byte(fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: %s\r\nContent-Length: %d\r\n\r\n%s",
		addr, ep.Token, jsonSSE, len(batchBody), batchBody))
	abandonClient := &http.Client{Transport: &http.Transport{}}
	misbehave := func() func() string {
		churn := hostile.Churn(addr, 300)
		neverReads := hostile.Repeat(func(ctx context.Context) error { return hostile.NeverRead(ctx, addr, stuck, 3*stall) })
		abandons := hostile.Repeat(func(ctx context.Context) error {
			status, b, err := post(ctx, abandonClient, ep.Token, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write","arguments":{"text":"x"},`+askMeta+`}}`, true, "write")
			if err != nil || status != 200 || !strings.Contains(string(b), `"input_required"`) {
				return fmt.Errorf("write: %d %s %v", status, b, err)
			}
			// Never retried. Then a call whose client leaves while it runs.
			leave, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			defer cancel()
			_, _, _ = post(leave, abandonClient, ep.Token, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{},`+askMeta+`}}`, true, "slow")
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

	clients := make([]*http.Client, loadClients)
	for i := range clients {
		clients[i] = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	}
	call := func(ctx context.Context, client, seq int) (load.Outcome, string) {
		token, valid := ep.Token, true
		if seq%20 == 0 {
			token, valid = wrongTokens[seq/20%len(wrongTokens)], false
		}
		text := fmt.Sprintf("c%d-s%d", client, seq)
		modern := seq%2 == 1
		meta := ""
		if modern {
			meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
		}
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q}%s}}`, seq, text, meta)
		status, b, err := post(ctx, clients[client], token, body, modern, "echo")
		switch {
		case err != nil:
			return load.Wrong, err.Error()
		case !valid && status == 401:
			return load.OK, ""
		case !valid:
			return load.Wrong, fmt.Sprintf("a wrong token: status %d", status)
		case status == 503:
			return load.Refused, "status 503"
		}
		return judgeEcho(status, b, seq, text)
	}
	// 10⁵ calls; a tenth under the race detector, which slows each several
	// times, so the suite stays quick.
	total := load.Requests(100_000, 10_000)
	rep := load.Scenario{Name: "loopback host", Clients: loadClients, Total: total, Call: call, Misbehave: misbehave,
		Idle: func() {
			for _, c := range clients {
				c.CloseIdleConnections()
			}
		}}.Run(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
	if err := eng.Shutdown(ctx); err != nil {
		t.Errorf("engine Shutdown: %v", err)
	}
	goroutines.Verify(t)

	res := rep.Result
	t.Logf("loopback host: %v", res)
	t.Logf("host idle before: %v; after: %v; goroutines after Stop: %d", rep.Before, rep.After, runtime.NumGoroutine())
	t.Logf("beside them: %s", rep.Misbehaved)
	if res.Requests != total || res.Refused != 0 || res.Wrong != 0 {
		t.Errorf("%d of %d requests answered; %d refused, %d wrong: %q", res.Requests, total, res.Refused, res.Wrong, res.Details)
	}
	if !rep.Settled {
		t.Errorf("live heap after the load %v, before %v: not within 10 %%", rep.After, rep.Before)
	}
}

// judgeEcho checks a tools/call echo answer: 200, the request's id, and
// the echoed text exactly.
func judgeEcho(status int, b []byte, seq int, text string) (load.Outcome, string) {
	var r struct {
		ID     json.RawMessage
		Result struct {
			Content []struct{ Text string }
			IsError bool
		}
		Error *struct{ Message string }
	}
	if status != 200 || json.Unmarshal(b, &r) != nil || string(r.ID) != fmt.Sprint(seq) || r.Error != nil ||
		len(r.Result.Content) != 1 || r.Result.IsError {
		return load.Wrong, fmt.Sprintf("status %d: %.200s", status, b)
	}
	var env struct {
		Success bool
		Result  struct{ Text string }
	}
	if json.Unmarshal([]byte(r.Result.Content[0].Text), &env) != nil || !env.Success || env.Result.Text != text {
		return load.Wrong, fmt.Sprintf("echo of %q: %.200s", text, r.Result.Content[0].Text)
	}
	return load.OK, ""
}
