// Drives the agent behind agent_submit with the official TypeScript MCP SDK
// client (Client + StdioClientTransport spawning "serve stdio", or
// StreamableHTTPClientTransport on a running "serve http" when the scenario
// has "url") over the legacy era: each call is an agent_submit with a
// progress handler (so the request carries a progressToken),
// elicitation/create requests are answered from the scenario, a call marked
// "cancel" is aborted (the SDK sends notifications/cancelled) when a line
// arrives on this script's stdin — the Go test writes it once the scripted
// model endpoint has started answering — and a call with "timeoutMs" has
// that request timeout (the SDK sends notifications/cancelled when it
// fires; over HTTP it keeps the original request open either way).
// A call with "conversation" or "fork_from" passes them as agent_submit's
// arguments; one with "tamper" ("drop": without structuredContent,
// "malform": structuredContent without turn) has its result changed before
// the SDK sees it, so the report shows what the SDK does with a result that
// breaks the tool's outputSchema ("list" must be true: the SDK validates
// against the schemas tools/list gave it).
// A call marked "echoProgress" also prints each progress notification's
// message on stdout as {"progress": "<message>"}, as it arrives
// (ts_store_test.go waits for the streamed text there). It checks nothing
// itself: the Go tests (ts_agent_test.go, ts_store_test.go) judge the
// report.
//
// Usage: node agent.mjs <scenario.json> <report.json>
//
// The scenario:
//   {"command": "<agentmcp binary>", "args": ["serve", "stdio", ...],
//    "env": {<variables added to the SDK's default environment>},
//    or "url": "<serve http's URL>", "tokenFile": "<its --token-file>",
//    "list": <true: tools/list once connected>,
//    "calls": [{"prompt": "...", "conversation": "...", "fork_from": "...", "tamper": "drop"|"malform", "answers": [<ElicitResult>, ...], "cancel": false, "echoProgress": false,
//               "timeoutMs": <request timeout, default 60000>,
//               "noProgress": <true: no progress handler, so no progressToken>}, ...]}
//
// The report:
//   {"calls": [{"result": <CallToolResult> | null, "error": "<call error>" | null,
//    "prompts": [<elicitation params>], "progress": [<progress notification params>]}, ...],
//    "wire": {"sent": [...], "received": [...]}, "transportErrors": [...]}
//
// Exits 0 once the report is written, 1 on any failure to run the scenario.

import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ElicitRequestSchema, CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { RecordingTransport, writeReport, runScenario, scenarioTransport } from './record.mjs';

const TIMEOUT_MS = 60_000;

const [scenarioPath, reportPath] = process.argv.slice(2);
if (!scenarioPath || !reportPath) {
  console.error('usage: node agent.mjs <scenario.json> <report.json>');
  process.exit(2);
}

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

async function main() {
  const scenario = JSON.parse(readFileSync(scenarioPath, 'utf8'));
  const inner = scenarioTransport(scenario);
  const transport = new RecordingTransport(inner);
  const client = new Client({ name: 'agentmcp-interop-ts-agent', version: '1.32.2' }, { capabilities: { elicitation: {} } });

  let current = null;
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    if (current === null) {
      throw new Error(`elicitation/create outside any call: ${JSON.stringify(request)}`);
    }
    current.report.prompts.push(request.params);
    return current.answers.shift() ?? { action: 'cancel' };
  });

  const report = { calls: [] };
  try {
    await client.connect(transport, { timeout: TIMEOUT_MS });
    if (scenario.list) {
      await client.listTools(undefined, { timeout: TIMEOUT_MS });
    }
    for (const call of scenario.calls) {
      const callReport = { result: null, error: null, prompts: [], progress: [] };
      current = { report: callReport, answers: [...(call.answers ?? [])] };
      const abort = new AbortController();
      const args = { prompt: call.prompt };
      if (call.conversation !== undefined) args.conversation = call.conversation;
      if (call.fork_from !== undefined) args.fork_from = call.fork_from;
      transport.rewrite = call.tamper ? (msg) => tamper(msg, call.tamper) : null;
      const pending = client.callTool({ name: 'agent_submit', arguments: args }, CallToolResultSchema, {
        timeout: call.timeoutMs ?? TIMEOUT_MS,
        signal: abort.signal,
        onprogress: call.noProgress ? undefined : (p) => {
          callReport.progress.push(p);
          // The Go test reads these lines as they come (a stream it holds
          // until the client has seen its text).
          if (call.echoProgress) console.log(JSON.stringify({ progress: p.message }));
        },
      });
      if (call.cancel) {
        await lines.next(); // the Go test says when
        abort.abort('cancelled by the interop test');
      }
      try {
        callReport.result = await pending;
      } catch (err) {
        callReport.error = err?.message ?? String(err);
      }
      current = null;
      report.calls.push(callReport);
    }
  } finally {
    await client.close();
  }
  writeReport(reportPath, report, transport);
}

// tamper changes a tools/call result as the scenario's "tamper" says.
function tamper(msg, how) {
  if (msg.result?.structuredContent === undefined) return msg;
  if (how === 'drop') delete msg.result.structuredContent;
  if (how === 'malform') delete msg.result.structuredContent.turn;
  return msg;
}

await runScenario(main, 'TypeScript SDK agent client');
