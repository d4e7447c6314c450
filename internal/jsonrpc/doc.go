// Package jsonrpc is agentmcp's JSON wire layer: the one place that reads
// and writes JSON text on the hot path, for JSON-RPC 2.0 messages
// (https://www.jsonrpc.org/specification) as MCP frames them
// (docs/SPEC.md §4).
//
// It reads with one hand-written walker rather than encoding/json: a frame
// is validated while its members are collected (CheckedMembers), values
// are kept as raw slices of the frame and decoded only when needed, and a
// member name that appears twice in one object is reported, which
// encoding/json cannot do (it keeps the last). On a modern tools/call the
// walk costs about 1 µs and 2 allocations where encoding/json costs 5–6 µs
// and 32. Member names are compared as decoded strings ("\u006dethod" is
// "method"), as encoding/json reads them. Valid and CheckedMembers give
// json.Valid's answer; a fuzz suite holds them to it.
//
// It writes with Append functions that produce, byte for byte, what
// encoding/json (HTML escaping off) writes for the same value, without its
// reflection and buffers; a fuzz suite holds each one to encoding/json.
//
// The package depends on the standard library only, and domain and engine
// both import it (internal/layout).
package jsonrpc
