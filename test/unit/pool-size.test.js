// Dynamic sizing (min/max/idleTimeout): the policy with fake servers and
// fake timers, then the mechanics with real servers.
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool, GROW_AT, defaultParked } from '../../lib/pool.js';
import { createPool } from '../../lib/index.js';
import { isGone } from '../helpers/leaks.js';

let nextPid = 1;

/** Stands in for a Server: takes sessions, finishes them on demand, never forks. */
class FakeServer {
  constructor(pool) {
    this.pool = pool;
    this.sessions = new Map();
    this.nextId = 1;
    this.pid = nextPid++;
    this.ready = true;
    this.gone = false;
    this.closed = false;
  }

  get inFlight() { return this.sessions.size; }

  get parks() { return true; }

  /** A parked child always waits here. */
  takePid() { return 100000 + this.nextId; }

  hasPid() { return true; }

  submit(session, pid) {
    const id = this.nextId++;
    this.sessions.set(id, session);
    session.id = id;
    session.pid = pid;
    session.server = this;
    return true;
  }

  release(id) {
    if (this.sessions.delete(id)) this.pool.onRelease(this);
  }

  close() {
    this.closed = true;
    this.gone = true;
    return Promise.resolve();
  }
}

class FakePool extends Pool {
  startServer() { return new FakeServer(this); }
}

// process.execPath passes the pool's "is the binary executable" check.
const fakePool = (options) => new FakePool({ server: process.execPath, ...options });

function spawnN(pool, n) {
  const sessions = [];
  for (let i = 0; i < n; i++) {
    const s = { request: { flags: 0 } };
    assert.ok(pool.submit(s) > 0);
    sessions.push(s);
  }
  return sessions;
}
const finish = (sessions) => { for (const s of sessions) s.server.release(s.id); };
const loads = (pool) => pool.servers.map((s) => s.inFlight);

test('min..max: starts min, grows one server each time every server has GROW_AT children, up to max', () => {
  const pool = fakePool({ min: 1, max: 3 });
  assert.deepEqual(pool.stats().servers, [], 'nothing starts before the first spawn');
  spawnN(pool, GROW_AT);
  assert.deepEqual(loads(pool), [GROW_AT], 'one server takes the first GROW_AT children');
  spawnN(pool, 1);
  assert.deepEqual(loads(pool), [GROW_AT, 1], 'the next one grows the pool');
  spawnN(pool, 2 * GROW_AT - 1);
  assert.deepEqual(loads(pool), [GROW_AT, GROW_AT, GROW_AT]);
  spawnN(pool, 3);
  assert.equal(pool.servers.length, 3, 'never past max');
  assert.deepEqual(loads(pool), [GROW_AT + 1, GROW_AT + 1, GROW_AT + 1], 'at max: least busy');
  assert.equal(pool.stats().size, 3);
});

test('idle servers above min exit after idleTimeout, never while they have a child, never below min', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const pool = fakePool({ min: 1, max: 3, idleTimeout: 1000 });
  const first = spawnN(pool, GROW_AT);
  const second = spawnN(pool, GROW_AT);
  const third = spawnN(pool, 1);
  const [s0, s1, s2] = pool.servers;
  finish(second);
  finish(third);
  t.mock.timers.tick(999);
  assert.deepEqual([s1.closed, s2.closed], [false, false], 'not before idleTimeout');
  // A spawn reaching s1 (s0 is full) takes it out of retirement.
  const late = spawnN(pool, 1);
  assert.equal(late[0].server, s1);
  t.mock.timers.tick(1);
  assert.deepEqual([s0.closed, s1.closed, s2.closed], [false, false, true], 'only the idle server exits');
  assert.deepEqual(pool.servers, [s0, s1]);
  t.mock.timers.tick(5000);
  assert.equal(s1.closed, false, 'a server with a child is never retired');
  finish(late);
  finish(first);
  t.mock.timers.tick(1000);
  assert.equal(pool.servers.length, 1, 'back to min');
  assert.equal(s0.closed !== s1.closed, true, 'exactly one of the last two exited');
  assert.equal(pool.stats().size, 1);
  assert.equal(pool.counters.restarts, 0, 'a retired server is not a restart');
});

