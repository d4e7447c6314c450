// check prints one line per check of an end-to-end client (client.mjs,
// replicas.mjs), numbered, and exits 1 at the first failure.
let step = 0;

export function check(ok, what, detail = '') {
  step++;
  if (!ok) {
    console.error(`FAIL ${step}. ${what}${detail ? `: ${detail}` : ''}`);
    process.exit(1);
  }
  console.log(`ok ${step}. ${what}`);
}

// checks is how many checks ran.
export const checks = () => step;
