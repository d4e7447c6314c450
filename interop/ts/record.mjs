// What the TypeScript SDK client scripts share: interop.mjs, agent.mjs,
// elicit.mjs, resources.mjs and subscribe.mjs record the wire through
// RecordingTransport; the scenario scripts (agent.mjs, elicit.mjs,
// resources.mjs, subscribe.mjs) also write their report and exit alike,
// agent.mjs, resources.mjs and subscribe.mjs connect to the scenario's
// server alike (scenarioTransport), and resources.mjs and subscribe.mjs run
// their steps alike (runSteps).

import { readFileSync, writeFileSync } from 'node:fs';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

// RecordingTransport wraps an MCP SDK transport: it records every message
// the client sends and receives (the server's own requests included), so the
// tests can check the exchange on the wire, and collects transport errors
// (a non-JSON line on stdout, for one).
export class RecordingTransport {
  constructor(inner) {
    this.inner = inner;
    this.sent = [];
    this.received = [];
    this.errors = [];
    // rewrite, when set, changes a received message before the client sees
    // it (received keeps it as the wire carried it): a test hands the SDK a
    // result the server never sent, to see the SDK refuse it.
    this.rewrite = null;
  }
  async start() {
    this.inner.onmessage = (msg, extra) => {
      this.received.push(msg);
      this.onmessage?.(this.rewrite ? this.rewrite(structuredClone(msg)) : msg, extra);
    };
    this.inner.onerror = (err) => {
      this.errors.push(err);
      this.onerror?.(err);
    };
    this.inner.onclose = () => this.onclose?.();
    await this.inner.start();
  }
  async send(msg, options) {
    this.sent.push(msg);
    await this.inner.send(msg, options);
  }
  async close() {
    await this.inner.close();
  }
  get sessionId() {
    return this.inner.sessionId;
  }
  setProtocolVersion(v) {
    this.inner.setProtocolVersion?.(v);
  }
}

// writeReport finishes a scenario script's report (agent.mjs, elicit.mjs)
// with what transport, a RecordingTransport, saw on the wire and the
// transport errors, and writes it as JSON to path for the Go test.
export function writeReport(path, report, transport) {
  report.wire = { sent: transport.sent, received: transport.received };
  report.transportErrors = transport.errors.map((e) => e?.message ?? String(e));
  writeFileSync(path, JSON.stringify(report));
}

// runScenario runs a scenario script's main and exits: 0 once it is done,
// 1 with "FAIL (<client>): <stack>" on any failure to run the scenario.
export async function runScenario(main, client) {
  try {
    await main();
    process.exit(0);
  } catch (err) {
    console.error(`FAIL (${client}): ${err?.stack ?? String(err)}`);
    process.exit(1);
  }
}

// scenarioTransport is the SDK transport to a scenario's server:
// StreamableHTTPClientTransport on scenario.url, sending the bearer token
// scenario.tokenFile holds, or else StdioClientTransport spawning
// scenario.command with scenario.args, the SDK's default environment plus
// scenario.env, and its stderr inherited.
export function scenarioTransport(scenario) {
  if (scenario.url) {
    return new StreamableHTTPClientTransport(new URL(scenario.url), {
      requestInit: { headers: { Authorization: `Bearer ${readFileSync(scenario.tokenFile, 'utf8').trim()}` } },
    });
  }
  return new StdioClientTransport({
    command: scenario.command,
    args: scenario.args,
    env: { ...getDefaultEnvironment(), ...(scenario.env ?? {}) },
    stderr: 'inherit',
  });
}

// runSteps connects client through transport (a RecordingTransport) and
// runs steps in order, each as ops[step.op](step.params, { timeout }), into
// report: the server's capabilities, and one { result, error, prompts } per
// step (error: { code, message, data } of what the op threw). An
// elicitation/create during a step is kept in its prompts and answered with
// the step's next answer (cancel once they run out); one outside any step
// fails. onStep(i), when given, is told as step i starts. The client is
// closed at the end, and the report written to reportPath (writeReport).
export async function runSteps({ client, transport, steps, ops, report, reportPath, timeout, onStep }) {
  let current = null;
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    if (current === null) {
      throw new Error(`elicitation/create outside any step: ${JSON.stringify(request)}`);
    }
    current.report.prompts.push(request.params);
    return current.answers.shift() ?? { action: 'cancel' };
  });
  report.steps = [];
  try {
    await client.connect(transport, { timeout });
    report.capabilities = client.getServerCapabilities();
    for (const [i, step] of steps.entries()) {
      const op = ops[step.op];
      if (!op) throw new Error(`unknown op ${step.op}`);
      const stepReport = { result: null, error: null, prompts: [] };
      current = { report: stepReport, answers: [...(step.answers ?? [])] };
      onStep?.(i);
      try {
        stepReport.result = await op(step.params, { timeout });
      } catch (err) {
        stepReport.error = { code: err?.code ?? null, message: err?.message ?? String(err), data: err?.data ?? null };
      }
      current = null;
      report.steps.push(stepReport);
    }
  } finally {
    await client.close();
  }
  writeReport(reportPath, report, transport);
}
