// spawnpool under Deno's permission flags (docs/runtimes.md): a clear error
// without --allow-env, one warning naming what is missing and delegation to
// Deno's own spawn otherwise, never a raw NotCapable from inside spawnpool
// nor the "not a working spawnd" fallback. Runs deno-probe.js under each set.
//
//   node test/runtimes/deno-permissions.js [path/to/deno]
// Ends with "# deno permissions: N ok, N not ok"; exits non-zero on a failure.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const deno = process.argv[2] ?? process.env.SPAWNPOOL_DENO ?? `${root}node_modules/@deno/linux-x64-glibc/deno`;
const probe = fileURLToPath(new URL('deno-probe.js', import.meta.url));
if (!existsSync(deno)) {
  console.log(`deno not found at ${deno}`);
  process.exit(1);
}

const warned = (r, ...words) => r.warnings.length === 1 && r.warnings[0].code === 'SPAWNPOOL_DENO_PERMISSION'
  && words.every((w) => r.warnings[0].message.includes(w));
const CASES = [
  ['no permissions: clear error naming --allow-env; stats() still works', [], [],
    (r) => r.threw?.code === 'ERR_SPAWNPOOL_DENO_PERMISSION' && r.threw.message.includes('--allow-env') && r.served === 0],
  ['narrow --allow-run=echo: delegated, one warning naming --allow-run', ['--allow-env', '--allow-run=echo'], [],
    (r) => r.out === 'hi\n' && r.served === 0 && warned(r, '--allow-run', '--allow-read', '--allow-sys')],
  ['narrow --allow-run=echo: Deno still refuses a program not on the list', ['--allow-env', '--allow-run=echo'], ['ls'],
    (r) => r.error?.name === 'NotCapable' && r.served === 0],
  ['-A --deny-run=ls: delegated, and Deno refuses ls', ['-A', '--deny-run=ls'], ['ls'],
    (r) => r.error?.name === 'NotCapable' && r.served === 0 && warned(r, '--deny-run')],
  ['no --allow-read of the server: delegated, warning names it', ['--allow-env', '--allow-run', '--allow-sys=uid'], [],
    (r) => r.out === 'hi\n' && r.served === 0 && warned(r, '--allow-read')],
  ['no --allow-sys: delegated, warning names it', ['--allow-env', '--allow-run', '--allow-read'], [],
    (r) => r.out === 'hi\n' && r.served === 0 && warned(r, '--allow-sys')],
  ['everything the pool needs: served, no warning', ['--allow-env', '--allow-run', '--allow-read', '--allow-sys=uid'], [],
    (r) => r.out === 'hi\n' && r.served === 1 && r.warnings.length === 0],
  ['-A: served, no warning', ['-A'], [], (r) => r.out === 'hi\n' && r.served === 1 && r.warnings.length === 0],
];

let passed = 0;
let failed = 0;
for (const [name, flags, args, check] of CASES) {
  const run = spawnSync(deno, ['run', '--no-prompt', ...flags, probe, ...args], { encoding: 'utf8', timeout: 20_000 });
  let result = null;
  try {
    result = JSON.parse(run.stdout.split('\n')[0]);
  } catch { /* reported below */ }
  if (result !== null && check(result) && !run.stderr.includes('not a working') && !/NotCapable/.test(run.stderr)) {
    passed++;
    console.log(`ok ${name}`);
  } else {
    failed++;
    console.log(`not ok ${name}\n  flags: ${flags.join(' ')}\n  stdout: ${run.stdout.trim()}\n  stderr: ${run.stderr.trim()}`);
  }
}
console.log(`# deno permissions: ${passed} ok, ${failed} not ok`);
process.exitCode = failed === 0 ? 0 : 1;
