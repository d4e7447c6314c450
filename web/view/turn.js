// The turn view (docs/SPEC.md §2 "The turn view"): an MCP App that shows
// one agent_submit turn as it runs. It talks to the host only through the
// ext-apps App class, and asks it for nothing but resources/read of the
// turn's two resources:
//
//   agentmcp://conversations/{name}/running        the live state (JSON), polled
//   agentmcp://conversations/{name}/turns/{n}/changes  the turn's diffs, once it ended
//
// It never calls a tool and never answers an approval: those stay the
// host's. Every text it shows (the prompt, the model's text, tool names,
// file names, diffs, the answer) goes into the page as text (textContent),
// never as markup, and is cut to MAX_TEXT characters with a visible note.
import { App, applyHostStyleVariables } from "@modelcontextprotocol/ext-apps";

const MAX_TEXT = 65536; // characters of one text shown
const MAX_DIFF_LINES = 4000; // lines of one diff shown
const POLL_MS = 1000; // between two reads of the live state
const POLL_MAX_MS = 8000; // backing off after failed reads

const $ = (id) => document.getElementById(id);

// el makes an element with text (never markup) and a class.
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

// bounded puts s into parent as text, cut to max characters with a note
// saying so; cutFrom is the server's own cut (the bytes it had).
function bounded(parent, s, max, cutFrom) {
  s = typeof s === "string" ? s : "";
  parent.replaceChildren();
  const shown = s.length > max ? s.slice(0, max) : s;
  parent.append(document.createTextNode(shown));
  if (s.length > max) {
    parent.append(el("span", `Cut: ${max.toLocaleString("en")} of ${s.length.toLocaleString("en")} characters shown.`, "cut"));
  } else if (cutFrom) {
    parent.append(el("span", `Cut by the server: the start of ${Number(cutFrom).toLocaleString("en")} bytes is shown.`, "cut"));
  }
}

// diffBlock renders a unified diff as lines of text, each a span whose
// class colours it (the +, - and @@ marks stay, so colour is not the only
// cue), cut to MAX_TEXT characters and MAX_DIFF_LINES lines.
function diffBlock(diff, label) {
  const pre = el("pre", null, "diff");
  pre.tabIndex = 0; // a scrolled region a keyboard can reach
  pre.setAttribute("role", "region");
  pre.setAttribute("aria-label", label);
  let text = typeof diff === "string" ? diff : "";
  let note = "";
  if (text.length > MAX_TEXT) {
    note = `Cut: ${MAX_TEXT.toLocaleString("en")} of ${text.length.toLocaleString("en")} characters of this diff shown.`;
    text = text.slice(0, MAX_TEXT);
  }
  let lines = text.split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  if (lines.length > MAX_DIFF_LINES) {
    note = note || `Cut: ${MAX_DIFF_LINES.toLocaleString("en")} of ${lines.length.toLocaleString("en")} lines of this diff shown.`;
    lines = lines.slice(0, MAX_DIFF_LINES);
  }
  for (const line of lines) {
    let cls = "";
    if (line.startsWith("+++") || line.startsWith("---")) cls = "head";
    else if (line.startsWith("+")) cls = "add";
    else if (line.startsWith("-")) cls = "del";
    else if (line.startsWith("@@")) cls = "hunk";
    pre.append(el("span", line, cls));
  }
  const box = document.createDocumentFragment();
  box.append(pre);
  if (note) box.append(el("span", note, "cut"));
  return box;
}

// splitDiff splits a turn's diffs (one file after another) at each
// "--- " line that a "+++ " line follows; a block without a header
// (a note) stays with the file before it.
function splitDiff(text) {
  const lines = (typeof text === "string" ? text : "").split("\n");
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    const starts = (l.startsWith("--- ") && (lines[i + 1] || "").startsWith("+++ ")) || l.startsWith("Binary files ");
    if (starts || !blocks.length) blocks.push([]);
    blocks[blocks.length - 1].push(l);
  }
  return blocks.map((b) => b.join("\n")).filter((b) => b.trim() !== "");
}

const view = {
  conversation: "default",
  prompt: null, // the tool call's prompt, from tool-input
  result: null, // the tool call's result, from tool-result
  followed: null, // the live state's id this view follows
  ended: false,
  diffsOf: null, // the turn whose diffs were read
  diffText: undefined, // their text, once read
  timer: 0,
  delay: POLL_MS,
  closed: false,
};

function setStatus(s) {
  if ($("status").textContent !== s) $("status").textContent = s;
}

function setLive(on) {
  document.body.classList.toggle("live", on);
}

function renderPrompt(p, cutFrom) {
  bounded($("prompt"), p, MAX_TEXT, cutFrom);
}

