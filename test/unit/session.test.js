// The session alone, without a server: a fake link records the frames it
// would send and the event-loop holds; frames are fed in by hand.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { constants } from 'node:os';
import { Session, stillOurs } from '../../lib/session.js';
import { ChildProcess } from '../../lib/child-process.js';
import { T, STDIO_PIPE, STDIO_IGNORE, decodeFrame, encodeSpawn } from '../../lib/protocol.js';
import { stdinAtOnce } from '../../lib/streams.js';

const { EPIPE, ENOENT } = constants.errno;

function fakeLink() {
  return {
    frames: [],
    refs: 0,
    released: [],
    send(frame) { this.frames.push(decodeFrame(frame, 0, frame.length)); },
    sendLazy(frame) { this.send(frame); },
    sendNow(frame) { this.send(frame); },
    ref() { this.refs++; },
    unref() { this.refs--; },
    release(id) { this.released.push(id); },
    types() { return this.frames.map((f) => Object.keys(T).find((k) => T[k] === f.type && k !== 'S_HELLO')); },
  };
}

function request(stdio = [STDIO_PIPE, STDIO_PIPE, STDIO_PIPE]) {
  return { flags: 0, uid: 0, gid: 0, window: 1024, stdio, file: 'cat', cwd: '/', argv: ['cat'], env: [] };
}

function make(stdio) {
  const child = new ChildProcess();
  const events = [];
  for (const e of ['spawn', 'exit', 'close', 'error']) child.on(e, (...a) => events.push([e, ...a.map((x) => x?.code ?? x)]));
  const session = new Session(child, request(stdio), ['cat', [], {}]);
  child._init(session, 3, () => {});
  return { child, session, events };
}

const settle = () => new Promise((r) => setTimeout(r, 5));

/** A server without parked children: the SPAWN goes with attach(), the pid comes with SPAWNED. */
const attachPidless = (session, link, id) => session.attach(link, id, 0, encodeSpawn(id, session.request));

/** A running child whose stdin writes report their outcome into `results`. */
function writer() {
  const { child, session } = make();
  attachPidless(session, fakeLink(), 1);
  child.stdin.on('error', () => {});
  session.onMessage({ type: T.SPAWNED, pid: 1 });
  const results = [];
  const write = (data) => child.stdin.write(data, (e) => results.push(e?.code ?? 'ok'));
  return { child, session, results, write };
}

test('the constructor sends nothing; a pid-less attach() sends the SPAWN and holds the loop until the outcome', () => {
  const { session } = make();
  const link = fakeLink();
  assert.equal(session.state, 'spawning');
  attachPidless(session, link, 7);
  assert.deepEqual(link.types(), ['SPAWN']);
  assert.equal(link.frames[0].id, 7);
  assert.equal(link.refs, 1);
  session.onMessage({ type: T.SPAWN_ERROR, errno: ENOENT, syscall: 'spawn' });
  assert.equal(link.refs, 0);
});

test('spawned, output, EOFs and exit: Node events, then the id is released and the loop let go', async () => {
  const { child, session, events } = make();
  const link = fakeLink();
  attachPidless(session, link, 1);
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.resume();
  session.onMessage({ type: T.SPAWNED, pid: 4242 });
  assert.equal(child.pid, 4242);
  session.onMessage({ type: T.DATA, fd: 1, data: Buffer.from('hi') });
  session.onMessage({ type: T.END, fd: 1, errno: 0 });
  session.onMessage({ type: T.END, fd: 2, errno: 0 });
  assert.deepEqual(link.released, []);
  session.onMessage({ type: T.EXIT, code: 3, signal: 0 });
  assert.deepEqual(link.released, [1]);
  assert.equal(link.refs, 0);
  await settle();
  assert.equal(out, 'hi');
  assert.deepEqual(events, [['spawn'], ['exit', 3, null], ['close', 3, null]]);
});

test('a user who replaces child.stdout does not change where output goes', async () => {
  const { child, session } = make();
  attachPidless(session, fakeLink(), 1);
  const original = child.stdout;
  child.stdout = child.stdio[1] = { not: 'a stream' };
  let out = '';
  original.on('data', (d) => { out += d; });
  session.onMessage({ type: T.SPAWNED, pid: 1 });
  session.onMessage({ type: T.DATA, fd: 1, data: Buffer.from('kept') });
  await settle();
  assert.equal(out, 'kept');
});

