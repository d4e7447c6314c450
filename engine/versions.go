package engine

// supportedVersions are the protocol revisions served, newest first
// (docs/SPEC.md §4): server/discover's supportedVersions and -32022's
// data.supported.
var supportedVersions = [...]string{ModernVersion, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// supportedVersionsJSON is supportedVersions as a JSON array.
const supportedVersionsJSON = `["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"]`

// SupportedVersions returns the protocol revisions served, newest first
// (docs/SPEC.md §4). The slice is a fresh copy.
func SupportedVersions() []string { return append([]string(nil), supportedVersions[:]...) }

const (
	// ModernVersion is the one stateless revision served.
	ModernVersion = "2026-07-28"
	// latestLegacyVersion is what initialize answers when the client asks
	// for a revision it cannot have over initialize (2026-07-28 included).
	latestLegacyVersion = "2025-11-25"
	// defaultLegacyVersion is assumed for a legacy request that names no
	// revision: before initialize on a connection, and on HTTP without
	// MCP-Protocol-Version (Streamable HTTP 2025-06-18 §"Protocol Version
	// Header").
	defaultLegacyVersion = "2025-03-26"
)

// isLegacyVersion reports whether v is one of the initialize-era revisions.
func isLegacyVersion(v string) bool {
	switch v {
	case "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05":
		return true
	}
	return false
}

// batchesAllowed reports whether a legacy revision allows JSON-RPC batches:
// only 2025-03-26 (added there, removed in 2025-06-18).
func batchesAllowed(v string) bool { return v == "2025-03-26" }

// Reserved _meta keys (MCP 2026-07-28 §"Request metadata").
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo" // read by nobody; named so its name is not copied
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
	metaProgressToken      = "progressToken"
)
