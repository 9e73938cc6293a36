// Observability: Node's child_process channel (and spawn tracing channels)
// for spawnpool's children but not its servers, spawnpool's own channels,
// NODE_DEBUG=spawnpool, stats().fallbacksByReason and uptime.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import dc from 'node:diagnostics_channel';
import * as nodeCp from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createPool } from '../../lib/index.js';
import { setNodeTracesSpawn } from '../../lib/observe.js';
import { isGone } from '../helpers/leaks.js';

const LIB = pathToFileURL(fileURLToPath(new URL('../../lib/index.js', import.meta.url))).href;
const closed = (child) => new Promise((resolve) => child.on('close', (...a) => resolve(a)));

/** Subscribes `fn` to channel `name` for the duration of `body`. */
async function listening(name, fn, body) {
  dc.subscribe(name, fn);
  try {
    return await body();
  } finally {
    dc.unsubscribe(name, fn);
  }
}

test("Node's child_process channel: { process } for each spawnpool child, as Node publishes its own", async () => {
  const pool = createPool({ size: 1 });
  const seen = [];
  await listening('child_process', (msg) => seen.push(msg), async () => {
    const nodeChild = nodeCp.spawn('true');
    assert.equal(seen.length, 1, 'Node publishes synchronously, inside spawn()');
    assert.equal(seen[0].process, nodeChild);
    const child = pool.spawn('echo', ['hi']);
    assert.equal(seen.length, 2, 'so does spawnpool');
    assert.deepEqual(Object.keys(seen[1]), Object.keys(seen[0]));
    assert.equal(seen[1].process, child);
    assert.ok(seen[1].process instanceof nodeCp.ChildProcess);
    await Promise.all([closed(nodeChild), closed(child)]);
  });
  await pool.close();
});

test("spawnpool's servers are not published on Node's child_process channel", async () => {
  const seen = [];
  const pool = createPool({ size: 2 });
  await listening('child_process', (msg) => seen.push(msg.process), async () => {
    assert.equal(await pool.ready(), true);
  });
  const pids = pool.stats().servers.map((s) => s.pid);
  assert.equal(pids.length, 2);
  assert.deepEqual(seen, [], 'no server was published');
  await pool.close();
  assert.ok(pids.every(isGone));
});

test('tracing:child_process.spawn:* mirrored where Node has them (forced on here)', async () => {
  const was = setNodeTracesSpawn(true);
  const events = [];
  const tracing = dc.tracingChannel('child_process.spawn');
  const subscribers = {
    start: ({ process, options }) => events.push(['start', process, options.file, options.args]),
    end: ({ process }) => events.push(['end', process, process.listenerCount('spawn') >= 0]),
    asyncStart() {}, asyncEnd() {},
    error: ({ process, error }) => events.push(['error', process, error.code]),
  };
  tracing.subscribe(subscribers);
  const pool = createPool({ size: 1 });
  try {
    const ok = pool.spawn('echo', ['hi']);
    assert.deepEqual(events, [['start', ok, 'echo', ['echo', 'hi']]], 'start: synchronous, Node\'s options');
    let endBeforeSpawn = false;
    ok.on('spawn', () => { endBeforeSpawn = events.some((e) => e[0] === 'end' && e[1] === ok); });
    await closed(ok);
    assert.equal(endBeforeSpawn, true, "end comes before 'spawn'");
    events.length = 0;
    const bad = pool.spawn('spawnpool-no-such-program');
    let code;
    bad.on('error', (err) => { code = err.code; });
    await closed(bad);
    assert.equal(code, 'ENOENT');
    assert.deepEqual(events.map((e) => [e[0], e[1] === bad, e[2]]),
      [['start', true, 'spawnpool-no-such-program'], ['error', true, 'ENOENT']]);
  } finally {
    tracing.unsubscribe(subscribers);
    setNodeTracesSpawn(was);
    await pool.close();
  }
});

