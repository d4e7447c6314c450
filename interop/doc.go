// Package interop holds interoperability tests that drive the real
// agentmcp binary ("agentmcp serve stdio", "serve http", "serve unix") with MCP
// clients nobody on this project wrote: the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), mark3labs/mcp-go's client
// (github.com/mark3labs/mcp-go) and, through Node, the official TypeScript
// SDK (interop/ts).
//
// gosdk_test.go and ts_test.go (ts/interop.mjs) run both clients against
// "serve stdio" and "serve http" (the bearer token from --token-file): list
// the tools, read a real file, call an unknown tool and agent_submit; the Go
// client in both eras, checking over HTTP that the host never hands out an
// Mcp-Session-Id. unix_test.go runs the Go client's scenario over
// "serve unix" (its IOTransport on the socket's connection, both eras).
//
// ask_test.go holds the --ask-client scenarios (docs/SPEC.md §6): write_file's
// permission and overwrite-or-keep prompts answered by the TypeScript
// client's elicitation handler over legacy stdio (ts_ask_test.go,
// ts/elicit.mjs) and by the Go client's elicitation handler through
// input-required rounds at 2026-07-28, on stdio and on the loopback host
// (gosdk_ask_test.go, httphost_test.go).
//
// gosdk_agent_test.go and ts_agent_test.go (ts/agent.mjs) drive the agent
// behind agent_submit (docs/SPEC.md §9): the binary runs with --model and
// --model-url naming a scripted Chat Completions endpoint on 127.0.0.1
// (chat_test.go), the one stand-in, since no model can run here. Each client
// submits a prompt with a progressToken, receives progress, approves the
// model's write_file (legacy elicitation on stdio for the TypeScript client,
// an input-required round at 2026-07-28 on the loopback host for the Go
// client) and gets the final answer; then a cancelled agent_submit ends its
// turn (the endpoint sees its request cancelled) and the next one works.
//
// mcpgo_tasks_test.go drives experimental tasks on 2025-11-25 (docs/SPEC.md
// §14) with mark3labs/mcp-go's client over stdio against the scripted
// endpoint: agent_submit as a task with a ttl and a progressToken, its
// write_file approval answered by the client's elicitation handler (tagged
// with the related task), tasks/result, WaitForTask, the progress and
// notifications/tasks/status it received, a task cancelled with tasks/cancel
// while the model streams, and tasks/list.
//
// cancel_test.go holds cancellation over HTTP (docs/SPEC.md §3, §6, §9):
// the TypeScript client (ts/agent.mjs on "serve http") aborts an
// agent_submit and lets another's request timeout fire — it POSTs
// notifications/cancelled and keeps the request open — and each time the
// endpoint sees the model request cancelled and the next agent_submit is
// served; a raw 2026-07-28 client abandons the agent's write approval, its
// read_file is served at once and, once the turn has stopped after
// --approval-timeout (the "turn finished" log line, waited for as an event),
// its next agent_submit is served.
//
// gosdk_subscribe_test.go and ts_subscribe_test.go (ts/subscribe.mjs) hold
// resource subscriptions (docs/SPEC.md §2 "Subscriptions"): each client,
// over stdio (the Go client in both eras: resources/subscribe, and
// subscriptions/listen at 2026-07-28), subscribes to workspace files and a
// conversation and receives notifications/resources/updated when an
// editor saves a file, it is written in place, the agent's approved turn
// writes it, it is removed, or a turn is stored; once unsubscribed from a
// file it is not told of it again.
//
// It is a separate Go module so that the main module never depends on an MCP
// SDK. "go test ./..." from the repository root does not enter it; run
// scripts/test.sh, which runs both modules and installs the npm packages the
// TypeScript client needs.
//
// TestMain builds ./app/cmd/agentmcp of the root module once (with -race when
// the tests run with it). go test's result cache cannot see that binary's
// sources, so run these tests with -count=1, as scripts/test.sh does.
//
// The package has no non-test code.
package interop
