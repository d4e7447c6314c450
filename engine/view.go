package engine

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/agentmcp/agentmcp/domain"
	"github.com/agentmcp/agentmcp/internal/jsonrpc"
)

// The turn view (docs/SPEC.md §2 "The turn view"): the submission tool
// links an MCP App view (SEP-1865) by _meta.ui for a client that renders
// apps. The engine only decides who sees the link; the session serves the
// view and what it reads (resources/read).

// ViewLink says which clients tools/list links the view for.
type ViewLink uint8

const (
	// ViewAuto links it for a client whose capabilities declare the
	// io.modelcontextprotocol/ui extension with text/html;profile=mcp-app
	// among its mimeTypes: a stream's initialize capabilities, a
	// 2026-07-28 request's _meta. A legacy HTTP request carries none, so
	// it gets no link.
	ViewAuto ViewLink = iota
	// ViewAlways links it for every client, whatever it declared (a host
	// that renders apps over legacy HTTP; a client that does not render
	// them ignores _meta.ui).
	ViewAlways
	// ViewNever links it for no client.
	ViewNever
)

// ViewOptions links the submission tool to a view the session serves.
type ViewOptions struct {
	// ResourceURI is the view's resource, a ui:// URI the session's
	// resources/read answers with domain.AppMIMEType; "" links none.
	ResourceURI string
	// Link says for which clients (default ViewAuto).
	Link ViewLink
}

var errViewURI = errors.New("engine: the view's ResourceURI must be a ui:// URI")

// uiExtensionCap is the extension as the server declares it, among its
// capabilities' extensions (initialize, server/discover) whenever it
// links a view: the extension has no server settings, so {}.
const uiExtensionCap = `"` + domain.UIExtension + `":{}`

// viewMeta is the submission tool's _meta when it links the view: the
// resource, and visibility ["model"], so a host never lets an app call
// the submission tool (the view calls no tool: docs/SPEC.md §2).
func viewMeta(o ViewOptions) (json.RawMessage, error) {
	switch {
	case o.ResourceURI == "" || o.Link == ViewNever:
		return nil, nil
	case !strings.HasPrefix(o.ResourceURI, domain.AppScheme) || len(o.ResourceURI) == len(domain.AppScheme):
		return nil, errViewURI
	}
	b := jsonrpc.AppendString([]byte(`{"ui":{"resourceUri":`), o.ResourceURI)
	return append(b, `,"visibility":["model"]}}`...), nil
}

// linksView reports whether in's tools/list links the view: always, or
// for a client that declared the extension (a modern request in its
// _meta, a legacy one on the stream's initialize).
func (e *Engine) linksView(p *peer, in *inbound) bool {
	switch {
	case e.viewMeta == nil:
		return false
	case e.viewAlways:
		return true
	case in.modern:
		return declaresView(in.clientCaps())
	}
	return p.origin.rendersApps()
}

// declaresView reports whether capabilities (a ClientCapabilities object)
// declare the UI extension with the app MIME type:
// "extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app",…]}}.
// The MIME type is compared exactly, as the extension's SDK does.
func declaresView(caps []byte) bool {
	v, ok := declared(caps, "extensions", domain.UIExtension, "mimeTypes")
	if !ok || jsonrpc.FirstByte(v) != '[' {
		return false
	}
	var types []string
	return json.Unmarshal(v, &types) == nil && slices.Contains(types, domain.AppMIMEType)
}
