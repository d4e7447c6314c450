// Prints the check counts of one conformance leg from the checks.json files
// the suite wrote with -o. Used by conformance/run.sh:
//
//   node summary.mjs <leg> <results dir> <baseline.yml> [<requirements.yaml>]
//
// Counts the checks of the scored scenarios (the requirement set's `server`
// list, which alone decides the suite's exit code; without a requirements
// file, as for the tasks leg, whose scenarios are in no requirement set and
// each decides the run, every scenario in the directory): passed, failed as
// the baseline expects, failed unexpectedly (exit 1 when any); then every
// check the leg ran, on a detail line. A WARNING counts as a failure here,
// as it does in the suite's baseline comparison.
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const [revision, dir, baselinePath, requirementsPath] = process.argv.slice(2);
if (!revision || !dir || !baselinePath) {
  console.error('usage: summary.mjs <leg> <results dir> <baseline.yml> [<requirements.yaml>]');
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

// isScored says whether a scenario's checks decide the leg.
const isScored = requirementsPath
  ? ((set) => (scenario) => set.has(scenario))(new Set(listUnder(readFileSync(requirementsPath, 'utf8'), 'server')))
  : () => true;
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
  const tallies = isScored(scenario) ? [all, onlyScored] : [all];
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

// One line a person can read at a glance: the scored checks that passed,
// those that failed as the baseline expects (each named there, with its
// reason), and those that failed unexpectedly — the only number that
// should ever be above 0. The counts of unscored scenarios follow on a
// line of their own, for the log.
const unexpected = onlyScored.failed + onlyScored.warnings - onlyScored.expected;
console.log(
  `conformance ${revision}: ${onlyScored.passed} passed, ${onlyScored.expected} baselined ` +
    `(each named in conformance/baseline.yml), ${unexpected} unexpected`,
);
const fmt = (t) => `${t.passed} passed, ${t.failed} failed, ${t.warnings} warnings`;
console.log(
  requirementsPath
    ? `conformance ${revision} (detail): ${onlyScored.scenarios} scored scenarios; all ${all.scenarios} scenarios, ` +
        `unscored ones included (not compared with the baseline): checks ${fmt(all)}`
    : `conformance ${revision} (detail): ${all.scenarios} scenarios, each scored: checks ${fmt(all)}`,
);
if (unexpected > 0) process.exit(1);
