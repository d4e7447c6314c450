// Package httpremote is agentmcp's remote Streamable HTTP host (docs/SPEC.md §5.3):
// it serves one session to remote MCP clients as an OAuth 2.0 protected
// resource (RFC 9728, RFC 6750, MCP "Authorization"), admitting only
// requests whose bearer access token the configured
// [ports.AccessTokenVerifier] accepts. It has no open mode, and the loopback
// host's token means nothing here (it is one more token the verifier
// refuses).
//
// The host speaks plain HTTP/1.1 and expects a TLS-terminating reverse proxy
// in front of it, on the same machine by default (it binds 127.0.0.1 unless
// told otherwise). Everything a client sees is derived from the public URL,
// never from the listener:
//
//	public URL          https://mcp.example.com/team/agent/mcp
//	endpoint path       /team/agent/mcp
//	metadata path       /.well-known/oauth-protected-resource/team/agent/mcp   (RFC 9728 §3.1)
//	metadata URL        https://mcp.example.com/.well-known/oauth-protected-resource/team/agent/mcp
//	accepted Host       mcp.example.com, mcp.example.com:443 (any case)
//	accepted Origin     absent, or https://mcp.example.com
//
// so the proxy must forward the path unchanged and keep the Host header
// (nginx: proxy_pass without a URI part, proxy_set_header Host $http_host).
//
// # Per request, in order, before the body is read
//
//	request line and headers over 16 KiB      431, empty; not counted, no audit
//	Host not accepted, or a foreign Origin    403, empty; not counted, no audit
//	metadata path, GET                        200, the RFC 9728 document (unauthenticated)
//	metadata path, other methods              405, Allow: GET, empty
//	any other target than the endpoint path   404, empty; not counted, no audit
//	no bearer token                           missing-token (below)
//	a cached successful verification          admitted
//	verifications already at the cap (64)     503, Retry-After: 1, empty; not counted, no audit
//	the verifier's verdict                    admitted, or its refusal (below)
//
// The metadata document is, with its keys in this order:
//
//	{"resource":<public URL>,"authorization_servers":[<issuer>],"scopes_supported":[<scopes>],"bearer_methods_supported":["header"]}
//
// An admitted request goes on to the shared Streamable HTTP framing
// (adapters/streamable, docs/SPEC.md §4), bound to its principal (issuer, subject,
// client), so input-required rounds (docs/SPEC.md §6) are never shared between
// principals. The hosts are stateless: no Mcp-Session-Id is ever minted,
// echoed or required.
//
// # Refusals
//
// Every refusal has an empty body; no challenge carries a realm or an
// error_description. <metadataURL> is the metadata URL above and <scopes>
// the configured scopes joined by single spaces.
//
//	refusal                          status  WWW-Authenticate                                                                       counted
//	missing-token                    401     Bearer resource_metadata="<metadataURL>"                                                yes
//	missing-scope                    403     Bearer error="insufficient_scope", scope="<scopes>", resource_metadata="<metadataURL>"  no
//	principal-not-allowed            403     none: the token is genuine, re-authorising will not help                                 no
//	expired, not-yet-valid,
//	  wrong-audience                 401     Bearer error="invalid_token", resource_metadata="<metadataURL>"                         no
//	any other refusal (the token
//	  was not proven genuine)        401     Bearer error="invalid_token", resource_metadata="<metadataURL>"                         yes
//	keys-unavailable                 503     none (the issuer failed, not the client)                                                 no
//	a counted refusal over budget    429     none; Retry-After: <seconds until the budget allows one more, at least 1>               —
//
// A token is always verified before anything is counted, so a valid token is
// never throttled, even from an address over its budget, and neither is a
// genuine but expired one.
//
// # Throttle
//
// Each counted refusal spends one token of its client's budget, a
// golang.org/x/time/rate bucket of [ThrottleBurst] (20) refilling
// [ThrottlePerMinute] (20) per minute. Over budget, the refusal is answered
// 429 and spends nothing. Clients are keyed by IPv4 address or IPv6 /64; at
// most [MaxThrottledClients] (4096) are tracked and the one counted least
// recently is forgotten first (an idle one, whose bucket is full again,
// whenever there is one). A peer address that cannot be parsed is "unknown"
// and all such peers share one budget.
//
// # Client address
//
// The socket peer, unless the peer is one of the trusted proxies; then
// X-Forwarded-For (all its values joined by ",") is read right to left and
// the first hop that is not a trusted proxy is the client. Hops further left
// were written by the client and are never believed. A hop that is not a
// literal IP (a name, an address with a port, an empty field) makes the
// proxy itself the client. IPv4-mapped IPv6 addresses fold to IPv4.
//
// Bound to loopback without a trusted proxy, every client arrives from the
// proxy's address and so shares one budget: the host logs a warning at
// start. Bound to any other address it logs that TLS must be terminated in
// front: the host itself never speaks TLS.
//
// # Audit
//
// Every refusal of the table above produces exactly one [ports.AuditRecord]
// {Refusal, Remote, Throttled}; a 429 keeps the real refusal with Throttled
// set. Remote is the class of the client address — loopback, private,
// public or unknown — never the address itself, and no record carries the
// token or a claim value. Admitted requests, and the 431/403/404/405/503
// answers above that precede a verdict, produce none.
//
// # Verification cache
//
// Successful verifications are cached, keyed by the SHA-256 of the token
// (the token itself is not kept), at most [MaxCachedVerdicts], each until
// the earliest of the token's exp, the verifier's next key refresh when it
// reports one ([ports.KeyRefreshReporter]) and [VerdictCacheTTL] (1 minute). At
// most 64 verifications run at once; a cache hit needs none.
//
// # Limits
//
// After admission the host serves like the loopback host (docs/SPEC.md §5.2): 16
// requests in flight, 1 MiB bodies, 5 s to read the headers, 15 s to read a
// body, 30 s for a stalled response write, no bound on a call. Its
// connection caps are its own: 256 open connections in all (at the cap the
// one idle longest makes room for the next, as on the loopback host), 16
// per client address (at its cap an address's own oldest idle connection
// makes room at once; with all 16 active the next is closed unanswered;
// trusted proxies count against the total only, since every client behind
// one shares its address), and a 60 s idle timeout.
//
// Lifecycle: the Host is an [engine.Carrier] (docs/SPEC.md §5): [New] →
// [Host.Start] → [Host.Addr] → [Host.Wait] / [Host.Stop], then the engine's
// Shutdown ([engine.Engine.Run] does the last two in order). A host serves
// once; a second Start, or a Start after Stop, fails.
package httpremote
