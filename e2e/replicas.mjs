// The client side of the replicas' end-to-end test (e2e/replicas.sh): a
// scripted 2026-07-28 session through https and nginx, round-robin over two
// `agentmcp serve remote` replicas sharing one PostgreSQL store, with
// tokens from the real issuer. nginx says which replica answered each
// request (X-Agentmcp-Upstream, the harness's header), and every request of
// the session lands on the other replica than the one before.
//
//   node replicas.mjs PUBLIC_URL ISSUER TOKENS_FILE ROOT ADDR=PID ADDR=PID
//
// ROOT is the replicas' workspace; ADDR=PID names each replica's address
// and process, for the kill -9 at the end. Prints one line per check and
// exits 1 at the first failure.
import { appendFileSync, readFileSync, existsSync } from 'node:fs';
import { check, checks } from './check.mjs';

const [publicURL, issuer, tokensFile, root, ...replicaArgs] = process.argv.slice(2);
if (replicaArgs.length !== 2) {
  console.error('usage: node replicas.mjs PUBLIC_URL ISSUER TOKENS_FILE ROOT ADDR=PID ADDR=PID');
  process.exit(2);
}
const pids = Object.fromEntries(replicaArgs.map((a) => a.split('=')));


const form = new URLSearchParams({ grant_type: 'client_credentials', scope: 'mcp:tools', aud: publicURL });
const tokenResp = await fetch(`${issuer}/token`, { method: 'POST', body: form });
const bearer = (await tokenResp.json()).access_token;
appendFileSync(tokensFile, bearer + '\n');

const tasksCaps = { extensions: { 'io.modelcontextprotocol/tasks': {} }, elicitation: { form: {} } };
const roundCaps = { elicitation: { form: {} } };
let id = 0;
let last = ''; // the replica that answered the request before
const seen = new Set();

