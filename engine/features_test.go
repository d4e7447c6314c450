package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/enginetest"
	"github.com/agentmcp/agentmcp/internal/fake"
	"github.com/agentmcp/agentmcp/ports"
)

// featured is a fake session that serves f's features.
type featured struct {
	*fake.Session
	f *fake.Features
}

func (s featured) Features() ports.Features { return s.f.Ports() }

func featureClient(t *testing.T, f *fake.Features) *client {
	e := enginetest.New(t, featured{fake.New(), f}, engine.Options{}, 10*time.Second)
	return newClient(t, e)
}

// TestFeaturesPages: resources/list and prompts/list page at
// engine.PageSize with an opaque nextCursor, the last page has none, and
// following the cursors yields every resource once, in order.
func TestFeaturesPages(t *testing.T) {
	c := featureClient(t, &fake.Features{Pages: 2*engine.PageSize + 3})
	var uris []string
	cursor := ""
	for page := 1; ; page++ {
		params := `{}`
		if cursor != "" {
			params = fmt.Sprintf(`{"cursor":%q}`, cursor)
		}
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/list","params":%s}`, page, params))
		res, _ := c.recv()["result"].(map[string]any)
		list, _ := res["resources"].([]any)
		for _, r := range list {
			uris = append(uris, r.(map[string]any)["uri"].(string))
		}
		next, ok := res["nextCursor"].(string)
		if !ok {
			if page != 3 {
				t.Fatalf("page %d is the last, want 3", page)
			}
			break
		}
		if len(list) != engine.PageSize {
			t.Fatalf("page %d holds %d, want %d", page, len(list), engine.PageSize)
		}
		cursor = next
	}
	if len(uris) != 2*engine.PageSize+5 || uris[0] != "fake://text" || uris[len(uris)-1] != fmt.Sprintf("fake://page/%d", 2*engine.PageSize+2) {
		t.Fatalf("got %d resources, first %q last %q", len(uris), uris[0], uris[len(uris)-1])
	}
	seen := map[string]bool{}
	for _, u := range uris {
		if seen[u] {
			t.Fatalf("%s listed twice", u)
		}
		seen[u] = true
	}
}

// TestFeaturesHugeURI: a client's URI of 1 MB is refused -32602 without
// reaching the session and without being echoed back (the answer stays
// small), and the stream goes on serving.
func TestFeaturesHugeURI(t *testing.T) {
	c := featureClient(t, &fake.Features{Panic: true}) // the session must not be reached
	uri := "fake://" + strings.Repeat("a", 1<<20)
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":%q}}`, uri))
	m := c.recv()
	b, _ := json.Marshal(m)
	if e, _ := m["error"].(map[string]any); e == nil || e["code"] != float64(-32602) || len(b) > 512 {
		t.Fatalf("got %.300s, want a short -32602", b)
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if m := c.recv(); m["id"] != float64(2) || m["result"] == nil {
		t.Fatalf("after the huge URI: %v", m)
	}
}

// TestFeaturesPanic: a session that panics in a feature method answers
// -32603 with the fixed message, and the server goes on.
func TestFeaturesPanic(t *testing.T) {
	c := featureClient(t, &fake.Features{Panic: true})
	for i, line := range []string{
		`"method":"resources/list"`,
		`"method":"resources/templates/list"`,
		`"method":"resources/read","params":{"uri":"fake://text"}`,
		`"method":"prompts/list"`,
		`"method":"prompts/get","params":{"name":"greet"}`,
		`"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":""}}`,
	} {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,%s}`, i+1, line))
		e, _ := c.recv()["error"].(map[string]any)
		if e == nil || e["code"] != float64(-32603) || strings.Contains(fmt.Sprint(e["message"]), "told to panic") {
			t.Fatalf("%s: got %v, want -32603 without the panic's value", line, e)
		}
	}
}

// completerOnly serves completion alone.
type completerOnly struct {
	*fake.Session
	c ports.Completer
}

func (s completerOnly) Features() ports.Features { return ports.Features{Completer: s.c} }

// TestFeaturesCompletionBound: at most 100 values go out, with hasMore;
// only completions is declared when only a Completer is served, and
// resources/list is then -32601.
func TestFeaturesCompletionBound(t *testing.T) {
	e := enginetest.New(t, completerOnly{fake.New(), manyValues{}}, engine.Options{}, 10*time.Second)
	c := newClient(t, e)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}`)
	caps, _ := json.Marshal(c.recv()["result"].(map[string]any)["capabilities"])
	if string(caps) != `{"completions":{},"tools":{}}` {
		t.Fatalf("capabilities %s", caps)
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":""}}}`)
	comp := c.recv()["result"].(map[string]any)["completion"].(map[string]any)
	if n := len(comp["values"].([]any)); n != engine.MaxCompletionValues || comp["hasMore"] != true {
		t.Fatalf("got %d values, hasMore %v", n, comp["hasMore"])
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"resources/list"}`)
	if e, _ := c.recv()["error"].(map[string]any); e == nil || e["code"] != float64(-32601) {
		t.Fatalf("resources/list without Resources: %v", e)
	}
}

// manyValues completes with more values than MCP allows in one answer.
type manyValues struct{}

func (manyValues) Complete(_ context.Context, _ ports.CompletionRequest, _ ports.Principal) (ports.Completion, error) {
	v := make([]string, 250)
	for i := range v {
		v[i] = fmt.Sprint(i)
	}
	return ports.Completion{Values: v}, nil
}
