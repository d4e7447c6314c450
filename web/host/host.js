// The browser test's host (browser/view_test.go): a page that does what an
// MCP Apps host does with agentmcp's turn view, with the extension's own
// host side (AppBridge). It connects to /mcp (same origin: the test's proxy
// adds the token and maps Host and Origin) with the TypeScript SDK client
// pinned to 2026-07-28, declaring form elicitation and the UI extension;
// finds agent_submit's _meta.ui.resourceUri, reads the view, renders it in
// a sandboxed iframe (scripts only, an opaque origin) under the CSP the
// extension prescribes for an empty allowance, sends the tool input, calls
// agent_submit and sends its result. Approvals wait for the test
// (window.host.approve()), which accepts "allow_once".
//
// Query: prompt, conversation (optional); fixture=1 serves the view a
// scripted state instead of the server's (the hostile-state test), with no
// MCP client at all: the test's server gives /view.html and /fixture.json.
//
// window.host records what the view sent through the bridge (every
// JSON-RPC message's method, and each resources/read's uri), the
// elicitations, and errors.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { AppBridge, PostMessageTransport, getToolUiResourceUri } from "@modelcontextprotocol/ext-apps/app-bridge";

const q = new URLSearchParams(location.search);
const host = {
  viewMessages: [], // {method, uri?} of every message the view posted
  elicitations: [], // their messages
  errors: [],
  result: null, // agent_submit's result
  ready: false,
  approvals: [], // resolvers of the elicitations waiting for the test
  approve() {
    const r = this.approvals.shift();
    if (r) r();
    return !!r;
  },
  fixture: null, // fixture mode: {input, running, changes, result, meta}
};
window.host = host;
const fail = (e) => host.errors.push(String((e && e.stack) || e));

// The extension's restrictive default CSP, which an empty allowance keeps
// (SEP-1865 "Host Behavior"), as a meta element in the view's head.
const CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; media-src data:; " +
  "connect-src 'none'; frame-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'";

function cspOf(meta) {
  const c = (meta && meta.ui && meta.ui.csp) || {};
  for (const k of ["connectDomains", "resourceDomains", "frameDomains", "baseUriDomains"]) {
    if (Array.isArray(c[k]) && c[k].length) throw new Error(`the view asks for ${k} ${JSON.stringify(c[k])}; it must load nothing`);
  }
  return CSP;
}

function mount(html, meta) {
  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.title = "Agent turn";
  iframe.id = "view";
  document.body.append(iframe);
  window.addEventListener("message", (e) => {
    if (e.source !== iframe.contentWindow || !e.data || typeof e.data.method !== "string") return;
    const m = { method: e.data.method };
    if (e.data.params && typeof e.data.params.uri === "string") m.uri = e.data.params.uri;
    host.viewMessages.push(m);
  });
  iframe.srcdoc = html.replace("<head>", `<head><meta http-equiv="Content-Security-Policy" content="${cspOf(meta)}">`);
  return iframe;
}

const hostInfo = { name: "agentmcp-browser-host", version: "1.0.0" };
const hostContext = { theme: "light", displayMode: "inline", platform: "web", locale: "en-US" };

async function live() {
  const client = new Client({ name: "agentmcp-browser-host", version: "1.0.0" }, {
    capabilities: {
      elicitation: { form: {} },
      extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } },
    },
    versionNegotiation: { mode: { pin: "2026-07-28" } },
  });
  client.setRequestHandler("elicitation/create", async (req) => {
    host.elicitations.push(req.params.message);
    await new Promise((r) => host.approvals.push(r));
    return { action: "accept", content: { decision: "allow_once" } };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", location.href)));
  const { tools } = await client.listTools();
  const submit = tools.find((t) => t.name === "agent_submit");
  const uri = submit && getToolUiResourceUri(submit);
  if (!uri) throw new Error(`agent_submit links no view: ${JSON.stringify(submit)}`);
  host.viewURI = uri;
  const res = await client.readResource({ uri });
  const content = res.contents[0];
  if (content.mimeType !== "text/html;profile=mcp-app") throw new Error(`the view is ${content.mimeType}`);
  const iframe = mount(content.text, content._meta);
  const bridge = new AppBridge(client, hostInfo, { serverResources: {}, serverTools: {}, logging: {} }, { hostContext });
  bridge.onsizechange = ({ height }) => { if (height) iframe.style.height = `${Math.ceil(height)}px`; };
  const args = { prompt: q.get("prompt") || "" };
  if (q.get("conversation")) args.conversation = q.get("conversation");
  bridge.oninitialized = async () => {
    try {
      host.ready = true;
      await bridge.sendToolInput({ arguments: args });
      host.result = await client.callTool({ name: "agent_submit", arguments: args }, { timeout: 600000 });
      await bridge.sendToolResult(host.result);
    } catch (e) {
      fail(e);
    }
  };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
}

// fixture serves the view a scripted state (/fixture.json: the tool
// input, the running resource's JSON, the changes' diff, the tool result),
// with no MCP server behind.
async function fixture() {
  const f = await (await fetch("/fixture.json")).json();
  host.fixture = f;
  const res = await fetch("/view.html");
  const iframe = mount(await res.text(), f.meta);
  const bridge = new AppBridge(null, hostInfo, { serverResources: {} }, { hostContext });
  bridge.onsizechange = ({ height }) => { if (height) iframe.style.height = `${Math.ceil(height)}px`; };
  bridge.onreadresource = async ({ uri }) => {
    const text = uri.endsWith("/running") ? JSON.stringify(f.running) : f.changes;
    if (text === undefined) throw new Error(`no fixture for ${uri}`);
    return { contents: [{ uri, mimeType: uri.endsWith("/running") ? "application/json" : "text/x-diff", text }] };
  };
  bridge.oninitialized = async () => {
    host.ready = true;
    await bridge.sendToolInput({ arguments: f.input });
    if (f.result) await bridge.sendToolResult(f.result);
  };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
}

(q.get("fixture") ? fixture() : live()).catch(fail);