// renderSteps shows each model step: its text and its tool calls with
// their outcomes, in order. Elements are reused, so a step's growing text
// changes in place (a screen reader is not told of every character).
function renderSteps(steps) {
  const list = $("steps");
  steps = Array.isArray(steps) ? steps : [];
  while (list.children.length > steps.length) list.lastChild.remove();
  steps.forEach((s, i) => {
    let li = list.children[i];
    if (!li) {
      li = el("li");
      li.append(el("h3"), el("div", null, "text"), el("ul", null, "calls"));
      list.append(li);
    }
    const [h, text, calls] = li.children;
    h.textContent = `Step ${Number(s.step) || i + 1}`;
    const t = typeof s.text === "string" ? s.text : "";
    bounded(text, t, MAX_TEXT);
    if (s.text_bytes > new TextEncoder().encode(t).length) {
      text.prepend(el("span", `Earlier text of this step is not shown (${Number(s.text_bytes).toLocaleString("en")} bytes in all).`, "cut"));
    }
    calls.replaceChildren();
    for (const c of Array.isArray(s.tool_calls) ? s.tool_calls : []) {
      const item = el("li");
      item.append(el("code", c.name), document.createTextNode(" — "), el("span", stateWord(c.state), "state"));
      calls.append(item);
    }
    calls.hidden = calls.children.length === 0;
  });
}

function stateWord(s) {
  return { running: "running", ok: "done", failed: "failed" }[s] || "unknown";
}

// renderPending shows the request a tool waits on: its summary and
// arguments, a diff among them rendered as one.
function renderPending(p) {
  const box = $("pending");
  $("pending-s").hidden = !p;
  box.replaceChildren();
  if (!p) return;
  box.append(el("p", `${p.tool}: ${p.summary || ""}`));
  const dl = el("dl", null, "args");
  for (const a of Array.isArray(p.arguments) ? p.arguments : []) {
    dl.append(el("dt", a.name));
    const dd = el("dd");
    if (a.kind === "content") dd.textContent = `${Number(a.bytes).toLocaleString("en")} bytes`;
    else if (a.kind === "lines" && a.name === "diff") dd.append(diffBlock(a.value, `Diff awaiting approval`));
    else if (a.kind === "lines") {
      const pre = el("pre", null, "diff");
      pre.tabIndex = 0;
      pre.append(el("span", (a.value || "").slice(0, MAX_TEXT)));
      dd.append(pre);
    } else bounded(dd, a.value, MAX_TEXT);
    if (a.value_cut_from) dd.append(el("span", `Cut by the server: the start of ${Number(a.value_cut_from).toLocaleString("en")} bytes is shown.`, "cut"));
    if (a.kind === "path") dd.classList.add("path");
    dl.append(dd);
  }
  box.append(dl);
}

// renderFiles lists the changed files; diffs, when read, go under each.
function renderFiles(files, diffText) {
  const box = $("files");
  files = Array.isArray(files) ? files : [];
  $("files-s").hidden = files.length === 0;
  box.replaceChildren();
  const blocks = diffText === undefined ? [] : splitDiff(diffText);
  files.forEach((f, i) => {
    const d = el("details");
    d.open = true;
    const sum = el("summary");
    sum.append(el("span", f.path, "path"), document.createTextNode(`  +${Number(f.added) || 0} −${Number(f.removed) || 0}`));
    d.append(sum);
    const block = blocks.find((b) => b.split("\n").includes(`+++ b/${f.path}`)) ?? blocks[i];
    if (block !== undefined) d.append(diffBlock(block, `Diff of ${f.path}`));
    else if (diffText === undefined) d.append(el("p", "Reading the diff…", "note"));
    box.append(d);
  });
}

function renderUsage(u) {
  if (!u) return;
  $("usage").textContent = `Tokens: ${Number(u.input_tokens) || 0} in, ${Number(u.output_tokens) || 0} out.`;
}

function renderAnswer(text, cutFrom) {
  $("answer-s").hidden = false;
  bounded($("answer"), text, MAX_TEXT, cutFrom);
}

const STOPPED = {
  max_steps: "It stopped at the step limit.",
  prompt_unanswered: "It stopped: an approval went unanswered.",
  superseded: "It stopped: a new prompt came for this conversation.",
};

// finish shows the ended turn: its answer, usage and files, and reads its
// diffs once.
async function finish(r) {
  view.ended = true;
  setLive(false);
  setStatus(`Turn ${r.turn || ""} finished. ${STOPPED[r.stopped] || ""}`.replace(/\s+/g, " ").trim());
  renderPending(null);
  renderAnswer(r.response, r.response_cut_from);
  renderUsage(r.usage);
  const files = Array.isArray(r.changed_files) ? r.changed_files : [];
  renderFiles(files, view.diffText);
  if (!files.length || !r.turn || view.diffsOf === r.turn) return;
  view.diffsOf = r.turn;
  try {
    const res = await app.readServerResource({ uri: `agentmcp://conversations/${encodeURIComponent(r.conversation || view.conversation)}/turns/${Number(r.turn)}/changes` });
    const c = res && Array.isArray(res.contents) ? res.contents[0] : null;
    view.diffText = c && typeof c.text === "string" ? c.text : "";
  } catch {
    view.diffText = "";
    setStatus(`Turn ${r.turn} finished; its diffs could not be read.`);
  }
  renderFiles(files, view.diffText);
}

