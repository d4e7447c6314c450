// Drives the server features of the CLI's agent (docs/SPEC.md §2) with the
// official TypeScript MCP SDK client (Client + StdioClientTransport spawning
// "serve stdio", or StreamableHTTPClientTransport on a running "serve http"
// when the scenario has "url"), at the SDK's own revision (2025-11-25). It
// runs the scenario's steps in order, each through the SDK's own method, so
// every result passes the SDK's schema validation (a blob must be base64, a
// prompt message's content one of its kinds) before it is reported. An
// elicitation/create during a step is answered with the step's next answer
// (cancel once they run out). It checks nothing itself: the Go test
// (ts_resources_test.go) judges the report.
//
// Usage: node resources.mjs <scenario.json> <report.json>
//
// The scenario:
//   {"command": "<agentmcp binary>", "args": ["serve", "stdio", ...],
//    or "url": "<serve http's URL>", "tokenFile": "<its --token-file>",
//    "steps": [{"op": "templates" | "resources" | "read" | "prompts" | "prompt" |
//               "complete" | "submit", "params": {...}, "answers": [<ElicitResult>, ...]}, ...]}
//   ops: templates = listResourceTemplates, resources = listResources,
//   read = readResource, prompts = listPrompts, prompt = getPrompt,
//   complete = complete, submit = callTool of agent_submit with params as
//   its arguments.
//
// The report:
//   {"capabilities": <the server's>, "protocolVersion": "...",
//    "steps": [{"result": <the SDK's result> | null,
//               "error": {"code", "message", "data"} | null, "prompts": [<elicitation params>]}, ...],
//    "wire": {"sent": [...], "received": [...]}, "transportErrors": [...]}
//
// Exits 0 once the report is written, 1 on any failure to run the scenario.

import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { RecordingTransport, runScenario, runSteps, scenarioTransport } from './record.mjs';

const TIMEOUT_MS = 60_000;

const [scenarioPath, reportPath] = process.argv.slice(2);
if (!scenarioPath || !reportPath) {
  console.error('usage: node resources.mjs <scenario.json> <report.json>');
  process.exit(2);
}

async function main() {
  const scenario = JSON.parse(readFileSync(scenarioPath, 'utf8'));
  const inner = scenarioTransport(scenario);
  const transport = new RecordingTransport(inner);
  const client = new Client({ name: 'agentmcp-interop-ts-resources', version: '1.32.2' }, { capabilities: { elicitation: {} } });

  const ops = {
    templates: (p, o) => client.listResourceTemplates(p, o),
    resources: (p, o) => client.listResources(p, o),
    read: (p, o) => client.readResource(p, o),
    prompts: (p, o) => client.listPrompts(p, o),
    prompt: (p, o) => client.getPrompt(p, o),
    complete: (p, o) => client.complete(p, o),
    submit: (p, o) => client.callTool({ name: 'agent_submit', arguments: p }, undefined, o),
  };

  await runSteps({ client, transport, steps: scenario.steps, ops, report: {}, reportPath, timeout: TIMEOUT_MS });
}

await runScenario(main, 'TypeScript SDK resources client');
