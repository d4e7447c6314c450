package transcript_test

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/agentmcp/agentmcp/transcript"
)

// specRows lists every docs/SPEC.md row (§1–§4 as they apply to stdio, §6 as it
// applies to stdio and the loopback host) and every stdio wire case of its
// appendix (K1–K9) that a transcript must pin, with the docs/SPEC.md text it
// stands for. TestRowCoverage fails when a row has no
// transcript whose rows: header names it, or a header names an unknown row.
//
// Left out on purpose, because they cannot be exercised over stdio: the HTTP
// statuses and headers of §4 (-32020 header mismatch, 202/400/404/405/406/
// 413/415/503, SSE, the 16-element HTTP batch bound) and K6, K8, K9; and
// the 500-byte cut of §1 (the fake session has no long error; domain's
// ClientMessage tests cover it). From §6: ask prompts (the fake session
// raises permission prompts only; domain's form tests and the workspace
// session cover asks and masked asks), the 30-minute lifetime and its timer
// (engine tests on a fake clock), the 64-per-host bound, a token presented
// by another principal (one transcript is one stdio stream, and the loopback
// host is one principal; the engine tests cover it) and a cancelled or
// disconnected HTTP retry.
var specRows = []struct{ id, text string }{
	// §1 the session port, as seen on the wire.
	{"spec1-progress", "Progress(ctx, progress, total, message) → sends notifications/progress when the request carried a progressToken; otherwise does nothing."},
	{"spec1-closed-caller", "A closed Caller (AskClient off …) answers deny / cancelled at once, so the session's own wrapper produces its visible tool error."},
	{"spec1-error-first-line", "Error messages are client-visible: the transport sends only their first line, at most 500 bytes."},

	// §2 what the server exposes.
	{"spec2-capabilities", "Capabilities: exactly {\"tools\":{}} for a session that serves no other feature."},
	{"spec2-unadvertised-methods", "prompts/list, resources/list and every other unknown method get -32601 (resources, prompts and completion only for a session that serves them)."},
	{"spec2-features", "A session with ports.Features: prompts, resources and completions declared beside tools, in both eras; never listChanged."},
	{"spec2-resources", "resources/list (paged), resources/templates/list, resources/read (text, base64 blob); a session's refusal is -32602 with data.uri."},
	{"spec2-subscribe-stream", "Legacy resources/subscribe and unsubscribe answer {}; a stream declares resources.subscribe, holds each URI once until unsubscribed or its end, and sends notifications/resources/updated {uri} for it; the session's refusals are -32602 with data.uri."},
	{"spec2-subscribe-http", "Over legacy HTTP resources/subscribe is checked like a stream's and answers {}, but nothing is held or delivered, and resources.subscribe is not declared."},
	{"spec2-listen", "2026-07-28: subscriptions/listen acknowledges first (the honoured subset), tags every notification with the request id as subscriptionId, and ends with a result carrying it when the server ends it; resources/subscribe and unsubscribe are -32601 (HTTP 404)."},
	{"spec2-prompts", "prompts/list (paged), prompts/get (text, image, embedded resource); unknown prompt or missing argument -32602."},
	{"spec2-completion", "completion/complete: ref/prompt or ref/resource, at most 100 values, hasMore when more."},
	{"spec2-sep2164", "An unknown resource is -32602 with data.uri in both eras (SEP-2164), not 2025-11-25's -32002."},
	{"spec2-caching", "Modern resources/list and resources/read carry ttlMs 0, the templates and prompts lists the list TTL; cacheScope private (SEP-2549)."},
	{"spec2-tools-list", "tools/list: the runtime tools in the session's order, each exactly {name, description, inputSchema} (never an outputSchema), then the submission tool last."},
	{"spec2-cursor", "One page, no nextCursor; any cursor → -32602."},
	{"spec2-submit-tool", "Submission tool: default name agent_submit, description \"Submit a prompt to the agent and await its turn\", input schema exactly {\"type\":\"object\",\"properties\":{\"prompt\":{\"type\":\"string\",\"minLength\":1}},\"required\":[\"prompt\"],\"additionalProperties\":false}."},
	{"spec2-catalog-invalid-name", "every runtime tool name must match ^[A-Za-z0-9._-]{1,128}$ — Invalid MCP tool name: <name>"},
	{"spec2-catalog-duplicate", "names unique — Duplicate or reserved MCP tool name: <name>"},
	{"spec2-catalog-reserved", "names not the submission tool's — Duplicate or reserved MCP tool name: <name>"},
	{"spec2-catalog-schema", "every inputSchema a JSON object with \"type\":\"object\" — Tool <name> has an invalid input schema: the root type must be \"object\""},
	{"spec2-catalog-after-start", "After start, tools/list answers -32603 with that message; tools/call a tool error with it."},

	// §3 tools/call.
	{"spec3-tool-error-shape", "A tool error is {\"content\":[{\"type\":\"text\",\"text\":<message>}],\"isError\":true}."},
	{"spec3-name-invalid", "params.name missing or not a string → -32602."},
	{"spec3-arguments-absent", "arguments absent → {}."},
	{"spec3-arguments-not-object", "arguments not a JSON object → -32602."},
	{"spec3-shutting-down", "The server is stopping → tool error server is shutting down."},
	{"spec3-catalog-call", "Catalog validation fails → tool error with its message."},
	{"spec3-submit-bad-prompt", "arguments.prompt must be a non-empty string and no other key may be present, else tool error <submitName> requires a non-empty string prompt and no other arguments (the session is not called)."},
	{"spec3-submit-success", "submission success → {\"content\":[{\"type\":\"text\",\"text\":<response>}]} (no isError)."},
	{"spec3-submit-refused", "submission refused → tool error with its message."},
	{"spec3-submit-failed", "submission failed inside the turn → JSON-RPC -32603 with its message."},
	{"spec2-submit-conversations", "For a session that keeps conversations the submission tool's input schema adds the optional strings conversation and fork_from (the name rule as their pattern), and a client of 2025-06-18 or later also sees its outputSchema; an older client sees no outputSchema."},
	{"spec3-submit-conversation-args", "conversation and fork_from, when given, are strings that follow the name rule, else a tool error (the session is not called); any other key is a tool error."},
	{"spec3-submit-structured", "A conversational success carries the response as its text block and, for a client of 2025-06-18 or later, structuredContent {\"response\", ...the turn report}."},
	{"spec3-unknown-tool", "Name not in the catalog → tool error Unknown tool: <name>; the session is not called."},
	{"spec3-envelope", "Envelope e → {\"content\":[{\"type\":\"text\",\"text\":<e serialised>}],\"isError\":<!e.success>}."},
	{"spec3-session-error", "Session error → tool error with its message."},
	{"spec3-session-panic", "A session that panics in InvokeTool or Submit: the call answers -32603 with a fixed message (never the panic's value) and the server goes on serving."},
	{"spec3-cancel", "stdio: notifications/cancelled {requestId}; afterwards no response is written for that id."},
	{"spec3-cancel-ignored", "An unknown or finished id is ignored."},
	{"spec3-eof", "On stdin EOF the stdio carrier stops reading, lets in-flight calls finish and write for up to 5 s, cancels the rest, and Wait returns nil."},

	// §4 revisions, JSON-RPC and framing.
	{"spec4-era-modern", "A request is modern when its params._meta holds the key io.modelcontextprotocol/protocolVersion (any value); otherwise it is legacy."},
	{"spec4-modern-after-initialize", "A modern request after an initialize is still served as modern."},
	{"spec4-negotiate", "initialize negotiates: the client's version if it is a legacy one we support, else 2025-11-25."},
	{"spec4-negotiate-2026", "A client asking for 2026-07-28 gets 2025-11-25."},
	{"spec4-initialized", "notifications/initialized."},
	{"spec4-ping", "ping → {}."},
	{"spec4-pre-initialize", "On stdio a legacy request before initialize is served with 2025-03-26 semantics."},
	{"spec4-second-initialize", "A second initialize → -32600."},
	{"spec4-batch-2025-03-26", "Batches (arrays) only under 2025-03-26."},
	{"spec4-batch-refused", "An array under any other revision → -32600."},
	{"spec4-batch-bound", "At most 64 elements on stdio."},
	{"spec4-batch-empty", "[] → -32600."},
	{"spec4-batch-initialize", "initialize inside a batch → -32600 for that element."},
	{"spec4-batch-notifications", "A batch of notifications only → no output."},
	{"spec4-batch-one-array", "Batch responses are one JSON array."},
	{"spec4-modern-meta", "params._meta or its protocolVersion or clientCapabilities key missing → -32602."},
	{"spec4-modern-version", "Version not supported → -32022 with data:{supported,requested}."},
	{"spec4-modern-method", "Unknown or removed method (initialize, ping, logging/setLevel, …) → -32601."},
	{"spec4-modern-discover", "server/discover → {resultType:\"complete\", supportedVersions, capabilities:{\"tools\":{}}, ttlMs, cacheScope}."},
	{"spec4-modern-result", "Every modern result carries resultType; list and discover results carry ttlMs and cacheScope:\"private\"; every modern result's _meta carries io.modelcontextprotocol/serverInfo."},
	{"spec4-id-echo", "Ids are strings or integers, echoed byte for byte."},
	{"spec4-id-invalid", "null or any other id type → -32600."},
	{"spec4-id-keyed", "In-flight ids are keyed by type and value (\"14\" ≠ 14)."},
	{"spec4-id-reused", "A request reusing an id that is still in flight on the same stdio stream → -32600 for the second only."},
	{"spec4-member-exact", "The envelope members and the members compared with headers are matched exactly (case-sensitive)."},
	{"spec4-member-duplicate", "A duplicate among them → -32600."},
	{"spec4-notification-silent", "A notification never gets a reply."},
	{"spec4-empty-method", "Empty method → -32601."},
	{"spec4-stdout-only", "stdio: one compact JSON message per line on stdout and nothing else."},
	{"spec4-line-empty", "Empty lines are ignored."},
	{"spec4-line-oversize", "A line longer than the bound (default 4 MiB) is answered -32600 with no id, read past without buffering it whole, and the stream continues."},
	{"spec4-not-json", "Not JSON → -32700 with no id."},
	{"spec4-not-request", "JSON that is not a request object → -32600 (with the id when one can be recovered)."},
	{"spec4-inflight-bound", "At most 64 requests in flight: beyond that a tools/call gets the tool error server is busy, other requests -32603, at once."},

	// §6 asking the client (AskClient).
	{"spec6-off", "Off by default: every prompt settles closed at once."},
	{"spec6-legacy-elicit", "legacy on stdio, negotiated ≥ 2025-06-18, declared form elicitation (elicitation:{} or {\"form\":{}}) → elicitation/create during the call."},
	{"spec6-legacy-closed", "legacy without the capability, or negotiated < 2025-06-18 → settles closed (the tool error)."},
	{"spec6-legacy-http-closed", "legacy on HTTP → settles closed (the tool error)."},
	{"spec6-permission-form", "The engine owns the message template. Permission → one required property decision, titled choices: {\"type\":\"string\",\"title\":\"Decision\",\"oneOf\":[{\"const\":\"allow_once\",\"title\":\"Allow once\"},{\"const\":\"deny\",\"title\":\"Deny\"}]} (2025-06-18: enum with enumNames)."},
	{"spec6-allow-once", "accept + allow_once → allowed once (nothing grants a remembered permission)."},
	{"spec6-deny", "deny, decline, cancel … → the permission error stays."},
	{"spec6-malformed", "a malformed answer → the permission error stays."},
	{"spec6-client-error", "a client error → the permission error stays."},
	{"spec6-background-agent", "A background agent's prompt names the agent in the message."},
	{"spec6-legacy-ids", "Legacy stdio: server-to-client requests use their own id space (strings such as \"srv-1\")."},
	{"spec6-legacy-mode", "mode is omitted for 2025-06-18 (and \"form\" after it)."},
	{"spec6-legacy-cancelled", "The wait ends with … the call's cancellation … — then we send notifications/cancelled for our request so the client can close its dialog."},
	{"spec6-legacy-stream-closed", "The wait ends with … the stream closing — then we send notifications/cancelled for our request."},
	{"spec6-legacy-unknown-response", "A response for an unknown id is ignored."},
	{"spec6-rounds", "modern (2026-07-28), any carrier → input-required rounds: {\"resultType\":\"input_required\",\"inputRequests\":{\"prompt\":{\"method\":\"elicitation/create\",\"params\":{\"mode\":\"form\",\"message\":…,\"requestedSchema\":…}}},\"requestState\":\"<token>\"}; one prompt per round, under the fixed key prompt."},
	{"spec6-rounds-resume", "The client retries the same tools/call (new id) with inputResponses and the same requestState; the answer resumes the call, whose next prompt or final result answers the retry."},
	{"spec6-rounds-capability", "A client without the (form) elicitation capability → settles closed."},
	{"spec6-rounds-missing", "A retry whose inputResponses.prompt is missing gets the same prompt again under a fresh token."},
	{"spec6-rounds-extra-keys", "Extra keys are ignored."},
	{"spec6-rounds-wrong-type", "inputResponses or requestState of the wrong JSON type → -32602."},
	{"spec6-token-shape", "requestState: 32 random bytes (crypto/rand), base64url."},
	{"spec6-token-single-use", "requestState: single use; used → -32602 and nothing resumes."},
	{"spec6-token-unknown", "Unknown → -32602 and nothing resumes; a failed check does not use the round up."},
	{"spec6-token-mismatch", "Bound to the tool name and SHA-256 of the arguments in canonical JSON (keys sorted, numbers as written); mismatched → -32602 and nothing resumes; a failed check does not use the round up."},
	{"spec6-token-modern-only", "requestState is valid only for a modern tools/call."},
	{"spec6-rounds-cancel-chain", "A notifications/cancelled naming the latest id of the chain (stdio) ends the parked call: its prompts settle closed."},
	{"spec6-rounds-bound", "At most 4 parked rounds per principal; beyond that a new prompt settles closed at once."},
	{"spec6-off-token", "With AskClient off no round exists: any requestState is unknown → -32602."},
	// §14 tasks (the 2026-07-28 extension).
	{"spec14-create", "A tools/call of a tool that supports tasks, from a request declaring io.modelcontextprotocol/tasks, is answered at once with a flat CreateTaskResult (resultType task, status working)."},
	{"spec14-get-working", "tasks/get of a running task: working."},
	{"spec14-cancel", "tasks/cancel: an empty ack, at once cancelled, the turn's context ended; idempotent, also for a task already ended."},
	{"spec14-unknown", "An unknown, expired or another principal's task id → -32602 Failed to retrieve task: Task not found."},
	{"spec14-removed-methods", "tasks/result and tasks/list → -32601."},
	{"spec14-not-declared", "A request that did not declare the extension is served as before; a legacy params.task is ignored."},
	{"spec14-tasks-not-declared", "tasks/get, tasks/update, tasks/cancel from a request that does not declare the extension → -32021 with data.requiredCapabilities."},
	{"spec14-legacy-create", "2025-11-25: a tools/call with params.task of a tool that supports tasks → CreateTaskResult {task: {…}} with ttl and pollInterval in ms."},
	{"spec14-legacy-elicit", "2025-11-25 on a stream that can answer forms: a task's approval is elicitation/create tagged with the related-task _meta."},
	{"spec14-legacy-result", "2025-11-25 tasks/result waits for the end and returns what the call would have, with the related-task _meta."},
	{"spec14-legacy-cancel", "2025-11-25 tasks/cancel answers the Task, cancelled; an ended task → -32602."},
	{"spec14-legacy-http-closed", "2025-11-25 over the stateless HTTP hosts: a task's approvals settle closed."},
	{"spec14-legacy-ttl", "2025-11-25: params.task.ttl is the task's TTL, bounded by the engine's and by 10 s; a ttl that is not a non-negative number, or a params.task that is not an object, → -32602."},
	{"spec14-legacy-negotiation", "2025-11-25: params.task on a tool that forbids tasks → -32601; a plain call of a tool that requires tasks → -32601; before 2025-11-25 both are served as plain calls."},
	{"spec14-legacy-progress", "2025-11-25 on a stream: the creating request's progressToken carries the task's progress, tagged with the related task; nothing over HTTP."},
	{"spec14-legacy-status", "2025-11-25 on a stream: notifications/tasks/status with the full Task on each status change after the creating answer; nothing over HTTP."},
	{"spec14-legacy-list", "2025-11-25: tasks/list (declared as tasks.list) lists the sender's own tasks on a stream and on the remote host; the loopback host neither declares nor serves it (-32601)."},
	{"spec14-completed", "completed carries the CallToolResult under result."},
	{"spec14-tool-error", "A tool error is completed with isError true."},
	{"spec14-failed", "failed carries the JSON-RPC error the call would have answered."},
	{"spec14-input-required", "An approval during a task (AskClient on, form elicitation declared in the creating request): input_required with inputRequests keyed input-N, elicitation/create form requests with §6's words."},
	{"spec14-input-undeclared", "A task whose creating request declared no form elicitation never asks, AskClient on or off: its prompts settle closed at once; the same for a call that becomes a task in its request."},
	{"spec14-update", "tasks/update answers input requests by key: an empty ack; unknown or already-answered keys are ignored."},
	{"spec14-failed-panic", "A task whose session panics is failed with the -32603 error a plain call would have answered."},
	{"spec14-compose", "Rounds, then a task: a tool that starts in its request asks in input-required rounds (no taskId) until the session starts its task."},
	{"spec14-compose-create", "The request waiting when the session starts the task (a round's retry) is answered with a flat CreateTaskResult: no requestState, no inputRequests; later prompts are the task's input requests."},
	{"spec14-compose-closed", "Without rounds (no form elicitation declared, or AskClient off) its prompts settle closed, before the task and after it; the request waiting when the task starts answers the CreateTaskResult."},
	{"spec14-compose-undeclared", "From a request that did not declare the extension the call never becomes a task: ports.StartTask reports false and the call goes on in its request."},
	{"spec14-ask-off", "AskClient off: a task's approvals settle closed; it never asks."},

	// docs/SPEC.md appendix (wire cases), the stdio cases.
	{"K1", "One bad stdio line must not end the session."},
	{"K2", "A frame that is JSON but not JSON-RPC must be answered, not dropped."},
	{"K3", "A request with an id is never treated as a notification."},
	{"K4", "Size is bounded everywhere (stdio: 64 MiB line)."},
	{"K5", "A cancelled request gets no response."},
	{"K7", "Batches only where the negotiated revision allows them."},
}

func TestRowCoverage(t *testing.T) {
	files, err := transcript.Load(transcriptDir)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, r := range specRows {
		if known[r.id] {
			t.Errorf("row %s is listed twice", r.id)
		}
		if strings.TrimSpace(r.text) == "" {
			t.Errorf("row %s has no docs/SPEC.md text", r.id)
		}
		known[r.id] = true
	}
	pinnedBy := map[string][]string{}
	for _, f := range files {
		if len(f.Rows) == 0 {
			t.Errorf("%s: no rows: header", f.Path)
		}
		for _, id := range f.Rows {
			if !known[id] {
				t.Errorf("%s: rows: names %q, which is not in specRows", f.Path, id)
			}
			pinnedBy[id] = append(pinnedBy[id], f.Path)
		}
	}
	for _, r := range specRows {
		if len(pinnedBy[r.id]) == 0 {
			t.Errorf("row %s has no transcript: %s", r.id, r.text)
		}
	}
	if testing.Verbose() {
		ids := make([]string, 0, len(pinnedBy))
		for id := range pinnedBy {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			t.Logf("%-30s %s", id, strings.Join(slices.Compact(pinnedBy[id]), " "))
		}
	}
}
