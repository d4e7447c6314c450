// The client side of the end-to-end test: everything goes through https and
// nginx to `agentmcp serve remote`, with tokens from the real issuer.
//
//   node client.mjs PUBLIC_URL ISSUER BACKEND_ADDR TOKENS_FILE
//
// PUBLIC_URL    https://localhost:PORT/team/agent/mcp (nginx)
// ISSUER        https://127.0.0.1:PORT (oauth2-mock-server)
// BACKEND_ADDR  127.0.0.1:PORT, where agentmcp listens (plain HTTP)
// TOKENS_FILE   where every token minted is written, one a line, so run.sh
//               can check that none reaches agentmcp's logs
//
// Needs NODE_EXTRA_CA_CERTS (the test CA) and, for "localhost" to mean
// 127.0.0.1 where nginx listens, --dns-result-order=ipv4first. Prints one
// line per check and exits 1 at the first failure.
import { appendFileSync, writeFileSync } from 'node:fs';
import { check, checks } from './check.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [publicURL, issuer, backend, tokensFile] = process.argv.slice(2);
if (!tokensFile) {
  console.error('usage: node client.mjs PUBLIC_URL ISSUER BACKEND_ADDR TOKENS_FILE');
  process.exit(2);
}
const pub = new URL(publicURL);
const metadataURL = `${pub.origin}/.well-known/oauth-protected-resource${pub.pathname}`;
const challenge = {
  missing: `Bearer resource_metadata="${metadataURL}"`,
  invalid: `Bearer error="invalid_token", resource_metadata="${metadataURL}"`,
  scope: `Bearer error="insufficient_scope", scope="mcp:tools", resource_metadata="${metadataURL}"`,
};
writeFileSync(tokensFile, '');


// token asks the issuer's token endpoint for an access token.
async function token({ aud = publicURL, scope = 'mcp:tools other', sub, clientId, expired } = {}) {
  const form = new URLSearchParams({ grant_type: 'client_credentials', scope, aud });
  if (sub) form.set('sub', sub);
  if (clientId) form.set('client_id', clientId);
  if (expired) form.set('expired', '1');
  const resp = await fetch(`${issuer}/token`, { method: 'POST', body: form });
  if (resp.status !== 200) throw new Error(`token endpoint: ${resp.status} ${await resp.text()}`);
  const t = (await resp.json()).access_token;
  appendFileSync(tokensFile, t + '\n');
  return t;
}

const initialize = JSON.stringify({
  jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'e2e-raw', version: '1' } },
});

// post sends an initialize POST through the proxy; returns status, challenge,
// Retry-After and body.
async function post(bearer, xff) {
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  if (xff) headers['X-Forwarded-For'] = xff;
  const resp = await fetch(publicURL, { method: 'POST', headers, body: initialize });
  return {
    status: resp.status,
    challenge: resp.headers.get('www-authenticate'),
    retryAfter: resp.headers.get('retry-after'),
    sessionId: resp.headers.get('mcp-session-id'),
    body: await resp.text(),
  };
}

function refusal(r, status, wantChallenge, what) {
  check(
    r.status === status && r.challenge === wantChallenge && r.body === '' && r.sessionId === null,
    what,
    `got ${r.status} ${JSON.stringify(r.challenge)} body ${JSON.stringify(r.body)}`,
  );
}

// --- the issuer's tokens are RFC 9068 access tokens --------------------------
const good = await token();
const header = JSON.parse(Buffer.from(good.split('.')[0], 'base64url').toString());
const claims = JSON.parse(Buffer.from(good.split('.')[1], 'base64url').toString());
check(header.typ === 'at+jwt' && header.alg === 'RS256', 'issuer mints RS256 at+jwt tokens', JSON.stringify(header));
check(
  claims.aud === publicURL && claims.iss === issuer && claims.scope === 'mcp:tools other' &&
    claims.sub === 'e2e-user' && claims.client_id === 'e2e-client',
  'token claims: aud = public URL, iss, scope, sub, client_id',
  JSON.stringify(claims),
);

// --- RFC 9728 metadata and the unauthenticated challenge ----------------------
{
  const resp = await fetch(metadataURL);
  const text = await resp.text();
  const want = JSON.stringify({
    resource: publicURL, authorization_servers: [issuer], scopes_supported: ['mcp:tools'],
    bearer_methods_supported: ['header'],
  });
  check(resp.status === 200 && text === want, 'metadata document through https, exact', `${resp.status} ${text}`);
}
refusal(await post(undefined), 401, challenge.missing, 'no token: 401 with resource_metadata');

