package httploopback_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/agentmcp/agentmcp/adapters/httploopback"
	"github.com/agentmcp/agentmcp/internal/waitfor"
)

// TestCancelNotificationEndsTheCall: a 2025-era client cancels a call by
// POSTing notifications/cancelled while it keeps the original request open
// (the TypeScript SDK, also when its request timeout fires). The call ends
// with the client's cancellation and the open request gets an empty 202,
// which the client takes without an error (docs/SPEC.md §3
// "Cancellation"); the next call is served.
func TestCancelNotificationEndsTheCall(t *testing.T) {
	s := newObserved()
	started := s.Started()
	e := start(t, s, httploopback.Limits{})
	answered := e.postAsync(slowCall(7), "MCP-Protocol-Version", "2025-11-25")
	waitfor.Value(t, started, guard, "the slow call to start")

	resp, body := e.post(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"timeout"}}`,
		"MCP-Protocol-Version", "2025-11-25")
	if resp.StatusCode != http.StatusAccepted || len(body) != 0 {
		t.Fatalf("notifications/cancelled: %d %s, want 202 and no body", resp.StatusCode, body)
	}
	if err := waitfor.Value(t, s.ended, guard, "the slow call to end"); err == nil || err.Error() != "cancelled by the client" {
		t.Errorf("the call's ctx ended with %v, want the client's cancellation", err)
	}
	a := waitfor.Value(t, answered, guard, "the cancelled request's response")
	if a.err != nil || a.status != http.StatusAccepted || len(a.body) != 0 {
		t.Errorf("the cancelled request got %d %q (%v), want an empty 202", a.status, a.body, a.err)
	}
	resp, body = e.post(t, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"text":"next"}}}`)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("next")) {
		t.Errorf("the next call: %d %s", resp.StatusCode, body)
	}
}
