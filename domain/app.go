package domain

// Names of MCP Apps on the wire (SEP-1865, the io.modelcontextprotocol/ui
// extension, https://github.com/modelcontextprotocol/ext-apps, revision
// 2026-01-26): a client that renders apps declares UIExtension in its
// capabilities' extensions with AppMIMEType among its mimeTypes; a tool
// links its view by _meta.ui.resourceUri, a ui:// resource of that MIME
// type (docs/SPEC.md §2 "The turn view").
const (
	UIExtension = "io.modelcontextprotocol/ui"
	AppMIMEType = "text/html;profile=mcp-app"
	// AppScheme is the URI scheme of an app's view resource.
	AppScheme = "ui://"
)