// apply shows one read of the live state, if it is the turn this view
// was opened on: the first running turn with its prompt, or the ended
// one the tool result names.
function apply(s) {
  if (!s || typeof s !== "object") return;
  if (view.followed === null) {
    const ours = s.prompt === view.prompt && (s.state === "running" || s.state === "waiting" ||
      (view.result && view.result.turn && s.turn === view.result.turn));
    if (!ours) {
      if (view.result) stopPolling(); // the result says it all
      else setStatus("Waiting for the turn to start…");
      return;
    }
    view.followed = s.id;
  } else if (s.id !== view.followed) {
    // A later turn of the conversation: the one followed has ended.
    stopPolling();
    if (!view.ended) setStatus("The turn ended; a later turn of this conversation is running.");
    return;
  }
  renderPrompt(s.prompt, s.prompt_cut_from);
  renderSteps(s.steps);
  renderUsage(s.usage);
  switch (s.state) {
    case "running":
    case "waiting": {
      setLive(true);
      renderPending(s.state === "waiting" ? s.pending : null);
      const calls = (s.steps || []).reduce((n, st) => n + ((st.tool_calls || []).length), 0);
      setStatus(s.state === "waiting"
        ? `Waiting for your approval of ${s.pending ? s.pending.tool : "a tool call"}…`
        : `Running: step ${(s.steps || []).length}, ${calls} tool call${calls === 1 ? "" : "s"} so far.`);
      if (!view.result) renderFiles((s.changed_paths || []).map((p) => ({ path: p })), "");
      break;
    }
    case "finished":
      stopPolling();
      finish(view.result && view.result.turn ? { ...s, ...view.result } : s);
      break;
    default:
      stopPolling();
      setLive(false);
      renderPending(null);
      setStatus(s.state === "cancelled" ? "The turn was cancelled." : "The turn failed.");
      if (s.error) renderAnswer(s.error);
  }
}

function stopPolling() {
  clearTimeout(view.timer);
  view.timer = 0;
  view.closed = true;
}

async function poll() {
  view.timer = 0;
  if (view.closed) return;
  try {
    const res = await app.readServerResource({ uri: `agentmcp://conversations/${encodeURIComponent(view.conversation)}/running` });
    const c = res && Array.isArray(res.contents) ? res.contents[0] : null;
    apply(JSON.parse(c && typeof c.text === "string" ? c.text : "null"));
    view.delay = POLL_MS;
  } catch {
    // Not found before the conversation's first turn; a host that is
    // busy. Read again, less often.
    view.delay = Math.min(view.delay * 2, POLL_MAX_MS);
  }
  if (!view.closed && !view.timer) view.timer = setTimeout(poll, view.delay);
}

const app = new App({ name: "agentmcp turn view", version: "1.0.0" }, {}, { autoResize: true });

app.ontoolinput = (p) => {
  const args = (p && p.arguments) || {};
  view.prompt = typeof args.prompt === "string" ? args.prompt : "";
  if (typeof args.conversation === "string" && /^[A-Za-z0-9._-]{1,64}$/.test(args.conversation)) view.conversation = args.conversation;
  renderPrompt(view.prompt);
  setLive(true);
  if (!view.timer && !view.closed) poll();
};

app.ontoolresult = (r) => {
  const sc = r && r.structuredContent;
  if (r && r.isError) {
    stopPolling();
    setLive(false);
    const t = Array.isArray(r.content) && r.content[0] ? r.content[0].text : "";
    setStatus("The submission was refused.");
    renderAnswer(t);
    return;
  }
  if (!sc || typeof sc !== "object") {
    // A result without the report: show its text.
    const t = Array.isArray(r && r.content) && r.content[0] ? r.content[0].text : "";
    stopPolling();
    setLive(false);
    setStatus("Turn finished.");
    renderAnswer(t);
    return;
  }
  view.result = sc;
  if (typeof sc.conversation === "string") view.conversation = sc.conversation;
  finish(sc);
  // One more read, now, shows the ended turn's last steps, when the
  // server still has them (a view opened on an old turn shows its result
  // alone).
  clearTimeout(view.timer);
  view.timer = 0;
  view.closed = false;
  poll();
};

app.ontoolcancelled = () => {
  stopPolling();
  setLive(false);
  setStatus("The call was cancelled.");
};

app.onhostcontextchanged = (ctx) => {
  if (ctx && ctx.styles && ctx.styles.variables) applyHostStyleVariables(ctx.styles.variables);
  if (ctx && (ctx.theme === "dark" || ctx.theme === "light")) document.documentElement.style.colorScheme = ctx.theme;
};

app.onteardown = async () => {
  stopPolling();
  return {};
};

app.connect().then(() => {
  const ctx = app.getHostContext();
  if (ctx) app.onhostcontextchanged(ctx);
}).catch(() => setStatus("This view needs a host that renders MCP Apps."));
