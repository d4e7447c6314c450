// Drives the resource subscriptions of the CLI's agent (docs/SPEC.md §2
// "Subscriptions") with the official TypeScript MCP SDK client (Client +
// StdioClientTransport spawning "serve stdio") at the SDK's own revision
// (2025-11-25): resources/subscribe and resources/unsubscribe through the
// SDK's own methods (which refuse to subscribe unless the server declared
// resources.subscribe), each notifications/resources/updated through the
// SDK's notification handler, validated by its schema. The scenario's steps
// run in order; the file steps change the workspace from here, as an editor
// would, and an "updated" step waits for the next update of its uri. An
// elicitation/create during a step is answered with the step's next answer
// (cancel once they run out). It checks nothing itself: the Go test
// (ts_subscribe_test.go) judges the report.
//
// Usage: node subscribe.mjs <scenario.json> <report.json>
//
// The scenario:
//   {"command": "<agentmcp binary>", "args": ["serve", "stdio", ...],
//    "steps": [{"op": "subscribe" | "unsubscribe" | "read" | "submit" | "save" |
//               "write" | "remove" | "updated", "params": {...},
//               "answers": [<ElicitResult>, ...]}, ...]}
//   ops: subscribe = subscribeResource {uri}, unsubscribe = unsubscribeResource
//   {uri}, read = readResource {uri}, submit = callTool of agent_submit with
//   params as its arguments; save {path, content} writes a new file beside
//   path and renames it over path (an editor's atomic save), write {path,
//   content} writes path in place, remove {path} removes it; updated {uri}
//   waits for the next notifications/resources/updated of uri.
//
// The report:
//   {"capabilities": <the server's>,
//    "steps": [{"result": <the SDK's result> | null,
//               "error": {"code", "message", "data"} | null, "prompts": [...]}, ...],
//    "updates": [{"uri": "...", "step": <the index of the step running when it came>}, ...],
//    "wire": {"sent": [...], "received": [...]}, "transportErrors": [...]}
//
// Exits 0 once the report is written, 1 on any failure to run the scenario.

import { readFileSync, writeFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, basename, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { RecordingTransport, runScenario, runSteps, scenarioTransport } from './record.mjs';

const TIMEOUT_MS = 60_000;

const [scenarioPath, reportPath] = process.argv.slice(2);
if (!scenarioPath || !reportPath) {
  console.error('usage: node subscribe.mjs <scenario.json> <report.json>');
  process.exit(2);
}

async function main() {
  const scenario = JSON.parse(readFileSync(scenarioPath, 'utf8'));
  const transport = new RecordingTransport(scenarioTransport(scenario));
  const client = new Client({ name: 'agentmcp-interop-ts-subscribe', version: '1.32.2' }, { capabilities: { elicitation: {} } });

  let stepIndex = -1; // the step running, as runSteps tells it
  // Every update in order; an "updated" step consumes the next of its uri
  // past the one the previous "updated" step consumed.
  const updates = [];
  let cursor = 0;
  let woken = null;
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updates.push({ uri: n.params.uri, step: stepIndex });
    woken?.();
  });
  const updated = async ({ uri }) => {
    const deadline = Date.now() + TIMEOUT_MS;
    for (;;) {
      const i = updates.findIndex((u, j) => j >= cursor && u.uri === uri);
      if (i >= 0) {
        cursor = i + 1;
        return updates[i];
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no notifications/resources/updated of ${uri}`);
      await new Promise((resolve) => {
        const timer = setTimeout(resolve, left);
        woken = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      woken = null;
    }
  };

  const ops = {
    subscribe: (p, o) => client.subscribeResource(p, o),
    unsubscribe: (p, o) => client.unsubscribeResource(p, o),
    read: (p, o) => client.readResource(p, o),
    submit: (p, o) => client.callTool({ name: 'agent_submit', arguments: p }, undefined, o),
    save: ({ path, content }) => {
      const tmp = join(dirname(path), `.${basename(path)}.tmp`);
      writeFileSync(tmp, content);
      renameSync(tmp, path);
      return {};
    },
    write: ({ path, content }) => (writeFileSync(path, content), {}),
    remove: ({ path }) => (rmSync(path), {}),
    updated,
  };

  await runSteps({
    client, transport, steps: scenario.steps, ops, report: { updates }, reportPath, timeout: TIMEOUT_MS,
    onStep: (i) => { stepIndex = i; },
  });
}

await runScenario(main, 'TypeScript SDK subscribe client');
