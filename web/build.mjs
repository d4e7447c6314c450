// Builds the turn view into one self-contained HTML document, and the
// browser test's host page (docs/ARCHITECTURE.md "The turn view"):
//
//   node build.mjs view [OUT]   web/view -> OUT (default ../adapters/agent/view/turn.html)
//   node build.mjs host DIR     web/host -> DIR/host.html, DIR/host.js, DIR/axe.min.js
//
// esbuild is pinned by package-lock.json and its output is deterministic,
// so the committed turn.html is exactly what a fresh build writes: the
// browser module's TestViewBuild checks that.
import { build } from "esbuild";
import { copyFile, mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const [what, out] = process.argv.slice(2);

async function bundle(entry) {
  const r = await build({
    entryPoints: [join(here, entry)],
    bundle: true,
    minify: true,
    format: "iife",
    target: "es2020",
    platform: "browser",
    legalComments: "none",
    charset: "ascii",
    write: false,
    logLevel: "warning",
  });
  return r.outputFiles[0].text;
}

async function view(file) {
  const js = await bundle("view/turn.js");
  const css = await readFile(join(here, "view/turn.css"), "utf8");
  const html = await readFile(join(here, "view/turn.html"), "utf8");
  // The document's only markup is the template's: the script and the
  // style are text, and neither may end its element early.
  if (/<\/script/i.test(js) || /<\/style/i.test(css)) throw new Error("a bundled text would end its element");
  const doc = html.replace("/*STYLE*/", () => css.trim()).replace("/*SCRIPT*/", () => js.trim());
  if (Buffer.byteLength(doc) >= 1 << 20) throw new Error(`the view is ${Buffer.byteLength(doc)} bytes: it must stay under 1 MiB`);
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, doc);
}

async function host(dir) {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, "host.js"), await bundle("host/host.js"));
  await copyFile(join(here, "host/host.html"), join(dir, "host.html"));
  await copyFile(join(here, "node_modules/axe-core/axe.min.js"), join(dir, "axe.min.js"));
}

switch (what) {
  case "view":
    await view(out || join(here, "../adapters/agent/view/turn.html"));
    break;
  case "host":
    if (!out) throw new Error("usage: node build.mjs host DIR");
    await host(out);
    break;
  default:
    throw new Error("usage: node build.mjs view [OUT] | host DIR");
}
