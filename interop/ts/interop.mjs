// Drives agentmcp with the official TypeScript MCP SDK client
// (@modelcontextprotocol/sdk): lists the tools, reads a real file, calls an
// unknown tool and agent_submit, and checks each answer. Exits 0 when every
// check passes, 1 otherwise.
//
// Two carriers, the same calls and checks:
//   stdio: Client + StdioClientTransport, spawning "<binary> serve stdio --root <root>":
//     node interop.mjs <agentmcp binary> <root dir> [file relative to root]
//     AGENTMCP_BIN=... AGENTMCP_ROOT=... [AGENTMCP_FILE=...] node interop.mjs
//   http: Client + StreamableHTTPClientTransport on a running "agentmcp serve http",
//     the bearer token (read from the --token-file file) sent through requestInit's headers:
//     node interop.mjs --http <url> <token file> <root dir> [file relative to root]
//     AGENTMCP_URL=... AGENTMCP_TOKEN_FILE=... AGENTMCP_ROOT=... [AGENTMCP_FILE=...] node interop.mjs
//   Over http it also checks that the host stayed stateless: no response
//   carried Mcp-Session-Id (so the transport has no session id), every POST
//   was answered 200 or 202 and the SDK's standalone SSE GET 405.
//
// The file (default greeting.txt) must exist in the root; its content is read
// here and compared with what read_file returns.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { RecordingTransport } from './record.mjs';

const WANT_TOOLS = ['list_dir', 'read_file', 'search_text', 'write_file', 'edit_file', 'find_files', 'agent_submit'];
const WANT_SUBMIT_DESCRIPTION = 'Submit a prompt to the agent and await its turn';
const WANT_SUBMIT_SCHEMA = {
  type: 'object',
  properties: { prompt: { type: 'string', minLength: 1 } },
  required: ['prompt'],
  additionalProperties: false,
};
// Titles and annotations as the SDK reads them back (docs/SPEC.md §2): the
// read-only tools say so, write_file is destructive and idempotent, and the
// submission tool has its own.
const READ_ONLY = { readOnlyHint: true, openWorldHint: false };
const WANT_METADATA = {
  list_dir: { title: 'List a directory', annotations: READ_ONLY },
  read_file: { title: 'Read a file', annotations: READ_ONLY },
  search_text: { title: 'Search text', annotations: READ_ONLY },
  write_file: { title: 'Write a file', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false } },
  edit_file: { title: 'Edit a file', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false } },
  find_files: { title: 'Find files', annotations: READ_ONLY },
  agent_submit: { title: 'Ask the agent', annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true } },
};
const WANT_PROTOCOL_VERSION = '2025-11-25'; // the SDK's latest; it has no 2026-07-28
const TIMEOUT_MS = 60_000;
const USAGE = 'usage: node interop.mjs <agentmcp binary> <root dir> [file relative to root]\n' +
  '   or: node interop.mjs --http <url> <token file> <root dir> [file relative to root]';

const env = process.env;
const args = process.argv.slice(2);
const overHTTP = args[0] === '--http' || (args.length === 0 && env.AGENTMCP_URL !== undefined);
if (args[0] === '--http') args.shift();
const bin = overHTTP ? undefined : (args.shift() ?? env.AGENTMCP_BIN);
const url = overHTTP ? (args.shift() ?? env.AGENTMCP_URL) : undefined;
const tokenFile = overHTTP ? (args.shift() ?? env.AGENTMCP_TOKEN_FILE) : undefined;
const root = args.shift() ?? env.AGENTMCP_ROOT;
const file = args.shift() ?? env.AGENTMCP_FILE ?? 'greeting.txt';
if (!(overHTTP ? url && tokenFile : bin) || !root) {
  console.error(USAGE);
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

// Every HTTP exchange of the http carrier's transport, recorded by its fetch.
const exchanges = [];
const pendingFetches = new Set();

function recordingFetch(input, init) {
  const headers = new Headers(init?.headers);
  const exchange = {
    method: init?.method ?? 'GET',
    protocolVersion: headers.get('mcp-protocol-version'),
    requestSessionId: headers.get('mcp-session-id'),
  };
  const pending = fetch(input, init).then((res) => {
    exchange.status = res.status;
    exchange.allow = res.headers.get('allow');
    exchange.sessionId = res.headers.get('mcp-session-id');
    exchanges.push(exchange);
    return res;
  });
  pendingFetches.add(pending);
  pending.catch(() => {}).finally(() => pendingFetches.delete(pending));
  return pending;
}

function openTransport() {
  if (!overHTTP) {
    const serve = ['serve', 'stdio', '--root', root];
    return new StdioClientTransport({
      command: bin,
      // AGENTMCP_RECORD_OUT: launch the server through "agentmcp record",
      // as a real client's configuration would (record_test.go).
      args: env.AGENTMCP_RECORD_OUT ? ['record', '--out', env.AGENTMCP_RECORD_OUT, '--', bin, ...serve] : serve,
      stderr: 'inherit', // server logs go to our stderr; stdout is the protocol
    });
  }
  const token = readFileSync(tokenFile, 'utf8').trim();
  return new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: recordingFetch,
  });
}