test("at the exit a stdin write still in flight is cancelled by stdin's destroy, as Node's (no error under Node 20, ECANCELED from 22), once; one that completed at once stays done; an END fd 0 after the EXIT fails nothing", async () => {
  const { child, session, results, write } = writer();
  const errors = [];
  child.stdin.on('error', (e) => errors.push(e.code));
  write('abc');
  write(Buffer.alloc(stdinAtOnce())); // more than fits beside 'abc': at its WROTE
  await settle();
  session.onMessage({ type: T.EXIT, code: 0, signal: 0 });
  session.onMessage({ type: T.END, fd: 0, errno: EPIPE }); // the server's late answer: ignored
  session.onMessage({ type: T.REAPED });
  await settle();
  const cancelled = Number(process.versions.node.split('.')[0]) >= 22 ? 'ECANCELED' : 'ok';
  assert.deepEqual(results, ['ok', cancelled]);
  assert.deepEqual(errors, []);
  assert.equal(child.stdin.destroyed, true);
});

test('a write completes at once while the bytes in flight stay within stdinAtOnce(), in any tick; a larger one at the WROTE of its last byte; END fd 0 fails the next one at once', async () => {
  const { child, session, results, write } = writer();
  write('abc');
  await settle();
  assert.deepEqual(results, ['ok']);
  write('def');
  await settle();
  assert.deepEqual(results, ['ok', 'ok'], 'a later tick: at once too, as the kernel takes it under Node');
  assert.equal(child.stdin.writableLength, 0);
  session.onMessage({ type: T.WROTE, bytes: 3 + 3 });
  // Two writes of 16 KiB less than the budget each: the first at once, the
  // second would overrun it, so it waits for its bytes, as a Node write the
  // socket buffer cannot take waits for the child to read.
  const big = stdinAtOnce() - 16_384;
  assert.equal(write(Buffer.alloc(big)), true, 'done at once: true, whatever its size (Node: 212,992 bytes and less)');
  assert.equal(child.stdin.writableLength, 0);
  write(Buffer.alloc(big));
  await settle();
  assert.deepEqual(results, ['ok', 'ok', 'ok']);
  assert.equal(child.stdin.writableLength, big);
  session.onMessage({ type: T.WROTE, bytes: big + 65_536 });
  await settle();
  assert.deepEqual(results, ['ok', 'ok', 'ok'], 'not before its last byte');
  session.onMessage({ type: T.WROTE, bytes: big - 65_536 });
  await settle();
  assert.deepEqual(results, ['ok', 'ok', 'ok', 'ok']);
  session.onMessage({ type: T.END, fd: 0, errno: EPIPE }); // the child closed its stdin
  await settle();
  const errors = [];
  child.stdin.on('error', (e) => errors.push(e.code));
  assert.equal(write('ghi'), false, 'fails at once, as Node\'s write(2) into a closed pipe');
  await settle();
  assert.deepEqual(results, ['ok', 'ok', 'ok', 'ok', 'EPIPE']);
  assert.deepEqual(errors, ['EPIPE']);
});

test("bytes of a write that completed at once, refused by a live child's stdin (END fd 0): the stream fails with the errno, as Node's write would have; at the exit they are lost without an error", async () => {
  const run = async (ending, answer) => {
    const { child, session } = make();
    attachPidless(session, fakeLink(), 1);
    session.onMessage({ type: T.SPAWNED, pid: 1 });
    const seen = [];
    child.stdin.on('error', (e) => seen.push(`error ${e.code} ${e.syscall}`));
    child.stdin.on('finish', () => seen.push('finish'));
    child.stdin.write('abc', (e) => seen.push(`callback ${e?.code ?? 'ok'}`));
    if (ending) child.stdin.end((e) => seen.push(`end ${e?.code ?? 'ok'}`));
    await settle();
    session.onMessage(answer);
    await settle();
    return seen;
  };
  const refused = { type: T.END, fd: 0, errno: EPIPE };
  assert.deepEqual(await run(false, refused), ['callback ok', 'error EPIPE write']);
  assert.deepEqual(await run(true, refused), ['callback ok', 'end EPIPE', 'error EPIPE write']);
  assert.deepEqual(await run(false, { type: T.EXIT, code: 0, signal: 0 }), ['callback ok']);
});

