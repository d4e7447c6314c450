// Drives the built agentmcp binary with the official TypeScript MCP SDK
// client (@modelcontextprotocol/sdk, Client + StdioClientTransport):
// lists the tools, reads a real file, calls an unknown tool and agent_submit,
// and checks each answer. Exits 0 when every check passes, 1 otherwise.
//
// Usage: node interop.mjs <agentmcp binary> <root dir> [file relative to root]
//    or: AGENTMCP_BIN=... AGENTMCP_ROOT=... [AGENTMCP_FILE=...] node interop.mjs
//
// The file (default greeting.txt) must exist in the root; its content is read
// here and compared with what read_file returns.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { RecordingTransport } from './record.mjs';

const WANT_TOOLS = ['list_dir', 'read_file', 'search_text', 'write_file', 'agent_submit'];
const WANT_SUBMIT_DESCRIPTION = 'Submit a prompt to the agent and await its turn';
const WANT_SUBMIT_SCHEMA = {
  type: 'object',
  properties: { prompt: { type: 'string', minLength: 1 } },
  required: ['prompt'],
  additionalProperties: false,
};
const WANT_PROTOCOL_VERSION = '2025-11-25'; // the SDK's latest; it has no 2026-07-28
const TIMEOUT_MS = 60_000;

const bin = process.argv[2] ?? process.env.AGENTMCP_BIN;
const root = process.argv[3] ?? process.env.AGENTMCP_ROOT;
const file = process.argv[4] ?? process.env.AGENTMCP_FILE ?? 'greeting.txt';
if (!bin || !root) {
  console.error('usage: node interop.mjs <agentmcp binary> <root dir> [file relative to root]');
  process.exit(2);
}

class CheckError extends Error {}

function check(cond, message) {
  if (!cond) throw new CheckError(message);
}

const show = (v) => JSON.stringify(v)?.slice(0, 500);


function singleText(call, res) {
  check(Array.isArray(res.content) && res.content.length === 1,
    `${call}: want one content block, got ${show(res.content)}`);
  check(res.content[0].type === 'text', `${call}: want a text block, got ${show(res.content[0])}`);
  return res.content[0].text;
}

async function main() {
  const wantContent = readFileSync(join(root, file), 'utf8');
  const stdio = new StdioClientTransport({
    command: bin,
    args: ['serve', 'stdio', '--root', root],
    stderr: 'inherit', // server logs go to our stderr; stdout is the protocol
  });
  const transport = new RecordingTransport(stdio);
  const client = new Client({ name: 'agentmcp-interop-ts', version: '1.32.2' });
  const opts = { timeout: TIMEOUT_MS };

  try {
    await client.connect(transport, opts);

    // The handshake: initialize at the SDK's latest version, answered with it.
    const init = transport.sent[0];
    check(init?.method === 'initialize', `first message sent: ${show(init)}, want initialize`);
    const initResp = transport.received.find((m) => m.id === init.id);
    check(initResp?.result?.protocolVersion === WANT_PROTOCOL_VERSION,
      `initialize answered ${show(initResp)}, want protocolVersion ${WANT_PROTOCOL_VERSION}`);
    check(isDeepStrictEqual(client.getServerCapabilities(), { tools: {} }),
      `server capabilities ${show(client.getServerCapabilities())}, want {"tools":{}}`);
    check(typeof client.getServerVersion()?.name === 'string' && client.getServerVersion().name !== '',
      `server info ${show(client.getServerVersion())}, want a name`);

    // tools/list: names in order, the submission tool last and exact.
    const { tools, nextCursor } = await client.listTools(undefined, opts);
    const names = tools.map((t) => t.name);
    check(isDeepStrictEqual(names, WANT_TOOLS), `tools/list names ${show(names)}, want ${show(WANT_TOOLS)}`);
    check(nextCursor === undefined, `tools/list nextCursor ${show(nextCursor)}, want none`);
    for (const t of tools) {
      check(t.inputSchema?.type === 'object', `tool ${t.name}: inputSchema ${show(t.inputSchema)} is not type object`);
      check(t.outputSchema === undefined, `tool ${t.name} advertises an outputSchema`);
    }
    const submit = tools[tools.length - 1];
    check(submit.description === WANT_SUBMIT_DESCRIPTION,
      `agent_submit description ${show(submit.description)}, want ${show(WANT_SUBMIT_DESCRIPTION)}`);
    check(isDeepStrictEqual(submit.inputSchema, WANT_SUBMIT_SCHEMA),
      `agent_submit inputSchema ${show(submit.inputSchema)}, want ${show(WANT_SUBMIT_SCHEMA)}`);

    // read_file on the real file: an execution envelope holding its content.
    let res = await client.callTool({ name: 'read_file', arguments: { path: file } }, undefined, opts);
    let text = singleText('read_file', res);
    check(res.isError !== true, `read_file isError: ${text}`);
    check(res.structuredContent === undefined, `read_file has structuredContent ${show(res.structuredContent)}`);
    check(text.startsWith('{"success":'), `read_file text does not start with the envelope's success: ${text.slice(0, 300)}`);
    let env;
    try {
      env = JSON.parse(text);
    } catch (err) {
      throw new CheckError(`read_file text is not JSON (${err.message}): ${text.slice(0, 300)}`);
    }
    check(env.success === true, `read_file envelope success ${show(env.success)}, want true: ${text.slice(0, 300)}`);
    check(env.toolName === 'read_file', `read_file envelope toolName ${show(env.toolName)}, want read_file`);
    const got = typeof env.result === 'string' ? env.result : env.result?.content;
    check(got === wantContent, `read_file content ${show(got)}, want ${show(wantContent)} (result ${show(env.result)})`);

    // An unknown tool: a tool error, not a JSON-RPC error.
    res = await client.callTool({ name: 'no_such_tool', arguments: {} }, undefined, opts);
    text = singleText('no_such_tool', res);
    check(res.isError === true && text === 'Unknown tool: no_such_tool',
      `no_such_tool answered ${show(res)}, want the tool error "Unknown tool: no_such_tool"`);

    // agent_submit without a model backend: refused, as a tool error.
    res = await client.callTool({ name: 'agent_submit', arguments: { prompt: 'Say hello.' } }, undefined, opts);
    text = singleText('agent_submit', res);
    check(res.isError === true && /refus|configur/i.test(text),
      `agent_submit answered ${show(res)}, want a tool error saying it is refused / not configured`);

    check(transport.errors.length === 0,
      `transport errors: ${transport.errors.map((e) => e.message).join('; ')}`);
  } finally {
    await client.close();
  }
  console.log(`ok: TypeScript SDK client passed against ${bin} (protocol ${WANT_PROTOCOL_VERSION})`);
}

try {
  await main();
  process.exit(0);
} catch (err) {
  const what = err instanceof CheckError ? 'check failed' : 'error';
  const detail = err instanceof CheckError ? err.message : (err?.stack ?? String(err));
  console.error(`FAIL (TypeScript SDK client, ${what}): ${detail}`);
  process.exit(1);
}
