package engine_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/engine"
	"github.com/agentmcp/agentmcp/internal/fake"
)

const (
	uiCaps     = `{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}`
	viewURI    = "ui://agentmcp/turn"
	linkedMeta = `"_meta":{"ui":{"resourceUri":"ui://agentmcp/turn","visibility":["model"]}}`
)

// submitEntry is the submission tool's entry of a tools/list answer (raw
// JSON text) and the result's cacheScope.
func submitEntry(t *testing.T, body []byte) (string, any) {
	t.Helper()
	var m struct {
		Result struct {
			Tools      []json.RawMessage `json:"tools"`
			CacheScope any               `json:"cacheScope"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &m); err != nil || len(m.Result.Tools) == 0 {
		t.Fatalf("not a tools/list answer: %s", body)
	}
	return string(m.Result.Tools[len(m.Result.Tools)-1]), m.Result.CacheScope
}

func viewEngine(t *testing.T, link engine.ViewLink) *engine.Engine {
	e, err := engine.New(fake.New(), engine.Options{View: engine.ViewOptions{ResourceURI: viewURI, Link: link}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(t, e) })
	return e
}

// TestViewLinkStream: on a stream the initialize capabilities decide: a
// client that declares the UI extension with the app MIME type sees the
// submission tool's _meta.ui; one that does not, or names other MIME
// types, or declares it in a shape that is not the extension's, sees
// exactly the tool an engine without a view lists (docs/SPEC.md §2 "The
// turn view").
func TestViewLinkStream(t *testing.T) {
	plain, err := engine.New(fake.New(), engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(t, plain) })
	list := func(e *engine.Engine, caps string) string {
		c := newClient(t, e)
		c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"t","version":"1"}}}`)
		c.recv()
		c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		_, raw := rawRecv(t, c)
		entry, _ := submitEntry(t, []byte(raw))
		return entry
	}
	today := list(plain, uiCaps)
	if strings.Contains(today, "_meta") {
		t.Fatalf("an engine without a view lists %s", today)
	}
	e := viewEngine(t, engine.ViewAuto)
	if got := list(e, uiCaps); !strings.Contains(got, linkedMeta) {
		t.Errorf("a client that renders apps: %s, want %s", got, linkedMeta)
	}
	for _, caps := range []string{
		`{}`,
		`{"extensions":{"io.modelcontextprotocol/ui":{}}}`,
		`{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html"]}}}`,
		`{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":"text/html;profile=mcp-app"}}}`,
		`{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":[7]}}}`,
		`{"extensions":{"io.modelcontextprotocol/ui":true}}`,
		`{"extensions":{"io.modelcontextprotocol/tasks":{"mimeTypes":["text/html;profile=mcp-app"]}}}`,
	} {
		if got := list(e, caps); got != today {
			t.Errorf("capabilities %s: %s, want today's tool %s", caps, got, today)
		}
	}
	if got := list(viewEngine(t, engine.ViewNever), uiCaps); got != today {
		t.Errorf("ViewNever: %s, want today's tool", got)
	}
	if got := list(viewEngine(t, engine.ViewAlways), `{}`); !strings.Contains(got, linkedMeta) {
		t.Errorf("ViewAlways, a client that declared nothing: %s, want the link", got)
	}
}

// TestViewLinkExchange: a 2026-07-28 request's _meta client capabilities
// decide per request (the list differs per client, and its cacheScope is
// private either way); a legacy HTTP request carries none, so only
// ViewAlways links it there.
func TestViewLinkExchange(t *testing.T) {
	modern := func(caps string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`)
	}
	modernHeaders := engine.Headers{ProtocolVersion: "2026-07-28", HasProtocolVersion: true, Method: "tools/list", HasMethod: true}
	legacy := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	legacyHeaders := engine.Headers{ProtocolVersion: "2025-11-25", HasProtocolVersion: true}
	for _, tc := range []struct {
		name string
		link engine.ViewLink
		body []byte
		h    engine.Headers
		want bool
	}{
		{"modern, declared", engine.ViewAuto, modern(uiCaps), modernHeaders, true},
		{"modern, not declared", engine.ViewAuto, modern(`{"elicitation":{}}`), modernHeaders, false},
		{"modern, never", engine.ViewNever, modern(uiCaps), modernHeaders, false},
		{"legacy HTTP, auto", engine.ViewAuto, legacy, legacyHeaders, false},
		{"legacy HTTP, always", engine.ViewAlways, legacy, legacyHeaders, true},
		{"legacy HTTP, never", engine.ViewNever, legacy, legacyHeaders, false},
	} {
		e := viewEngine(t, tc.link)
		r := e.Exchange(t.Context(), tc.body, engine.ExchangeOptions{Headers: tc.h})
		entry, scope := submitEntry(t, r.Body)
		if got := strings.Contains(entry, linkedMeta); got != tc.want || strings.Contains(entry, "_meta") != tc.want {
			t.Errorf("%s: %s, want the link %v", tc.name, entry, tc.want)
		}
		if tc.h.Method != "" && scope != "private" {
			t.Errorf("%s: cacheScope %v, want private", tc.name, scope)
		}
	}
}

// TestViewDeclared: an engine that links a view declares the extension
// among its capabilities' extensions, in initialize and server/discover
// (the extensions' negotiation: both sides declare it); one that links
// none, or never, declares nothing new.
func TestViewDeclared(t *testing.T) {
	const ui = `"io.modelcontextprotocol/ui":{}`
	for _, tc := range []struct {
		opts engine.ViewOptions
		want bool
	}{
		{engine.ViewOptions{ResourceURI: viewURI}, true},
		{engine.ViewOptions{ResourceURI: viewURI, Link: engine.ViewNever}, false},
		{engine.ViewOptions{}, false},
	} {
		e, err := engine.New(fake.New(), engine.Options{View: tc.opts})
		if err != nil {
			t.Fatal(err)
		}
		c := newClient(t, e)
		c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		_, init := rawRecv(t, c)
		c.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
		_, disc := rawRecv(t, c)
		if strings.Contains(init, `"extensions":{`+ui+`}`) != tc.want || strings.Contains(disc, `"extensions":{"io.modelcontextprotocol/tasks":{},`+ui+`}`) != tc.want {
			t.Errorf("%+v: initialize %s\nserver/discover %s\nwant the extension declared %v", tc.opts, init, disc, tc.want)
		}
		if !strings.Contains(disc, `"io.modelcontextprotocol/tasks":{}`) {
			t.Errorf("%+v: server/discover lost the tasks extension: %s", tc.opts, disc)
		}
		shutdown(t, e)
	}
}

// TestViewURIChecked: a view that is not a ui:// resource fails New.
func TestViewURIChecked(t *testing.T) {
	for _, uri := range []string{"https://example.com/view", "ui://", "file:///x.html"} {
		if _, err := engine.New(fake.New(), engine.Options{View: engine.ViewOptions{ResourceURI: uri}}); err == nil {
			t.Errorf("ResourceURI %q: New succeeded", uri)
		}
	}
}
