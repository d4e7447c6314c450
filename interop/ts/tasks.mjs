// Drives agent_submit as a 2025-11-25 experimental task with the official
// TypeScript MCP SDK client's experimental.tasks API (Client +
// StdioClientTransport): tools/list first (the SDK learns agent_submit's
// execution.taskSupport), then client.experimental.tasks.callToolStream,
// which sends tools/call with params.task, polls tasks/get and reads
// tasks/result. elicitation/create requests are answered from the scenario.
// It checks nothing itself: the Go test (ts_tasks_test.go) judges the
// report.
//
// Usage: node tasks.mjs <scenario.json> <report.json>
//
// The scenario: {"command": "<agentmcp binary>", "args": [...], "prompt": "...",
//   "answers": [<ElicitResult>, ...]}
// The report: {"messages": [<stream messages: taskCreated, taskStatus, result, error>],
//   "prompts": [<elicitation params>], "wire": {...}, "transportErrors": [...]}

import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { RecordingTransport, writeReport, runScenario } from './record.mjs';

const TIMEOUT_MS = 60_000;

const [scenarioPath, reportPath] = process.argv.slice(2);
if (!scenarioPath || !reportPath) {
  console.error('usage: node tasks.mjs <scenario.json> <report.json>');
  process.exit(2);
}

async function main() {
  const scenario = JSON.parse(readFileSync(scenarioPath, 'utf8'));
  const stdio = new StdioClientTransport({ command: scenario.command, args: scenario.args, stderr: 'inherit' });
  const transport = new RecordingTransport(stdio);
  const client = new Client({ name: 'agentmcp-interop-ts-tasks', version: '1.32.2' }, { capabilities: { elicitation: {} } });
  const report = { messages: [], prompts: [] };
  const answers = [...(scenario.answers ?? [])];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    report.prompts.push(request.params);
    return answers.shift() ?? { action: 'cancel' };
  });
  try {
    await client.connect(transport, { timeout: TIMEOUT_MS });
    await client.listTools(undefined, { timeout: TIMEOUT_MS });
    const stream = client.experimental.tasks.callToolStream(
      { name: 'agent_submit', arguments: { prompt: scenario.prompt } }, undefined, { timeout: TIMEOUT_MS });
    for await (const message of stream) {
      report.messages.push(message.type === 'error' ? { type: 'error', error: String(message.error?.message ?? message.error) } : message);
    }
  } finally {
    await client.close();
  }
  writeReport(reportPath, report, transport);
}

await runScenario(main, 'TypeScript SDK tasks client');
