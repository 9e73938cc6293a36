// The pool's own contract: sizing, strategies, draining close().
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { availableParallelism } from 'node:os';
import { existsSync } from 'node:fs';
import { spawn as nodeSpawn } from 'node:child_process';
import { createPool } from '../../lib/index.js';
import { availableCpus, PACK_MAX } from '../../lib/pool.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { childrenOf, procStat } from '../helpers/leaks.js';

const alive = (pid) => existsSync(`/proc/${pid}`);

test('default size: CPUs available to the process, at least 1, at most the affinity', () => {
  const n = availableCpus();
  assert.ok(Number.isInteger(n) && n >= 1 && n <= availableParallelism());
});

test('close() drains: a running child finishes normally, then the servers exit', async () => {
  const pool = createPool({ size: 2 });
  const child = pool.spawn('sh', ['-c', 'sleep 0.3; echo done']);
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  await once(child, 'spawn');
  const pids = pool.stats().servers.map((s) => s.pid);
  const closed = pool.close();
  assert.throws(() => pool.spawn('true'), { code: 'ERR_SPAWNPOOL_CLOSED' });
  const [code, signal] = await once(child, 'close');
  assert.deepEqual([code, signal, out], [0, null, 'done\n']);
  await closed;
  assert.deepEqual(pids.filter(alive), []);
  assert.equal(pool.close(), closed, 'close() twice returns the same promise');
});

test('close({ timeout }) sends SIGKILL to children still running after it', async () => {
  const pool = createPool({ size: 1 });
  const child = pool.spawn('sleep', ['30']);
  await once(child, 'spawn');
  const started = Date.now();
  const closing = pool.close({ timeout: 100 });
  const [code, signal] = await once(child, 'close');
  await closing;
  assert.deepEqual([code, signal], [null, 'SIGKILL']);
  assert.ok(Date.now() - started < 5000);
});

test('strategies spread concurrent spawns over every server', async () => {
  for (const strategy of ['least-busy', 'round-robin', 'random']) {
    const pool = createPool({ size: 2, strategy });
    const children = Array.from({ length: 20 }, () => pool.spawn('sleep', ['0.2']));
    await Promise.all(children.map((c) => once(c, 'spawn')));
    const load = pool.stats().servers.map((s) => s.inFlight);
    assert.equal(load.reduce((a, b) => a + b), 20, strategy);
    assert.ok(load.every((n) => n > 0), `${strategy}: ${load}`);
    if (strategy !== 'random') assert.deepEqual(load, [10, 10], strategy);
    await Promise.all(children.map((c) => once(c, 'close')));
    await pool.close();
  }
});

/** The children in flight on each server of `pool`. */
const loads = (pool) => pool.stats().servers.map((s) => s.inFlight);

/** `n` children of `sleep 30` added to `into`, spawned in one synchronous loop. */
function sleepers(pool, n, into, options = {}) {
  for (let i = 0; i < n; i++) into.push(pool.spawn('sleep', ['30'], { stdio: 'ignore', ...options }));
}

async function endAll(pool, children) {
  for (const c of children) c.kill('SIGKILL');
  await pool.close({ timeout: 2000 });
}

/** How many children server `pid` has waiting as parked children. */
const parkedOf = (pid) => childrenOf([pid]).filter((p) => p.comm === 'spawnd:parked').length;

/**
 * Waits until each of `servers` has `n` parked children, none of them a
 * claimed one still on its way to its exec (`children` have all exec'd),
 * then a little more for the last announcements to reach the feed.
 */
async function untilParked(servers, n, children = []) {
  const deadline = Date.now() + 10_000;
  const settled = () => servers.every((p) => parkedOf(p) >= n) && children.every((c) => procStat(c.pid)?.comm !== 'spawnd:parked');
  while (!settled() && Date.now() < deadline) await sleep(20);
  await sleep(50);
}

const serverPids = (pool) => pool.stats().servers.map((s) => s.pid);

