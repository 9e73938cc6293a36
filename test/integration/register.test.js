// spawnpool/register itself: --import and --require, by package name and by
// path, through NODE_OPTIONS into child Node processes, on every Node the
// devDependencies provide. See scenarios/hook.js for what is reported.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { runScenario, ROOT, REGISTER } from './run.js';

const REGISTER_CJS = join(ROOT, 'dist/register.cjs');

function expectedFacts({ registered, inherited }) {
  const served = registered ? 1 : 0;
  return {
    'who serves node:child_process': {
      registered,
      spawnpool: { spawn: registered, exec: registered, execFile: registered },
      named: [registered, registered, registered],
      node: { spawn: !registered, fork: true, spawnSync: true, execSync: true, execFileSync: true, ChildProcess: true },
    },
    "spawns: one served, servers started with Node's spawn": {
      result: { text: 'served\n', code: 0 }, served, fallbacks: 0, servers: registered,
    },
    'promisified exec and execFile': [{ stdout: 'a\n', stderr: '' }, { stdout: 'b\n', stderr: '' }],
    'unservable stdio goes to Node, once': { message: 'ipc ok', fallbacks: served, served: 0 },
    'a CommonJS library in node_modules': { result: { text: 'cross\n', code: 0 }, served },
    'a child node process': {
      code: 0, stderr: '', child: { stdout: 'nested\n', registered: inherited, spawned: inherited ? 1 : 0 },
    },
  };
}

async function check(options, expectation) {
  const run = await runScenario('hook', options);
  assert.ok(run.report?.done, `no complete report: exit ${run.code ?? run.signal}\n${run.stderr}`);
  const facts = Object.fromEntries(Object.entries(run.report.cases).map(([k, v]) => [k, v.value ?? v]));
  assert.deepEqual(facts, expectedFacts(expectation));
  assert.equal(run.stderr, '', 'nothing on stderr (no warning)');
  assert.equal(run.code, 0);
}

const nodes = [['', process.execPath]];
for (const v of [22, 24]) {
  const bin = join(ROOT, `node_modules/node-${v}/bin/node`);
  if (existsSync(bin)) nodes.push([` (node ${v})`, bin]);
}

test('without the hook, node:child_process is Node\'s', () => check({}, { registered: false, inherited: false }));

for (const [label, node] of nodes) {
  const opts = (o) => ({ ...o, node });
  test(`--import spawnpool/register${label}`, () =>
    check(opts({ nodeArgs: ['--import', 'spawnpool/register'] }), { registered: true, inherited: false }));
  test(`--require spawnpool/register${label}`, () =>
    check(opts({ nodeArgs: ['--require', 'spawnpool/register'] }), { registered: true, inherited: false }));
  test(`NODE_OPTIONS=--import <path>: child Node processes inherit the hook${label}`, () =>
    check(opts({ env: { NODE_OPTIONS: `--import ${REGISTER}` } }), { registered: true, inherited: true }));
  test(`NODE_OPTIONS=--require <path>: child Node processes inherit the hook${label}`, () =>
    check(opts({ env: { NODE_OPTIONS: `--require ${REGISTER_CJS}` } }), { registered: true, inherited: true }));
}

// The paths under lib/ that docs/register.md gave for NODE_OPTIONS before the
// entry points moved to dist/: they install the package's own hook, one pool
// with what `import 'spawnpool'` gives.
test('NODE_OPTIONS with the lib/register.js and lib/register.cjs paths: the same hook, one pool', async () => {
  await check({ env: { NODE_OPTIONS: `--import ${join(ROOT, 'lib/register.js')}` } }, { registered: true, inherited: true });
  await check({ env: { NODE_OPTIONS: `--require ${join(ROOT, 'lib/register.cjs')}` } }, { registered: true, inherited: true });
});

test('--import and --require together install once', () =>
  check({ nodeArgs: ['--require', REGISTER_CJS, '--import', REGISTER] }, { registered: true, inherited: false }));

// --require modules are preloaded in worker threads too; --import ones are not
// (docs/register.md).
test('--require spawnpool/register reaches worker threads', async () => {
  const run = await runScenario('worker', { nodeArgs: ['--require', 'spawnpool/register'] });
  assert.deepEqual(run.report?.cases['execFile in a worker thread'],
    { value: { stdout: 'from a worker\n', registered: true, spawned: 1 } }, run.stderr);
});
