// Prints the check counts of one conformance leg from the checks.json files
// the suite wrote with -o. Used by conformance/run.sh:
//
//   node summary.mjs <revision> <results dir> <baseline.yml> <requirements.yaml>
//
// Counts every check the leg ran, then those of the scored scenarios only
// (the requirement set's `server` list, which alone decides the suite's exit
// code), and how many failing checks the baseline expects. A WARNING counts
// as a failure here, as it does in the suite's baseline comparison.
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const [revision, dir, baselinePath, requirementsPath] = process.argv.slice(2);
if (!revision || !dir || !baselinePath || !requirementsPath) {
  console.error('usage: summary.mjs <revision> <results dir> <baseline.yml> <requirements.yaml>');
  process.exit(2);
}

// listUnder returns the "- item" strings of a top-level YAML key. The files
// read here are flat lists; comments and quotes are stripped.
function listUnder(text, key) {
  const out = [];
  let inside = false;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\s+#.*$/, '').replace(/^#.*$/, '');
    if (/^\S/.test(line)) inside = line.startsWith(key + ':');
    const m = inside && line.match(/^\s+-\s+(\S.*?)\s*$/);
    if (m) out.push(m[1].replace(/^['"]|['"]$/g, ''));
  }
  return out;
}

const scored = new Set(listUnder(readFileSync(requirementsPath, 'utf8'), 'server'));
const baseline = listUnder(readFileSync(baselinePath, 'utf8'), 'server');
const wholeScenario = new Set(baseline.filter((e) => !e.includes(':')));
const perCheck = new Set(baseline.filter((e) => e.includes(':')));

const failing = (s) => s === 'FAILURE' || s === 'WARNING';
const count = () => ({ passed: 0, failed: 0, warnings: 0, expected: 0, scenarios: 0 });
const all = count();
const onlyScored = count();

if (!existsSync(dir)) {
  console.log(`${revision}: no results in ${dir}`);
  process.exit(1);
}
for (const entry of readdirSync(dir).sort()) {
  const file = join(dir, entry, 'checks.json');
  if (!existsSync(file)) continue;
  const scenario = entry.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '');
  const checks = JSON.parse(readFileSync(file, 'utf8'));
  const tallies = scored.has(scenario) ? [all, onlyScored] : [all];
  for (const t of tallies) t.scenarios++;
  for (const c of checks) {
    for (const t of tallies) {
      if (c.status === 'SUCCESS') t.passed++;
      if (c.status === 'FAILURE') t.failed++;
      if (c.status === 'WARNING') t.warnings++;
      if (failing(c.status) && (wholeScenario.has(scenario) || perCheck.has(`${scenario}:${c.id}`))) t.expected++;
    }
  }
}

const fmt = (t) => `${t.passed} passed, ${t.failed} failed, ${t.warnings} warnings`;
console.log(`conformance ${revision}: ${all.scenarios} scenarios, checks ${fmt(all)}`);
console.log(
  `conformance ${revision}: scored (${onlyScored.scenarios} scenarios): checks ${fmt(onlyScored)}; ` +
    `${onlyScored.expected} of ${onlyScored.failed + onlyScored.warnings} failures/warnings are in the baseline`,
);