/** Once every server of `pool` has `parked` children parked, stops the first (SIGSTOP: it parks no more); its pid. */
async function stopFirstServer(pool, parked) {
  await pool.ready();
  await untilParked(serverPids(pool), parked);
  const pid = serverPids(pool)[0];
  process.kill(pid, 'SIGSTOP');
  return pid;
}

test('pack: spawns go to the first server with a parked child ready; the next takes the overflow', async () => {
  const pool = createPool({ size: 2, parked: 8, strategy: 'pack' });
  const children = [];
  let stopped = 0;
  try {
    // Server 0 stopped: it parks no replacement for what is taken from it.
    stopped = await stopFirstServer(pool, 8 + 2);    // and 2 session leaders each
    sleepers(pool, 6, children);
    assert.deepEqual(loads(pool), [6, 0], 'fewer spawns than server 0 has parked: all on it');
    // A burst beyond its parked children: server 0 gives its last 2, server
    // 1 the rest, and no spawn waits while a server has one ready.
    sleepers(pool, 8, children);
    assert.deepEqual(loads(pool), [8, 6]);
    assert.equal(pool.stats().parkedWaits, 0);
    process.kill(stopped, 'SIGCONT');
    // Server 0 parks again (its feed found empty in the burst): the next
    // spawn is its own once more, with nothing else coming from it.
    await untilParked([stopped], 8 + 2, children.slice(0, 8));
    stopped = 0;
    sleepers(pool, 1, children);
    assert.deepEqual(loads(pool), [9, 6]);
  } finally {
    if (stopped !== 0) process.kill(stopped, 'SIGCONT');
    await endAll(pool, children);
  }
});

test('a server whose wait for a parked child timed out is not waited for again: the next spawns go to it pid-less, without blocking the loop', async () => {
  // A server that cannot park (clone() fails: a process limit; or stopped,
  // as here) made every spawn wait PARK_WAIT_MS (1 s) on the loop, then go
  // to node:child_process.
  const pool = createPool({ size: 1, parked: 2 });
  const children = [];
  let stopped = 0;
  try {
    stopped = await stopFirstServer(pool, 2 + 1);
    const timed = () => {
      const start = performance.now();
      const child = pool.spawn('sh', ['-c', 'exit 3'], { stdio: 'ignore' });
      children.push(child);
      return performance.now() - start;
    };
    timed();
    timed();
    assert.equal(pool.stats().parkedWaits, 0, 'its two parked children taken at once');
    const waited = timed();
    assert.ok(waited >= 900, `the first spawn without a parked child waits for one (${waited.toFixed(0)} ms)`);
    assert.equal(pool.stats().parkedTimeouts, 1);
    assert.equal(pool.stats().fallbacks, 1);
    const next = [timed(), timed(), timed()];
    assert.ok(Math.max(...next) < 200, `the next spawns do not wait: ${next.map((ms) => ms.toFixed(0)).join(', ')} ms`);
    assert.equal(pool.stats().parkedTimeouts, 1);
    assert.equal(pool.stats().fallbacks, 1, 'served by the stopped server once it goes on');
    process.kill(stopped, 'SIGCONT');
    stopped = 0;
    const codes = await Promise.all(children.map((c) => new Promise((resolve) => c.on('close', resolve))));
    assert.deepEqual(codes, [3, 3, 3, 3, 3, 3]);
    // Once it announces a parked child again, spawns take pids as before,
    // a burst beyond its parked ones too (it waits for the next).
    await untilParked(serverPids(pool), 2 + 1);
    const burst = Array.from({ length: 4 }, () => pool.spawn('true', [], { stdio: 'ignore' }));
    assert.deepEqual(burst.map((c) => typeof c.pid), ['number', 'number', 'number', 'number'], 'a parked pid at return');
    await Promise.all(burst.map((c) => once(c, 'close')));
  } finally {
    if (stopped !== 0) process.kill(stopped, 'SIGCONT');
    await endAll(pool, children);
  }
});

