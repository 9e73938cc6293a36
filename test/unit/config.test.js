// Pool configuration: the default size (CPUs, cgroup, cluster, PM2, worker
// threads), SPAWNPOOL_* variables, configure()/ready()/close() of the
// default pool (each in a fresh process: the default pool is per process).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  defaultSize, optionsFromEnv, mergeOptions, resolveSizing, validatePoolOptions,
} from '../../lib/config.js';

const LIB = pathToFileURL(fileURLToPath(new URL('../../lib/index.js', import.meta.url))).href;
const budget = (cpus, source = 'cpus') => ({ cpus, source });

test('default size: the CPUs available, shared among cluster and PM2 workers, 1 in a worker thread', () => {
  const cases = [
    [{ budget: budget(8), env: {}, isWorker: false }, 8, /^8 CPUs$/],
    [{ budget: budget(3, 'cgroup'), env: {}, isWorker: false }, 3, /3 CPUs \(cgroup cpu\.max\)/],
    [{ budget: budget(8), env: {}, isWorker: true }, 1, /one worker per CPU assumed/],
    [{ budget: budget(8), env: { SPAWNPOOL_CLUSTER_WORKERS: '2' }, isWorker: true }, 4, /SPAWNPOOL_CLUSTER_WORKERS=2/],
    [{ budget: budget(2), env: { SPAWNPOOL_CLUSTER_WORKERS: '3' }, isWorker: true }, 1, /2 CPUs \/ 3/],
    [{ budget: budget(8), env: { SPAWNPOOL_CLUSTER_WORKERS: 'lots' }, isWorker: true }, 1, /assumed/],
    [{ budget: budget(8), env: { NODE_APP_INSTANCE: '1', exec_mode: 'cluster_mode', instances: '3' }, isWorker: true },
      2, /PM2 cluster mode, 3 instances/],
    [{ budget: budget(8), env: { NODE_APP_INSTANCE: '0', exec_mode: 'fork_mode', instances: '1' }, isWorker: false }, 8, /^8 CPUs$/],
    [{ budget: budget(8), env: {}, isWorker: false, mainThread: false }, 1, /worker thread/],
  ];
  for (const [input, size, reason] of cases) {
    const got = defaultSize(input);
    assert.equal(got.size, size, JSON.stringify(input));
    assert.match(got.reason, reason, JSON.stringify(input));
  }
});

test('a pool made in a worker thread has one server by default', async () => {
  const worker = new Worker(`
    import { createPool } from ${JSON.stringify(LIB)};
    import { parentPort } from 'node:worker_threads';
    const pool = createPool();
    parentPort.postMessage(pool.stats().size);
  `, { eval: true, type: 'module' });
  const [size] = await once(worker, 'message');
  assert.equal(size, 1);
  await once(worker, 'exit');
});