test("spawnpool's own channels: pool start, server start/exit (cause, children lost), fallback, spawn error", async () => {
  const names = ['pool:start', 'server:start', 'server:exit', 'fallback', 'spawn:error'];
  const got = Object.fromEntries(names.map((n) => [n, []]));
  const subs = names.map((n) => [`spawnpool:${n}`, (msg) => got[n].push(msg)]);
  for (const [name, fn] of subs) dc.subscribe(name, fn);
  const pool = createPool({ size: 2 });
  try {
    assert.equal(await pool.ready(), true);
    assert.equal(got['pool:start'].length, 1);
    assert.deepEqual([got['pool:start'][0].size, got['pool:start'][0].reason], [2, 'options']);
    const pids = pool.stats().servers.map((s) => s.pid).sort();
    assert.deepEqual(got['server:start'].map((m) => m.pid).sort(), pids);

    // A server killed under a running child: its exit says so.
    const long = pool.spawn('sleep', ['30']);
    await once(long, 'spawn');
    const victim = pool.stats().servers.find((s) => s.inFlight === 1).pid;
    process.kill(victim, 'SIGKILL');
    const [, signal] = await closed(long);
    assert.equal(signal, 'SIGKILL');
    const died = got['server:exit'].find((m) => m.pid === victim);
    assert.ok(died, JSON.stringify(got['server:exit'].map((m) => m.pid)));
    assert.deepEqual([died.reason, died.ready, died.status, died.childrenLost], ['died', true, 'SIGKILL', 1]);

    const extra = pool.spawn('true', [], { stdio: ['pipe', 'pipe', 'pipe', 'pipe'] });
    await closed(extra);
    assert.deepEqual(got.fallback.map((m) => [m.reason, m.file]), [['unservable-stdio', 'true']]);

    const bad = pool.spawn('spawnpool-no-such-program');
    bad.on('error', () => {});
    await closed(bad);
    assert.equal(got['spawn:error'].length, 1);
    assert.equal(got['spawn:error'][0].process, bad);
    assert.equal(got['spawn:error'][0].error.code, 'ENOENT');

    const s = pool.stats();
    assert.deepEqual(s.fallbacksByReason, { 'unservable-stdio': 1 });
    assert.equal(s.fallbacks, 1);
    assert.ok(s.uptime > 0 && s.uptime < 60_000, String(s.uptime));
    await pool.close();
    // The exit is reported once both the socket's close and the exit status are in.
    // (Servers of the earlier tests' pools may report their exit here too.)
    const ours = new Set(got['server:start'].map((m) => m.pid));
    const closedExits = () => got['server:exit'].filter((m) => m.reason === 'closed' && ours.has(m.pid)).length;
    for (let i = 0; i < 100 && closedExits() < 2; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(closedExits(), 2, 'close() ends the two others');
  } finally {
    await pool.close();
    for (const [name, fn] of subs) dc.unsubscribe(name, fn);
  }
});

test('NODE_DEBUG=spawnpool logs pool start and why, server start/exit, fallbacks, spawn errors', () => {
  const code = `
    import * as sp from ${JSON.stringify(LIB)};
    sp.configure({ size: 1 });
    await sp.ready();
    await new Promise((r) => sp.spawn('spawnpool-no-such-program').on('error', () => {}).on('close', r));
    sp.execFileSync('true');
    await sp.close();`;
  const r = nodeCp.spawnSync(process.execPath, ['--input-type=module', '-e', code], {
    env: { ...process.env, NODE_DEBUG: 'spawnpool' }, encoding: 'utf8', timeout: 20_000,
  });
  assert.equal(r.status, 0, r.stderr);
  for (const line of [
    /SPAWNPOOL \d+: pool start: 1 servers \(min 1, max 1\): options/,
    /SPAWNPOOL \d+: server \d+ ready/,
    /SPAWNPOOL \d+: spawn spawnpool-no-such-program failed: ENOENT/,
    /SPAWNPOOL \d+: fallback to node:child_process \(sync-api\): true/,
    /SPAWNPOOL \d+: server \d+ exit \(closed\): it exited \(0\); 0 children lost/,
  ]) assert.match(r.stderr, line);
});

test('a request served by node:child_process after its server died is published once, counted as server-lost', async () => {
  const { Pool } = await import('../../lib/pool.js');
  const { createSpawn } = await import('../../lib/spawn.js');
  // A server without parked children: its SPAWNs are answered with the
  // pid, and one never answered may go elsewhere.
  const pool = new Pool({ size: 1, parked: 0 });
  const spawn = createSpawn(() => pool);
  assert.equal(await pool.ready(), true);
  const [server] = pool.servers;
  const seen = [];
  await listening('child_process', (msg) => seen.push(msg.process), async () => {
    // Stopped, so that it never reads the request, then killed; no
    // replacement can start: the request goes to node:child_process.
    process.kill(server.pid, 'SIGSTOP');
    const child = spawn('echo', ['served anyway']);
    process.kill(server.pid, 'SIGKILL');
    pool.binary = '/nonexistent/spawnd';
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    const [code] = await closed(child);
    assert.deepEqual([code, out], [0, 'served anyway\n']);
    assert.equal(seen.length, 1, 'only the ChildProcess the caller holds');
    assert.equal(seen[0], child);
  });
  assert.deepEqual(pool.stats().fallbacksByReason, { 'server-lost': 1 });
  await pool.close();
  assert.ok(isGone(server.pid));
});