// checkStateless checks the HTTP side of the session (docs/SPEC.md §4, Streamable
// HTTP): the host never minted Mcp-Session-Id, so the client never sent one;
// every POST was answered 200 (a request) or 202 (a notification); the
// standalone SSE GET the SDK opens after notifications/initialized got 405
// with Allow: POST, which the SDK takes as "no stream here"; every POST
// after initialize carried MCP-Protocol-Version.
async function checkStateless(transport) {
  await Promise.allSettled([...pendingFetches]); // the SSE GET runs on its own
  check(transport.sessionId === undefined, `the transport has the session id ${show(transport.sessionId)}, want none`);
  let posts = 0;
  let gets = 0;
  for (const [i, ex] of exchanges.entries()) {
    const label = `HTTP exchange ${i + 1} (${ex.method} → ${ex.status})`;
    check(ex.sessionId === null, `${label}: the response carries Mcp-Session-Id ${show(ex.sessionId)}`);
    check(ex.requestSessionId === null, `${label}: the client sent Mcp-Session-Id ${show(ex.requestSessionId)}`);
    if (ex.method === 'POST') {
      posts++;
      check(ex.status === 200 || ex.status === 202, `${label}: want 200 or 202`);
      check(posts === 1 || ex.protocolVersion === WANT_PROTOCOL_VERSION,
        `${label}: MCP-Protocol-Version ${show(ex.protocolVersion)}, want ${WANT_PROTOCOL_VERSION}`);
    } else {
      gets += ex.method === 'GET' ? 1 : 0;
      check(ex.status === 405 && ex.allow === 'POST', `${label}: want 405 with Allow: POST, got Allow ${show(ex.allow)}`);
    }
  }
  check(posts === transport.sent.length,
    `${posts} POSTs for ${transport.sent.length} messages sent, want one POST per message`);
  check(gets === 1, `${gets} GET requests, want the SDK's one standalone SSE GET`);
}

async function main() {
  const wantContent = readFileSync(join(root, file), 'utf8');
  const transport = new RecordingTransport(openTransport());
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
    // 2025-11-25 adds the experimental tasks capability (docs/SPEC.md §14),
    // with tasks/list on a stream (its tasks are the connection's) but not on
    // the loopback host (one principal for every local client).
    // resources: the workspace's files through the file:// template
    // (docs/SPEC.md §2), with subscribe on a stream, where updates are
    // sent, and not over HTTP; no prompts or completions without the agent.
    const WANT_CAPABILITIES = overHTTP
      ? { tools: {}, resources: {}, tasks: { cancel: {}, requests: { tools: { call: {} } } } }
      : { tools: {}, resources: { subscribe: true }, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } };
    check(isDeepStrictEqual(client.getServerCapabilities(), WANT_CAPABILITIES),
      `server capabilities ${show(client.getServerCapabilities())}, want ${show(WANT_CAPABILITIES)}`);
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
      const want = WANT_METADATA[t.name];
      check(isDeepStrictEqual({ title: t.title, annotations: t.annotations }, want),
        `tool ${t.name}: title/annotations ${show({ title: t.title, annotations: t.annotations })}, want ${show(want)}`);
    }
    check(typeof client.getInstructions() === 'string' && client.getInstructions().includes('agent_submit'),
      `initialize instructions ${show(client.getInstructions())}, want a text that explains agent_submit`);
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

    if (overHTTP) await checkStateless(transport);
    check(transport.errors.length === 0,
      `transport errors: ${transport.errors.map((e) => e.message).join('; ')}`);
  } finally {
    await client.close();
  }
  const against = overHTTP ? `${url} (Streamable HTTP, ${exchanges.length} HTTP exchanges)` : `${bin} (stdio)`;
  console.log(`ok: TypeScript SDK client passed against ${against} at protocol ${WANT_PROTOCOL_VERSION}`);
}

try {
  await main();
  process.exit(0);
} catch (err) {
  const what = err instanceof CheckError ? 'check failed' : 'error';
  const detail = err instanceof CheckError ? err.message : (err?.stack ?? String(err));
  console.error(`FAIL (TypeScript SDK client over ${overHTTP ? 'Streamable HTTP' : 'stdio'}, ${what}): ${detail}`);
  process.exit(1);
}