test('SPAWNPOOL_* variables: parsed, and errors name the variable', () => {
  assert.deepEqual(optionsFromEnv({}), {});
  assert.deepEqual(optionsFromEnv({ SPAWNPOOL_SIZE: '3', SPAWNPOOL_STRATEGY: 'random' }), { size: 3, strategy: 'random' });
  assert.deepEqual(optionsFromEnv({ SPAWNPOOL_MIN: '0', SPAWNPOOL_MAX: '4', SPAWNPOOL_IDLE_TIMEOUT: '1500' }),
    { min: 0, max: 4, idleTimeout: 1500 });
  const bad = [
    [{ SPAWNPOOL_SIZE: 'four' }, /process\.env\.SPAWNPOOL_SIZE' must be an integer from 1 to 1024\. Received 'four'/],
    [{ SPAWNPOOL_SIZE: '0' }, /SPAWNPOOL_SIZE/],
    [{ SPAWNPOOL_MAX: '2.5' }, /SPAWNPOOL_MAX/],
    [{ SPAWNPOOL_IDLE_TIMEOUT: '-1' }, /SPAWNPOOL_IDLE_TIMEOUT/],
    [{ SPAWNPOOL_STRATEGY: 'fastest' }, /SPAWNPOOL_STRATEGY' must be one of 'least-busy'/],
    [{ SPAWNPOOL_MIN: '4', SPAWNPOOL_MAX: '2' }, /SPAWNPOOL_MIN' must not exceed process\.env\.SPAWNPOOL_MAX/],
    [{ SPAWNPOOL_SIZE: '2', SPAWNPOOL_MAX: '4' }, /SPAWNPOOL_SIZE' cannot be combined/],
  ];
  for (const [env, message] of bad) {
    assert.throws(() => optionsFromEnv(env), { code: 'ERR_INVALID_ARG_VALUE', message }, JSON.stringify(env));
  }
});

test('configure() wins over the environment; sizing comes from one source', () => {
  assert.deepEqual(mergeOptions({ min: 1, max: 4, strategy: 'random' }, { size: 2 }), { size: 2, strategy: 'random' });
  assert.deepEqual(mergeOptions({ size: 8 }, { strategy: 'round-robin' }), { size: 8, strategy: 'round-robin' });
  assert.deepEqual(resolveSizing({ size: 3 }), { min: 3, max: 3, reason: 'options' });
  assert.deepEqual(resolveSizing({ max: 4 }), { min: 1, max: 4, reason: 'options' });
  assert.deepEqual(resolveSizing({ min: 2 }, () => ({ size: 6, reason: 'r' })), { min: 2, max: 6, reason: 'min from options, max: r' });
  assert.throws(() => validatePoolOptions({ sise: 2 }), {
    code: 'ERR_INVALID_ARG_VALUE', message: /^The property 'options\.sise' is not a pool option/,
  });
});

/** Runs an ES module snippet (with `sp` = spawnpool) in a fresh node; returns its stdout as JSON. */
function inFreshNode(body, env = {}) {
  const code = `import * as sp from ${JSON.stringify(LIB)};\nconst out = (v) => process.stdout.write(JSON.stringify(v));\n${body}`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
    env: { ...process.env, ...env }, encoding: 'utf8', timeout: 20_000,
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

test('configure(), ready(), close() drive the default pool', () => {
  const got = inFreshNode(`
    sp.stats();                                       // made, not started: still configurable
    sp.configure({ size: 1, strategy: 'round-robin' });
    const ready = await sp.ready();
    const s = sp.stats();
    let again;
    try { sp.configure({ size: 2 }); } catch (e) { again = e.code + ': ' + e.message; }
    await sp.close();
    let after;
    try { sp.spawn('true'); } catch (e) { after = e.code; }
    out({ ready, size: s.size, servers: s.servers, again, after });
  `, { SPAWNPOOL_SIZE: '2' });
  assert.equal(got.ready, true);
  assert.equal(got.size, 1);
  assert.equal(got.servers.length, 1);
  assert.ok(got.servers.every((s) => s.ready && s.pid > 0), JSON.stringify(got.servers));
  assert.match(got.again, /^ERR_SPAWNPOOL_STARTED: spawnpool: the default pool has started/);
  assert.equal(got.after, 'ERR_SPAWNPOOL_CLOSED');
});

test('the default pool takes its size from SPAWNPOOL_* and rejects bad ones at first use', () => {
  const got = inFreshNode(`
    const a = sp.stats();
    out({ size: a.size, min: a.min, max: a.max });
  `, { SPAWNPOOL_MIN: '1', SPAWNPOOL_MAX: '3', SPAWNPOOL_IDLE_TIMEOUT: '100' });
  assert.deepEqual(got, { size: 1, min: 1, max: 3 });
  const bad = inFreshNode(`
    try { sp.spawn('true'); out(null); } catch (e) { out({ code: e.code, message: e.message }); }
  `, { SPAWNPOOL_SIZE: 'x' });
  assert.equal(bad.code, 'ERR_INVALID_ARG_VALUE');
  assert.match(bad.message, /SPAWNPOOL_SIZE/);
  assert.throws(() => inFreshNode(`sp.configure({ sise: 2 });`), /options\.sise/);
});

test('a node:cluster worker shares the CPUs: SPAWNPOOL_CLUSTER_WORKERS, else one worker per CPU', () => {
  const CONFIG = pathToFileURL(fileURLToPath(new URL('../../lib/config.js', import.meta.url))).href;
  const code = `
    import cluster from 'node:cluster';
    import { defaultSize, availableCpus } from ${JSON.stringify(CONFIG)};
    if (cluster.isPrimary) {
      const sizes = [];
      for (const env of [{}, { SPAWNPOOL_CLUSTER_WORKERS: '1' }]) {
        const w = cluster.fork(env);
        w.on('message', (m) => { sizes.push(m); w.disconnect(); });
      }
      let exited = 0;
      cluster.on('exit', () => {
        if (++exited === 2) {
          process.stdout.write(JSON.stringify({ cpus: availableCpus(), sizes: sizes.sort((a, b) => a.size - b.size) }));
        }
      });
    } else {
      process.send(defaultSize());
    }`;
  // cluster.fork() runs the primary's script again: it must be a file.
  const dir = mkdtempSync(join(tmpdir(), 'spawnpool-cluster-'));
  const script = join(dir, 'primary.mjs');
  writeFileSync(script, code);
  let r;
  try {
    r = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 20_000 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.equal(r.status, 0, r.stderr);
  const { cpus, sizes } = JSON.parse(r.stdout);
  assert.deepEqual(sizes.map((s) => s.size), [1, cpus]);
  assert.match(sizes.find((s) => /assumed/.test(s.reason))?.reason ?? '', /one worker per CPU assumed/);
  assert.match(sizes.find((s) => /=1/.test(s.reason))?.reason ?? '', /SPAWNPOOL_CLUSTER_WORKERS=1/);
});