// rpc sends one 2026-07-28 request with the headers that mirror it and
// returns its result (or error) and the replica that answered; unless
// anyReplica, it checks the replica is not the previous one's.
async function rpc(method, params, caps, { name, anyReplica } = {}) {
  const body = {
    jsonrpc: '2.0', id: ++id, method,
    params: { ...params, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': caps } },
  };
  const headers = {
    Authorization: `Bearer ${bearer}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': method,
  };
  const mirror = name ?? params.name ?? params.taskId;
  if (mirror !== undefined) headers['Mcp-Name'] = mirror;
  const resp = await fetch(publicURL, { method: 'POST', headers, body: JSON.stringify(body) });
  const replica = resp.headers.get('x-agentmcp-upstream') ?? '';
  const text = await resp.text();
  // A request nginx had sent to a replica as it was killed gets 502 (nginx
  // sends a POST once): a client sends it again, as after the kill below.
  if (resp.status === 502 && anyReplica) return { gateway: 502 };
  if (resp.status !== 200) throw new Error(`${method}: ${resp.status} ${text}`);
  const msg = JSON.parse(text.startsWith('event:') || text.startsWith(':') || text.startsWith('data:') ? lastEvent(text) : text);
  if (!anyReplica && (replica === last || replica === '')) {
    check(false, `request ${id} (${method}) lands on the other replica`, `answered by ${replica || 'no replica'}, as the request before`);
  }
  last = replica;
  seen.add(replica);
  return { ...msg, replica };
}

// lastEvent is the JSON of an event stream's last data line.
function lastEvent(text) {
  const data = text.split('\n').filter((l) => l.startsWith('data:'));
  return data[data.length - 1].slice(5);
}

const textOf = (result) => result?.content?.[0]?.text ?? '';

// poll asks tasks/get until want(status) or a bound on the requests.
async function poll(taskId, want, what) {
  for (let i = 0; i < 600; i++) {
    const r = await rpc('tasks/get', { taskId }, tasksCaps);
    if (r.result && want(r.result.status)) return r;
    await new Promise((ok) => setTimeout(ok, 100)); // a client's poll interval
  }
  check(false, what, 'never reached');
}

// --- memory across turns: one conversation, each turn on the other replica
const first = await rpc('tools/call', { name: 'agent_submit', arguments: { prompt: 'remember the word cobalt', conversation: 'notes' } }, {});
check(textOf(first.result) === 'noted', `turn 1 of "notes" on ${first.replica}`, JSON.stringify(first));
const second = await rpc('tools/call', { name: 'agent_submit', arguments: { prompt: 'recall', conversation: 'notes' } }, {});
check(
  textOf(second.result) === 'you said: remember the word cobalt' && second.result.structuredContent?.turn === 2,
  `turn 2 on ${second.replica} was sent turn 1 (the conversation is shared)`, JSON.stringify(second.result),
);

// --- a task created on one replica, polled, approved and read on the other
const created = await rpc('tools/call', { name: 'agent_submit', arguments: { prompt: 'write approved.txt yes' } }, tasksCaps);
check(created.result?.resultType === 'task' && created.result.status === 'working', `task created on ${created.replica}`, JSON.stringify(created));
const taskId = created.result.taskId;
const waiting = await poll(taskId, (s) => s === 'input_required', 'the task asks for approval');
const ask = waiting.result.inputRequests?.['input-1'];
check(ask?.method === 'elicitation/create' && ask.params.message.includes('write_file'), `tasks/get on ${waiting.replica}: input_required, input-1 asks to write`, JSON.stringify(waiting.result));
// The answer goes to the replica that does not run the task: the next
// request lands there once the one before was the running replica's.
if (last !== created.replica) await rpc('tasks/get', { taskId }, tasksCaps);
const approved = await rpc('tasks/update', { taskId, inputResponses: { 'input-1': { action: 'accept', content: { decision: 'allow_once' } } } }, tasksCaps);
check(approved.result?.resultType === 'complete' && approved.replica !== created.replica,
  `approved on ${approved.replica} (tasks/update), running on ${created.replica}`, JSON.stringify(approved));
const finished = await poll(taskId, (s) => s === 'completed' || s === 'failed', 'the approved task ends');
check(
  finished.result.status === 'completed' && textOf(finished.result.result).startsWith('done: ') &&
    readFileSync(`${root}/approved.txt`, 'utf8') === 'yes',
  `tasks/get on ${finished.replica}: completed, approved.txt written`, JSON.stringify(finished.result),
);
{
  const again = await rpc('tasks/get', { taskId }, tasksCaps);
  check(again.result?.status === 'completed' && again.result.lastUpdatedAt === finished.result.lastUpdatedAt,
    `the same task read on ${again.replica}`, JSON.stringify(again.result));
}

// --- a task cancelled on the other replica than the one running it
const slow = await rpc('tools/call', { name: 'agent_submit', arguments: { prompt: 'slow' } }, tasksCaps);
const slowId = slow.result.taskId;
const cancelled = await rpc('tasks/cancel', { taskId: slowId }, tasksCaps);
check(cancelled.result?.resultType === 'complete' && cancelled.replica !== slow.replica, `cancelled on ${cancelled.replica}, running on ${slow.replica}`, JSON.stringify(cancelled));
{
  const r = await rpc('tasks/get', { taskId: slowId }, tasksCaps);
  check(r.result?.status === 'cancelled' && r.replica === slow.replica, `tasks/get on ${r.replica} (where it ran): cancelled at once`, JSON.stringify(r.result));
}

// --- a 2026-07-28 round parked on one replica, retried on the other
const parked = await rpc('tools/call', { name: 'write_file', arguments: { path: 'round.txt', content: 'by round' } }, roundCaps);
check(parked.result?.resultType === 'input_required' && typeof parked.result.requestState === 'string', `write_file parked a round on ${parked.replica}`, JSON.stringify(parked));
const retried = await rpc('tools/call', {
  name: 'write_file', arguments: { path: 'round.txt', content: 'by round' },
  requestState: parked.result.requestState, inputResponses: { prompt: { action: 'accept', content: { decision: 'allow_once' } } },
}, roundCaps);
check(
  retried.result?.resultType === 'complete' && retried.result.isError === false && readFileSync(`${root}/round.txt`, 'utf8') === 'by round',
  `the retry on ${retried.replica} reached the call on ${parked.replica}: written`, JSON.stringify(retried.result),
);
{
  const replay = await rpc('tools/call', {
    name: 'write_file', arguments: { path: 'round.txt', content: 'by round' },
    requestState: parked.result.requestState, inputResponses: { prompt: { action: 'accept', content: { decision: 'allow_once' } } },
  }, roundCaps);
  check(replay.error?.code === -32602, `the used requestState replayed on ${replay.replica}: -32602`, JSON.stringify(replay));
}
check(seen.size === 2, `every request alternated between the two replicas (${[...seen].join(', ')})`);

// --- kill -9 of the replica running a task
const doomed = await rpc('tools/call', { name: 'agent_submit', arguments: { prompt: 'slow' } }, tasksCaps);
const doomedId = doomed.result.taskId;
await poll(doomedId, (s) => s === 'working', 'the doomed task runs');
process.kill(Number(pids[doomed.replica]), 'SIGKILL');
console.log(`killed ${doomed.replica} (pid ${pids[doomed.replica]}) with SIGKILL`);
let gateways = 0;
const lapsed = await (async () => {
  for (let i = 0; i < 600; i++) {
    const r = await rpc('tasks/get', { taskId: doomedId }, tasksCaps, { anyReplica: true });
    if (r.gateway && ++gateways <= 2) continue; // it was on its way to the killed replica
    if (r.replica === doomed.replica) check(false, 'after the kill nginx sends every request to the live replica', r.replica);
    if (r.result?.status !== 'working') return r;
    await new Promise((ok) => setTimeout(ok, 100));
  }
  return null;
})();
check(
  lapsed?.result?.status === 'failed' && lapsed.result.error?.code === -32603 && lapsed.result.error.message.includes('lease lapsed'),
  `the killed replica's task is failed on ${lapsed?.replica} once its lease lapsed`, JSON.stringify(lapsed?.result),
);
{
  const r = await rpc('tasks/get', { taskId }, tasksCaps, { anyReplica: true });
  check(r.result?.status === 'completed', 'the task that ended before the kill is intact', JSON.stringify(r.result));
  const turn = await rpc('tools/call', { name: 'agent_submit', arguments: { prompt: 'recall', conversation: 'notes' } }, {}, { anyReplica: true });
  check(
    textOf(turn.result) === 'you said: remember the word cobalt | recall' && turn.result.structuredContent?.turn === 3,
    'every committed turn of "notes" is intact on the live replica', JSON.stringify(turn.result),
  );
}
check(existsSync(`${root}/approved.txt`) && existsSync(`${root}/round.txt`), 'the workspace holds both approved writes');
console.log(`all ${checks()} checks passed`);
