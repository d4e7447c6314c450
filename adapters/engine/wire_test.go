package engine_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentmcp/agentmcp/adapters/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
)

// TestInvalidUTF8IDIsRefused: an id whose bytes are not UTF-8 cannot be
// echoed as JSON text, so the request is -32600 with no id, and nothing
// written is invalid UTF-8.
func TestInvalidUTF8IDIsRefused(t *testing.T) {
	e, _ := engine.New(fake.New(), engine.Options{})
	c := newClient(t, e)
	c.send("{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":\"ping\"}")
	b := <-c.out
	if !utf8.Valid(b) || !strings.Contains(string(b), `"code":-32600`) || strings.Contains(string(b), `"id"`) {
		t.Errorf("answer %q, want -32600 without an id, valid UTF-8", b)
	}
}
