// Package domain holds agentmcp's protocol-free rules: the tool catalog and its
// validation (docs/SPEC.md §2), the submission tool (§2–§3), the execution envelope and
// its rendering into an MCP tool result (§1, §3), and the prompts a session
// raises through its Caller (§1, §6).
//
// It imports the standard library only, does no I/O, and takes clock and
// randomness from its callers, so every rule here is a pure function that a
// table test can pin.
package domain