test('a write that completed at once holds the loop, and end() does not finish, until the server acknowledges its bytes', async () => {
  const { child, session } = make([STDIO_PIPE, STDIO_IGNORE, STDIO_IGNORE]);
  const link = fakeLink();
  attachPidless(session, link, 1);
  session.onMessage({ type: T.SPAWNED, pid: 1 });
  child.unref();
  assert.equal(link.refs, 0);
  let finished = false;
  child.stdin.on('finish', () => { finished = true; });
  child.stdin.end('abc');
  assert.equal(link.refs, 1);
  await settle();
  assert.deepEqual(link.types().slice(-2), ['STDIN', 'STDIN_END'], 'STDIN_END follows at once');
  assert.equal(finished, false);
  session.onMessage({ type: T.WROTE, bytes: 3 });
  await settle();
  assert.equal(finished, true);
  assert.equal(link.refs, 0);
});

test('spawn error: Node shape, no release before the outcome, streams end, close follows', async () => {
  const { child, session, events } = make();
  const link = fakeLink();
  attachPidless(session, link, 9);
  session.onMessage({ type: T.SPAWN_ERROR, errno: ENOENT, syscall: 'spawn' });
  assert.equal(child.exitCode, -ENOENT);
  assert.deepEqual(link.released, [9]);
  await settle();
  assert.deepEqual(events.map((e) => e[0]), ['error', 'close']);
  assert.equal(events[0][1], 'ENOENT');
});

test('a lost server ends a running child as killed by SIGKILL, without an error', async () => {
  const { child, session, events } = make();
  attachPidless(session, fakeLink(), 1);
  session.onMessage({ type: T.SPAWNED, pid: 2147483646 }); // no such process: kill() finds nothing
  child.stdout.resume();
  child.stderr.resume();
  session.lost();
  await settle();
  assert.deepEqual(events, [['spawn'], ['exit', null, 'SIGKILL'], ['close', null, 'SIGKILL']]);
});

test('resubmitted to another server: stdin, end, destroy and kill are replayed behind the SPAWN', () => {
  const { child, session } = make();
  const dead = fakeLink();
  attachPidless(session, dead, 1);
  child.stdin.write('early');
  child.stdin.end();
  child.stderr.destroy();
  child.kill('SIGTERM');
  const live = fakeLink();
  attachPidless(session, live, 5);
  // (end() waits behind the unacknowledged write: no STDIN_END yet.)
  assert.deepEqual(live.types(), ['SPAWN', 'STDIN', 'CLOSE', 'KILL']);
  assert.equal(live.frames.find((f) => f.type === T.STDIN).data.toString(), 'early');
  assert.equal(live.frames.find((f) => f.type === T.KILL).signal, constants.signals.SIGTERM);
  assert.ok(live.frames.every((f) => f.id === 5));
});

test('unref() lets the loop go while the process runs; an open pipe still holds it', () => {
  const { child, session } = make([STDIO_IGNORE, STDIO_PIPE, STDIO_IGNORE]);
  const link = fakeLink();
  attachPidless(session, link, 1);
  session.onMessage({ type: T.SPAWNED, pid: 1 });
  child.unref();
  assert.equal(link.refs, 1, 'stdout is open and ref\'d');
  child.stdout.unref();
  assert.equal(link.refs, 0);
  child.ref();
  assert.equal(link.refs, 1);
});

test('attached with a parked pid: running at once, nothing sent (the server has the SPAWN), no cohort hold', async () => {
  const { child, session, events } = make();
  const link = fakeLink();
  session.attach(link, 3, 4242);
  assert.equal(session.state, 'running');
  assert.equal(session.pid, 4242);
  assert.deepEqual(link.types(), []);
  assert.equal(link.refs, 1, 'a running ref\'d child holds the loop');
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.resume();
  session.onMessage({ type: T.DATA, fd: 1, data: Buffer.from('at once') });
  session.onMessage({ type: T.END, fd: 1, errno: 0 });
  session.onMessage({ type: T.END, fd: 2, errno: 0 });
  session.onMessage({ type: T.EXIT, code: 0, signal: 0 });
  await settle();
  assert.equal(out, 'at once');
  assert.deepEqual(link.released, [3]);
  assert.deepEqual(events, [['exit', 0, null], ['close', 0, null]]);
});