test('min 0: the last idle server exits too; the next spawn starts one again', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const pool = fakePool({ min: 0, max: 2, idleTimeout: 50 });
  const a = spawnN(pool, 1);
  finish(a);
  t.mock.timers.tick(50);
  assert.equal(pool.servers.length, 0);
  spawnN(pool, 1);
  assert.equal(pool.servers.length, 1);
});

test('a fixed size (size, or min = max) never grows nor retires', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  for (const options of [{ size: 2 }, { min: 2, max: 2, idleTimeout: 10 }]) {
    const pool = fakePool(options);
    const sessions = spawnN(pool, 10 * GROW_AT);
    assert.equal(pool.servers.length, 2, JSON.stringify(options));
    finish(sessions);
    t.mock.timers.tick(60_000);
    assert.equal(pool.servers.length, 2, JSON.stringify(options));
    assert.ok(pool.servers.every((s) => !s.closed));
  }
});

test('idle timers do not keep the process alive', () => {
  const pool = fakePool({ min: 1, max: 2, idleTimeout: 60_000 });
  const first = spawnN(pool, GROW_AT);
  finish(spawnN(pool, 1));
  const timer = pool.servers[1].idleTimer;
  assert.ok(timer, 'the idle server has a timer');
  assert.equal(timer.hasRef(), false);
  finish(first);
  pool.close();
  assert.equal(pool.servers.length, 0);
});

test('sizing options are validated', () => {
  const cases = [
    [{ sise: 2 }, /options\.sise' is not a pool option/],
    [{ size: 2, min: 1 }, /options\.size' cannot be combined/],
    [{ min: 3, max: 2 }, /options\.min' must not exceed options\.max \(2\)/],
    [{ max: 0 }, /options\.max' must be an integer from 1/],
    [{ idleTimeout: -1 }, /options\.idleTimeout/],
  ];
  for (const [options, message] of cases) {
    assert.throws(() => new Pool(options), { code: 'ERR_INVALID_ARG_VALUE', message }, JSON.stringify(options));
  }
  assert.throws(() => new Pool({ min: '1' }), { code: 'ERR_INVALID_ARG_TYPE' });
});

test('real servers: a burst grows the pool to max, idleness shrinks it back to min', async () => {
  const pool = createPool({ min: 1, max: 3, idleTimeout: 200 });
  assert.equal(await pool.ready(), true);
  assert.equal(pool.stats().servers.length, 1, 'ready() starts min servers');
  const children = Array.from({ length: 3 * GROW_AT }, () => pool.spawn('sleep', ['0.3']));
  await Promise.all(children.map((c) => once(c, 'spawn')));
  const grown = pool.stats();
  assert.equal(grown.servers.length, 3, JSON.stringify(grown.servers));
  assert.deepEqual(grown.servers.map((s) => s.inFlight), [GROW_AT, GROW_AT, GROW_AT]);
  const pids = grown.servers.map((s) => s.pid);
  await Promise.all(children.map((c) => once(c, 'close')));
  const deadline = Date.now() + 5000;
  while (pool.stats().servers.length > 1 && Date.now() < deadline) await sleep(25);
  const shrunk = pool.stats();
  assert.equal(shrunk.servers.length, 1, 'back to min');
  assert.equal(shrunk.restarts, 0);
  const retired = pids.filter((p) => p !== shrunk.servers[0].pid);
  while (!retired.every(isGone) && Date.now() < deadline) await sleep(25);
  assert.deepEqual(retired.filter((p) => !isGone(p)), [], 'retired servers exited');
  const again = pool.spawn('echo', ['still serving']);
  const [code] = await once(again, 'close');
  assert.equal(code, 0);
  await pool.close();
  assert.ok(pids.every(isGone), 'no server left after close()');
});

test('parked children by default: 32 per server, at most 256 per pool, at least 8 per server; the option and its variable win', () => {
  assert.deepEqual([1, 2, 8, 9, 16, 32, 64, 256].map(defaultParked), [32, 32, 32, 28, 16, 8, 8, 8]);
  assert.equal(new Pool({ size: 2 }).parked, 32);
  assert.equal(new Pool({ size: 16 }).parked, 16);
  assert.equal(new Pool({ min: 1, max: 64 }).parked, 8, 'sized for the most servers the pool may have');
  assert.equal(new Pool({ size: 16, parked: 3 }).parked, 3);
});