test(`pack: a server with ${PACK_MAX} children in flight takes no more while another can`, async () => {
  const pool = createPool({ size: 2, parked: PACK_MAX + 16, strategy: 'pack' });
  const children = [];
  try {
    await pool.ready();
    await untilParked(serverPids(pool), PACK_MAX + 16 + 4);
    sleepers(pool, PACK_MAX + 6, children);
    assert.deepEqual(loads(pool), [PACK_MAX, 6]);
  } finally {
    await endAll(pool, children);
  }
});

test('pack: a detached spawn takes a session leader from the first server that has one', async () => {
  const pool = createPool({ size: 2, parked: 8, strategy: 'pack' });   // and 2 session leaders each
  const children = [];
  let stopped = 0;
  try {
    stopped = await stopFirstServer(pool, 8 + 2);
    sleepers(pool, 3, children, { detached: true });
    assert.deepEqual(loads(pool), [2, 1]);
    assert.equal(pool.stats().parkedWaits, 0);
  } finally {
    if (stopped !== 0) process.kill(stopped, 'SIGCONT');
    await endAll(pool, children);
  }
});

test('pack with servers that park no children (parked: 0) spreads spawns as least-busy does', async () => {
  const pool = createPool({ size: 2, parked: 0, strategy: 'pack' });
  const children = [];
  try {
    await pool.ready();
    sleepers(pool, 6, children);
    assert.deepEqual(loads(pool), [3, 3]);
    await Promise.all(children.map((c) => once(c, 'spawn')));
  } finally {
    await endAll(pool, children);
  }
});

test('a request over the 16 MiB frame limit throws E2BIG as Node does, and only that spawn fails', async () => {
  const pool = createPool({ size: 1 });
  const options = { env: { BIG: 'x'.repeat(17 * 1024 * 1024) } };
  const fromNode = (() => { try { nodeSpawn('true', [], options); } catch (err) { return err; } })();
  assert.throws(() => pool.spawn('true', [], options), {
    name: fromNode.name, message: fromNode.message, code: 'E2BIG', errno: fromNode.errno, syscall: 'spawn',
  });
  const ok = pool.spawn('echo', ['still fine']);
  const [code] = await once(ok, 'close');
  assert.equal(code, 0);
  assert.equal(pool.stats().restarts, 0);
  await pool.close();
});

test('bad pool options throw Node-style errors naming the option', () => {
  const cases = [
    [null, 'ERR_INVALID_ARG_TYPE', /"options" argument/],
    [{ size: 0 }, 'ERR_INVALID_ARG_VALUE', /options\.size' must be an integer from 1 to 1024/],
    [{ size: 1.5 }, 'ERR_INVALID_ARG_VALUE', /options\.size/],
    [{ size: '2' }, 'ERR_INVALID_ARG_TYPE', /"options\.size" property must be of type number/],
    [{ window: -1 }, 'ERR_INVALID_ARG_VALUE', /options\.window/],
    [{ strategy: 'fastest' }, 'ERR_INVALID_ARG_VALUE', /'least-busy', 'round-robin', 'random'/],
    [{ server: 42 }, 'ERR_INVALID_ARG_TYPE', /"options\.server" property must be of type string/],
  ];
  for (const [options, code, message] of cases) {
    assert.throws(() => createPool(options), { code, message }, JSON.stringify(options));
  }
});

test('close() options are validated', async () => {
  const pool = createPool({ size: 1 });
  assert.throws(() => pool.close(null), { code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => pool.close({ timeout: '1' }), { code: 'ERR_INVALID_ARG_TYPE', message: /options\.timeout/ });
  assert.throws(() => pool.close({ timeout: -1 }), { code: 'ERR_INVALID_ARG_VALUE', message: /options\.timeout/ });
  await pool.close({ timeout: 0 });
});