test('a parked child that cannot exec: SPAWN_ERROR is its last frame, Node\'s error shape, then exit (-errno) and close', async () => {
  const { child, session, events } = make();
  const link = fakeLink();
  session.attach(link, 4, 4243);
  session.onMessage({ type: T.SPAWN_ERROR, errno: ENOENT, syscall: 'spawn' });
  assert.equal(child.exitCode, -ENOENT);
  assert.deepEqual(link.released, [4]);
  assert.equal(link.refs, 0);
  await settle();
  assert.deepEqual(events.map((e) => e[0]), ['error', 'exit', 'close']);
  assert.equal(events[0][1], 'ENOENT');
  assert.deepEqual(events.slice(1), [['exit', -ENOENT, null], ['close', -ENOENT, null]]);
});

test('children spawned together, a listener throws on a frame held for the cohort: the rest go ahead of later frames, in order', async () => {
  // Frames the cohort held are delivered one callback each; when one
  // throws, the rest waited for a later callback while newer frames of the
  // same child (which no longer wait) went first: output out of order.
  const a = make();
  const b = make();
  attachPidless(a.session, fakeLink(), 1);
  attachPidless(b.session, fakeLink(), 2);
  // As Server.deliver hands a frame on.
  const feed = (session, msg) => (session.deferring() ? session.defer(msg) : session.onMessage(msg));
  let out = '';
  a.child.stdout.on('data', (d) => {
    out += d;
    if (out === 'a1') throw new Error('listener');
  });
  const thrown = [];
  const runner = process.rawListeners('uncaughtException');
  process.removeAllListeners('uncaughtException');
  process.on('uncaughtException', (err) => thrown.push(err.message));
  try {
    feed(a.session, { type: T.SPAWNED, pid: 11 });
    feed(a.session, { type: T.DATA, fd: 1, data: Buffer.from('a1') });
    feed(a.session, { type: T.DATA, fd: 1, data: Buffer.from('a2') });
    feed(b.session, { type: T.SPAWNED, pid: 12 });
    await new Promise((r) => setImmediate(r));
    feed(a.session, { type: T.DATA, fd: 1, data: Buffer.from('a3') });
    await settle();
  } finally {
    process.removeAllListeners('uncaughtException');
    for (const l of runner) process.on('uncaughtException', l);
  }
  assert.deepEqual(thrown, ['listener']);
  assert.equal(out, 'a1a2a3');
});

test("a server's EXIT asks for the reap; 'exit' comes with REAPED (the pid named the zombie until then); a lost server gives the exit it reported", async () => {
  for (const lose of [false, true]) {
    const { child, session, events } = make();
    const link = { ...fakeLink(), reaps: true };
    attachPidless(session, link, 5);
    child.stdout.resume();
    child.stderr.resume();
    session.onMessage({ type: T.SPAWNED, pid: 77 });
    session.onMessage({ type: T.END, fd: 1, errno: 0 });
    session.onMessage({ type: T.END, fd: 2, errno: 0 });
    session.onMessage({ type: T.EXIT, code: 3, signal: 0 });
    await settle();
    assert.deepEqual(events, [['spawn']]);
    assert.equal(link.types().at(-1), 'REAP');
    assert.equal(child.kill(), true, 'a zombie is signalled, as by Node');
    if (lose) session.lost();
    else session.onMessage({ type: T.REAPED });
    await settle();
    assert.deepEqual(events, [['spawn'], ['exit', 3, null], ['close', 3, null]], lose ? 'lost' : 'reaped');
  }
});

test("a lost server's child is killed by pid only while the pid is still its: not a process started after the spawn (a reused pid), not a gone one; a zombie is (its pid is not free)", async () => {
  const { spawn } = await import('node:child_process');
  const { once } = await import('node:events');
  const { now } = await import('../../lib/observe.js');
  // A live child of ours, and (sh's background job, never reaped by the
  // sleep that sh became) a zombie.
  const c = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 5'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const [line] = await once(c.stdout, 'data');
  const zombie = Number(String(line).trim());
  await new Promise((r) => setTimeout(r, 200));
  const t = now();
  assert.equal(stillOurs(c.pid, t), true);
  assert.equal(stillOurs(c.pid, t - 5_000), false, 'started 5 s after the spawn it is asked about');
  assert.equal(stillOurs(zombie, t), true, 'a zombie (maybe a leader whose threads run)');
  c.kill('SIGKILL');
  await once(c, 'exit');
  assert.equal(stillOurs(c.pid, t), false, 'gone');
});