// --- the TypeScript SDK client: list tools and call one -----------------------
{
  const client = new Client({ name: 'agentmcp-e2e', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(publicURL), {
    requestInit: { headers: { Authorization: `Bearer ${good}` } },
  });
  await client.connect(transport);
  check(transport.sessionId === undefined, 'connected over https; no Mcp-Session-Id');
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  check(
    ['list_dir', 'read_file', 'search_text', 'write_file', 'agent_submit'].every((n) => names.includes(n)) &&
      names[names.length - 1] === 'agent_submit',
    'tools/list: the workspace tools, agent_submit last',
    names.join(','),
  );
  const result = await client.callTool({ name: 'read_file', arguments: { path: 'hello.txt' } });
  const text = result.content?.[0]?.text ?? '';
  check(!result.isError && text.includes('hello through nginx'), 'tools/call read_file through https', text.slice(0, 200));

  // The workspace's files as resources: serve remote names them
  // agentmcp://workspace/{+path}, never by the server's paths (docs/SPEC.md §2, §9).
  const { resourceTemplates } = await client.listResourceTemplates();
  const templates = resourceTemplates.map((t) => t.uriTemplate);
  check(
    templates[0] === 'agentmcp://workspace/{+path}' && !JSON.stringify(resourceTemplates).includes('file:'),
    'resources/templates/list: agentmcp://workspace/{+path}, no file:// path',
    templates.join(','),
  );
  const read = await client.readResource({ uri: 'agentmcp://workspace/hello.txt' });
  const content = read.contents?.[0] ?? {};
  check(
    read.contents.length === 1 && content.uri === 'agentmcp://workspace/hello.txt' &&
      content.text === 'hello through nginx\n' && content.mimeType === 'text/plain; charset=utf-8',
    'resources/read agentmcp://workspace/hello.txt through https',
    JSON.stringify(read).slice(0, 200),
  );
  for (const uri of ['agentmcp://workspace/../agentmcp.err', 'agentmcp://workspace/%2e%2e/agentmcp.err', 'agentmcp://workspace//etc/passwd']) {
    let err = null;
    try {
      await client.readResource({ uri });
    } catch (e) {
      err = e;
    }
    check(err?.code === -32602 && err?.data?.uri === uri, `resources/read ${uri}: -32602 with data.uri`, String(err));
  }
  await client.close();
}

// --- refusals through the same path -------------------------------------------
refusal(await post(await token({ aud: 'https://other.example.test/mcp' })), 401, challenge.invalid, 'token for another audience: 401 invalid_token');
refusal(await post(await token({ scope: 'other' })), 403, challenge.scope, 'token without the scope: 403 insufficient_scope');
refusal(await post(await token({ expired: true })), 401, challenge.invalid, 'expired token: 401 invalid_token');
refusal(await post(await token({ sub: 'mallory', clientId: 'other-client' })), 403, null, 'principal not allowed: 403 without a challenge');
{
  // The SDK client with a token for another audience cannot connect.
  const client = new Client({ name: 'agentmcp-e2e', version: '1.0.0' });
  const wrong = await token({ aud: 'https://other.example.test/mcp' });
  const transport = new StreamableHTTPClientTransport(new URL(publicURL), {
    requestInit: { headers: { Authorization: `Bearer ${wrong}` } },
  });
  let failed = false;
  try {
    await client.connect(transport);
  } catch {
    failed = true;
  }
  check(failed, 'the SDK client with a wrong-audience token is refused');
  await client.close().catch(() => {});
}

// --- two clients behind the proxy have separate budgets ----------------------
{
  const parts = good.split('.');
  const sig = Buffer.from(parts[2], 'base64url');
  sig[0] ^= 0xff;
  const forged = `${parts[0]}.${parts[1]}.${sig.toString('base64url')}`;
  appendFileSync(tokensFile, forged + '\n');
  const a = '198.51.100.1';
  const b = '198.51.100.2';
  let all401 = true;
  for (let i = 0; i < 20; i++) {
    const r = await post(forged, a);
    all401 &&= r.status === 401 && r.challenge === challenge.invalid;
  }
  check(all401, 'client A (X-Forwarded-For 198.51.100.1): 20 forged tokens, 20 × 401');
  const over = await post(forged, a);
  check(
    over.status === 429 && over.challenge === null && Number(over.retryAfter) >= 1 && over.body === '',
    'client A, 21st forged token: 429 with Retry-After, no challenge',
    `${over.status} ${over.retryAfter} ${over.challenge}`,
  );
  const other = await post(forged, b);
  check(other.status === 401 && other.challenge === challenge.invalid, 'client B (198.51.100.2): its own budget, 401', `${other.status}`);
  const valid = await post(good, a);
  check(valid.status === 200 && valid.body.includes('"protocolVersion"'), 'client A with a valid token: served despite its spent budget', `${valid.status}`);
  const expired = await post(await token({ expired: true }), a);
  check(expired.status === 401 && expired.challenge === challenge.invalid, 'client A with an expired token: 401, never throttled', `${expired.status}`);
}

// --- the listener's own address is no public Host ----------------------------
{
  const resp = await fetch(`http://${backend}${pub.pathname}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${good}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: initialize,
  });
  check(resp.status === 403 && (await resp.text()) === '', `Host ${backend} (the listener) refused: 403`, `${resp.status}`);
}
console.log(`all ${checks()} checks passed`);
