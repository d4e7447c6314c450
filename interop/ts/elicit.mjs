// Drives the built agentmcp binary with the official TypeScript MCP SDK
// client (@modelcontextprotocol/sdk, Client + StdioClientTransport) through a
// scripted series of write_file calls, answering the server's
// elicitation/create requests from the script, and writes a JSON report of
// what happened. It checks nothing itself: the Go test (ask_test.go) judges
// the report and the files on disk.
//
// Usage: node elicit.mjs <scenario.json> <report.json>
//
// The scenario:
//   {"command": "<agentmcp binary>", "args": ["serve", "stdio", ...],
//    "root": "<workspace root>", "paths": ["<file relative to root>", ...],
//    "calls": [{"arguments": {...}, "answers": [<ElicitResult>, ...]}, ...]}
// Each call is a tools/call of write_file with its arguments; each
// elicitation/create that arrives during the call is answered with the
// call's next answer, in order (a surplus elicitation is answered "cancel"
// and still reported).
//
// The report:
//   {"clientCapabilities": {...}, "calls": [{"result": <CallToolResult> | null,
//    "error": "<call error>" | null, "prompts": [{"requestId", "params"}, ...],
//    "disk": {"<path>": "<content>" | null}}, ...],
//    "wire": {"sent": [...], "received": [...]}, "transportErrors": [...]}
// where disk is read right after the call returned.
//
// Exits 0 once the report is written, 1 on any failure to run the scenario
// (a failed tool call is not one: it is reported).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { RecordingTransport, writeReport, runScenario } from './record.mjs';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const TIMEOUT_MS = 60_000;
const CLIENT_CAPABILITIES = { elicitation: {} }; // form mode, the legacy way of declaring it

const [scenarioPath, reportPath] = process.argv.slice(2);
if (!scenarioPath || !reportPath) {
  console.error('usage: node elicit.mjs <scenario.json> <report.json>');
  process.exit(2);
}


function readDisk(root, paths) {
  const disk = {};
  for (const p of paths) {
    try {
      disk[p] = readFileSync(join(root, p), 'utf8');
    } catch (err) {
      if (err.code !== 'ENOENT') throw err;
      disk[p] = null;
    }
  }
  return disk;
}

async function main() {
  const scenario = JSON.parse(readFileSync(scenarioPath, 'utf8'));
  const stdio = new StdioClientTransport({
    command: scenario.command,
    args: scenario.args,
    stderr: 'inherit', // server logs go to our stderr; stdout is the protocol
  });
  const transport = new RecordingTransport(stdio);
  const client = new Client(
    { name: 'agentmcp-interop-ts-elicit', version: '1.32.2' },
    { capabilities: CLIENT_CAPABILITIES },
  );

  // The call being made and the answers left for it.
  let current = null;
  client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
    if (current === null) {
      throw new Error(`elicitation/create outside any call: ${JSON.stringify(request)}`);
    }
    current.report.prompts.push({ requestId: extra.requestId, params: request.params });
    return current.answers.shift() ?? { action: 'cancel' };
  });

  const report = { clientCapabilities: CLIENT_CAPABILITIES, calls: [] };
  try {
    await client.connect(transport, { timeout: TIMEOUT_MS });
    for (const call of scenario.calls) {
      const callReport = { result: null, error: null, prompts: [], disk: null };
      current = { report: callReport, answers: [...call.answers] };
      try {
        callReport.result = await client.callTool(
          { name: 'write_file', arguments: call.arguments }, undefined, { timeout: TIMEOUT_MS });
      } catch (err) {
        callReport.error = err?.message ?? String(err);
      }
      current = null;
      callReport.disk = readDisk(scenario.root, scenario.paths);
      report.calls.push(callReport);
    }
  } finally {
    await client.close();
  }
  writeReport(reportPath, report, transport);
}

await runScenario(main, 'TypeScript SDK elicitation client');
