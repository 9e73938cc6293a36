// The child lifecycle as real programs see it, against node:child_process:
// events delivered callback by callback (ticks and microtasks settled in
// between) while the parent's loop was blocked, 'close' order after
// destroy(), streams replaced by the user, and every stdin write callback
// firing exactly once when the child dies under it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as nodeCp from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { PassThrough } from 'node:stream';
import { createPool } from 'spawnpool';
import { underLoad } from '../helpers/load.js';
import { blockUntilZombie } from '../helpers/leaks.js';

const pool = createPool({ size: 2 });
const impls = { node: nodeCp.spawn, spawnpool: pool.spawn };

function block(ms) {
  const end = Date.now() + ms;
  while (Date.now() < end);
}

/**
 * Every event of the child and its streams, each followed by what a
 * nextTick and a promise reaction queued in its listener recorded: their
 * place in the trace shows whether they ran before the next event.
 */
function traceChild(child) {
  const log = [];
  const mark = (s) => {
    log.push(s);
    process.nextTick(() => log.push(`tick<${s}`));
    Promise.resolve().then(() => log.push(`micro<${s}`));
  };
  child.on('spawn', () => mark('spawn'));
  child.stdout.on('data', (d) => mark(`out ${d}`));
  child.stderr.on('data', (d) => mark(`err ${d}`));
  for (const [name, s] of [['out', child.stdout], ['err', child.stderr], ['in', child.stdin]]) {
    s.on('end', () => mark(`${name} end`));
    s.on('close', (hadError) => mark(`${name} close ${hadError}`));
  }
  child.on('exit', (code, signal) => mark(`exit ${code} ${signal}`));
  const closed = new Promise((resolve) => child.on('close', (code) => {
    mark(`close ${code}`);
    setTimeout(() => resolve(log), 30);
  }));
  return closed;
}

// Known, documented differences (docs/behaviour-differences.md): Node's
// stdout/stderr are duplex sockets that also emit 'finish'; and Node emits
// 'spawn' on the tick after spawn() where spawnpool waits for the server.
const normalise = (log) => log.filter((e) => !/finish/.test(e) && !/spawn/.test(e));

// Which of stdout and stderr a reader sees first is a race under Node too
// (the server reads while the parent is blocked); everything else is not.
function views(log) {
  const events = log.filter((e) => !/^(tick|micro)</.test(e));
  // ('close' itself comes from inside the last stream's 'close' callback.)
  const settled = events.filter((e) => !e.startsWith('close')).every((e) => {
    const i = log.indexOf(e);
    return log[i + 1] === `tick<${e}` && log[i + 2] === `micro<${e}` || /^(out|err) close/.test(e);
  });
  const exitAt = events.findIndex((e) => e.startsWith('exit'));
  return {
    settledAfterEach: settled,
    stdout: events.filter((e) => e.startsWith('out')),
    stderr: events.filter((e) => e.startsWith('err')),
    outputBeforeExit: events.slice(exitAt).filter((e) => /^(out|err) [^ec]/.test(e) || /end$/.test(e)),
    last: events.at(-1).startsWith('close') || events.at(-2).startsWith('close'),
    process: events.filter((e) => /^(exit|close|in )/.test(e)),
  };
}

test('loop blocked while the child writes to both streams and exits: same events, ticks and microtasks settled after each', async () => {
  const traces = {};
  for (const [name, spawn] of Object.entries(impls)) {
    const child = spawn('sh', ['-c', 'echo out; echo err >&2; exit 3']);
    const done = traceChild(child);
    if (name === 'spawnpool') await once(child, 'spawn'); // the server must have the request
    blockUntilZombie(child.pid, 150);
    traces[name] = views(normalise(await done));
  }
  assert.equal(traces.node.settledAfterEach, true);
  assert.deepEqual(traces.spawnpool, traces.node);
});

test("await once(child, 'spawn'), then wait for 'close' with a busy loop: it resolves", async () => {
  for (const spawn of Object.values(impls)) {
    const child = spawn('sh', ['-c', 'echo hi; echo there >&2']);
    await once(child, 'spawn');
    block(100);
    const closed = once(child, 'close');
    const [code] = await Promise.race([closed, new Promise((_, reject) => setTimeout(() => reject(new Error('hung')), 3000))]);
    assert.equal(code, 0);
  }
});

test('stderr read to its end before stdout (busy loop): stdout is not lost', async () => {
  const results = {};
  for (const [name, spawn] of Object.entries(impls)) {
    const child = spawn('sh', ['-c', 'echo out; echo err >&2']);
    await once(child, 'spawn');
    block(100);
    let err = '';
    for await (const chunk of child.stderr) err += chunk;
    let out = '';
    for await (const chunk of child.stdout) out += chunk;
    results[name] = { out, err };
  }
  assert.deepEqual(results.spawnpool, results.node);
});

/** Destroys a running cat's stdout, then its stdin: the order of its streams' 'close'. */
async function closeOrderAfterDestroy(spawn) {
  const child = spawn('cat');
  await once(child, 'spawn');
  const order = [];
  for (const name of ['stdout', 'stdin', 'stderr']) child[name].on('close', () => order.push(name));
  child.stdout.destroy();
  child.stdin.destroy();
  await once(child, 'close');
  return order;
}

test("destroy(): the streams' 'close' events come in Node's (libuv's LIFO) order", async () => {
  const orders = {};
  for (const [name, spawn] of Object.entries(impls)) orders[name] = await closeOrderAfterDestroy(spawn);
  assert.deepEqual(orders.spawnpool, orders.node);
  assert.deepEqual(orders.node.slice(0, 2), ['stdin', 'stdout']);
});

test("destroy() from a previous child's 'close', in a row on a loaded machine: the streams' 'close' order stays Node's", async () => {
  // The continuation of `await once(child, 'close')` runs in the (emulated)
  // close phase; Node runs the closes it asks for before the next poll
  // phase reads anything. Relayed as frames, cat's exit could be read
  // first, and stderr's 'close' came before the others in ~1 run of 10.
  const seen = {};
  await underLoad(async () => {
    for (let i = 0; i < 150; i++) {
      const order = await closeOrderAfterDestroy(pool.spawn);
      seen[order] = (seen[order] ?? 0) + 1;
    }
  });
  assert.deepEqual(seen, { 'stdin,stdout,stderr': 150 });
});

test("an unref()'d child whose output is read: 'exit' and 'close' still come before the process ends, as under Node", (t) => {
  // The exit is read with the EOF, but 'exit' waits for the server's
  // REAPED: with nothing holding the loop any more, the process ended
  // first (0 of 10; Node 10 of 10 here). Under Node itself it is a race
  // between the pipe's EOF and SIGCHLD, which a loaded machine can lose
  // (Node 24: 4 of 8 with 2 CPU hogs on 2 cores): compared in the same run.
  // Node losing all 8 (a busy hour, tests running beside this one) says
  // nothing yet: up to two more rounds of 8 each, both again.
  const script = fileURLToPath(new URL('../fixtures/scripts/unref-exit.js', import.meta.url));
  const counts = { node: {}, spawnpool: {} };
  const whole = (impl) => counts[impl]['["data hi","exit 0","close 0"]'] ?? 0;
  let rounds = 0;
  do {
    rounds++;
    for (const impl of ['node', 'spawnpool']) {
      for (let i = 0; i < 8; i++) {
        const out = nodeCp.execFileSync(process.execPath, [script, impl], { encoding: 'utf8', timeout: 10_000 }).trim();
        counts[impl][out] = (counts[impl][out] ?? 0) + 1;
      }
    }
  } while (whole('node') === 0 && rounds < 3);
  t.diagnostic(`${rounds} rounds: ${JSON.stringify(counts)}`);
  assert.ok(whole('node') > 0, `Node itself: ${JSON.stringify(counts.node)}`);
  assert.ok(whole('spawnpool') >= Math.min(6 * rounds, whole('node') - 2), JSON.stringify(counts));
});

test("stdout's 'close' comes after 'exit' when both are read together, however long the loop is busy in between", async (t) => {
  // A pipe's close waits for an exit coming soon (5 ms); the exit read,
  // its 'exit' now waits for the server's REAPED, and a busy loop made
  // the close go first (16 of 20).
  const block = (ms) => { const end = Date.now() + ms; while (Date.now() < end); };
  const results = {};
  for (const [name, spawn] of Object.entries(impls)) {
    const seen = {};
    for (let i = 0; i < 10; i++) {
      const child = spawn('sh', ['-c', 'echo hi']);
      const order = [];
      child.stdout.on('data', () => { order.push('data'); block(30); });
      child.stdout.on('end', () => { order.push('end'); setImmediate(() => block(20)); });
      child.stdout.on('close', () => order.push('stdout close'));
      child.on('exit', () => order.push('exit'));
      await once(child, 'close');
      seen[order] = (seen[order] ?? 0) + 1;
    }
    results[name] = seen;
  }
  // Node itself lets the close go first now and then (1 in 10 seen, with
  // this file's other children running; 3 in 10 once on a loaded machine,
  // 5 in 10 with 3 CPU hogs on 2 cores, 2026-11-27): a race, whose usual
  // outcome is the order spawnpool keeps. Node must show that order; the
  // rest is recorded. spawnpool's close waits for the exit by design, so
  // its bound stays tight.
  const early = (seen) => seen['data,end,stdout close,exit'] ?? 0;
  t.diagnostic(`node:child_process: ${JSON.stringify(results.node)}`);
  assert.ok((results.node['data,end,exit,stdout close'] ?? 0) > 0, `Node itself: ${JSON.stringify(results.node)}`);
  assert.ok(early(results.spawnpool) <= 2, JSON.stringify(results));
  assert.equal(results.spawnpool['data,end,exit,stdout close'] >= 8, true, JSON.stringify(results));
});

test('a user replaces stdout, stdin and stdio[i]: no crash, data still reaches the original streams, the replacements are treated as Node treats them', async () => {
  const results = {};
  for (const [name, spawn] of Object.entries(impls)) {
    const child = spawn('sh', ['-c', 'read line; echo "got $line"; echo e >&2']);
    const { stdin, stdout, stderr } = child;
    let out = '';
    let err = '';
    stdout.on('data', (d) => { out += d; });
    stderr.on('data', (d) => { err += d; });
    const replacementIn = new PassThrough();
    const replacementOut = new PassThrough();
    child.stdin = child.stdio[0] = replacementIn;
    child.stdout = child.stdio[1] = replacementOut;
    child.stdio[2] = { not: 'a stream' };
    child.stderr = null;
    stdin.end('x\n');
    const [code] = await once(child, 'close');
    results[name] = { code, out, err, replacedInDestroyed: replacementIn.destroyed, replacedOutFlowing: replacementOut.readableFlowing };
  }
  assert.deepEqual(results.spawnpool, results.node);
  assert.equal(results.node.out, 'got x\n');
});

test('ten 64 KiB stdin writes, SIGKILL 2 ms later: every callback is called exactly once (30 runs)', { timeout: 60_000 }, async () => {
  for (let run = 0; run < 30; run++) {
    const child = pool.spawn('cat', [], { stdio: ['pipe', 'ignore', 'ignore'] });
    child.stdin.on('error', () => {});
    const closed = once(child, 'close');
    const calls = new Array(10).fill(0);
    const results = [];
    for (let i = 0; i < 10; i++) {
      results.push(new Promise((resolve) => child.stdin.write(Buffer.alloc(65536), (e) => {
        calls[i]++;
        resolve(e?.code ?? 'ok');
      })));
    }
    setTimeout(() => child.kill('SIGKILL'), 2);
    const codes = await Promise.race([Promise.all(results), new Promise((_, reject) => setTimeout(() => reject(new Error(`run ${run}: callbacks hung: ${calls}`)), 5000))]);
    await closed;
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(calls, new Array(10).fill(1), `run ${run}`);
    // Once one write failed, none after it succeeded.
    const firstFail = codes.findIndex((c) => c !== 'ok');
    if (firstFail !== -1) assert.ok(codes.slice(firstFail).every((c) => c !== 'ok'), codes.join());
  }
});

test('a write after the child exited gets its callback (EPIPE or ERR_STREAM_DESTROYED, as Node)', async () => {
  const results = {};
  for (const [name, spawn] of Object.entries(impls)) {
    const child = spawn('true');
    child.stdin.on('error', () => {});
    await once(child, 'exit');
    results[name] = await new Promise((resolve) => child.stdin.write('late', (e) => resolve(e?.code ?? 'ok')));
  }
  assert.deepEqual(results.spawnpool, results.node);
});

test("the child's stdio are sockets, as libuv makes them", async () => {
  const results = {};
  for (const [name, spawn] of Object.entries(impls)) {
    const child = spawn('sh', ['-c', 'for fd in 0 1 2; do if [ -S /proc/self/fd/$fd ]; then echo "$fd socket"; else echo "$fd other"; fi; done']);
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    await once(child, 'close');
    results[name] = out;
  }
  assert.deepEqual(results.spawnpool, results.node);
  assert.equal(results.node, '0 socket\n1 socket\n2 socket\n');
});

test('`yes` whose reader goes away: exit 1, "Connection reset by peer" (Node\'s outcome with a blocked writer); SIGPIPE only as Node gives it, when the writer was not blocked', async () => {
  // Under Node the outcome is a race: the reader usually leaves while yes
  // is blocked on the full socket (ECONNRESET: the kernel resets a blocked
  // writer whose reader closes with bytes unread), but under load yes may
  // not be blocked then, and its next write fails with EPIPE (SIGPIPE).
  // spawnpool closes once the writer has been quiet for a few ms (blocked,
  // as a rule): ECONNRESET nearly always, and never another outcome. Before
  // that wait, a third of the runs ended in SIGPIPE; now at most 2 of 10
  // more than node:child_process in the same run.
  const reset = JSON.stringify({ code: 1, signal: null, reset: true });
  const pipe = JSON.stringify({ code: null, signal: 'SIGPIPE', reset: false });
  const outcomes = { node: [], spawnpool: [] };
  for (let i = 0; i < 10; i++) {
    for (const [name, spawn] of Object.entries(impls)) {
      const child = spawn('yes');
      let err = '';
      child.stderr.on('data', (d) => { err += d; });
      child.stdout.once('data', () => child.stdout.destroy());
      const [code, signal] = await once(child, 'close');
      outcomes[name].push(JSON.stringify({ code, signal, reset: /reset by peer/i.test(err) }));
    }
  }
  for (const name of ['node', 'spawnpool']) {
    assert.deepEqual(outcomes[name].filter((o) => o !== reset && o !== pipe), [], `${name}: only Node's two outcomes (${outcomes[name].join(' ')})`);
  }
  // The load that keeps yes from blocking in time hits both alike.
  const pipes = (name) => outcomes[name].filter((o) => o === pipe).length;
  assert.ok(pipes('spawnpool') <= pipes('node') + 2, `SIGPIPE in ${pipes('spawnpool')} of 10 runs (node:child_process: ${pipes('node')})`);
});

test('a next-tick callback that throws during a child\'s events is an uncaught exception, as under Node (it aborted the process: the async id stack)', () => {
  // An unhandled stream 'error' (stdin's EPIPE) and 'end' are emitted on a
  // tick, and listeners queue ticks of their own. With the launch addon the
  // frames are delivered inside its callback scope: a tick that threw left
  // its async id on the stack, and the scope's close aborted the process
  // ("async hook stack has become corrupted"), uncaughtException unheard.
  const script = fileURLToPath(new URL('../fixtures/scripts/tick-throw.js', import.meta.url));
  const run = (impl, mode) => nodeCp.spawnSync(process.execPath, [script, impl, mode], { encoding: 'utf8', timeout: 20_000 });
  const node = run('node', 'handled');
  const pooled = run('spawnpool', 'handled');
  assert.equal(node.status, 0, node.stderr);
  assert.deepEqual(JSON.parse(node.stdout), ['uncaught EPIPE', 'close 0', 'uncaught tick', 'next tick', 'end', 'exit 0', 'close 0']);
  assert.equal(pooled.status, 0, pooled.stderr);
  assert.deepEqual(JSON.parse(pooled.stdout), JSON.parse(node.stdout));
  // Without a handler the process ends with the error itself, as Node's.
  const bare = { node: run('node', 'unhandled'), spawnpool: run('spawnpool', 'unhandled') };
  for (const [name, r] of Object.entries(bare)) {
    assert.equal(r.status, 1, `${name}: ${r.stderr}`);
    assert.match(r.stderr, /^Error: write EPIPE$/m, name);
    assert.doesNotMatch(r.stderr, /async hook stack|Native stack trace/, name);
  }
});

test('every event of a child, its streams and exec\'s callback run in the async context of its spawn (AsyncLocalStorage)', async () => {
  // The close phase runs the closes of many children in one batch: its
  // stdio's 'close', hence the child's 'close' and exec's callback, ran
  // in the context of whichever child queued a close first.
  const { AsyncLocalStorage } = await import('node:async_hooks');
  const als = new AsyncLocalStorage();
  const { exec } = await import('spawnpool');
  const execs = { node: nodeCp.exec, spawnpool: (cmd, cb) => exec(cmd, cb) };
  for (const [name, spawn] of Object.entries(impls)) {
    const wrong = [];
    const check = (id, what) => { if (als.getStore() !== id) wrong.push(`${id} ${what}: ${als.getStore()}`); };
    const one = (id) => als.run(id, () => new Promise((resolve) => {
      if (id % 3 === 0) {
        execs[name](`echo ${id}`, () => { check(id, 'exec callback'); resolve(); });
        return;
      }
      const child = spawn('sh', ['-c', `echo ${id}; echo ${id} >&2`]);
      child.on('spawn', () => check(id, 'spawn'));
      for (const fd of ['stdout', 'stderr']) {
        child[fd].on('data', () => check(id, `${fd} data`));
        child[fd].on('end', () => check(id, `${fd} end`));
        child[fd].on('close', () => check(id, `${fd} close`));
      }
      child.stdin.on('close', () => check(id, 'stdin close'));
      child.on('exit', () => check(id, 'exit'));
      child.on('close', () => { check(id, 'close'); resolve(); });
    }));
    await Promise.all(Array.from({ length: 24 }, (_, i) => one(i)));
    assert.deepEqual(wrong, [], name);
  }
});

test("stdin of a spawn that failed: a pending write's callback gets EPIPE after the child's 'error', and stdin emits no 'error' of its own", async () => {
  // Code that pipes text into a program that may be missing listens on
  // the child only (a clipboard helper, say): spawnpool emitted EPIPE on
  // stdin, an unhandled 'error' that ended the process.
  const traces = {};
  for (const [name, spawn] of Object.entries(impls)) {
    traces[name] = [];
    for (const [what, make] of [
      ['missing program', () => spawn('spawnpool-no-such-program', ['-x'])],
      ['missing cwd', () => spawn('cat', [], { cwd: '/spawnpool-no-such-dir' })],
      ['not executable', () => spawn('/etc/passwd')],
    ]) {
      const log = [what];
      const child = make();
      child.on('error', (err) => log.push(`child error ${err.code}`));
      child.stdin.on('error', (err) => log.push(`stdin error ${err.code}`));
      child.stdin.on('close', () => log.push('stdin close'));
      child.stdin.write('abc', (err) => log.push(`write callback ${err?.code}`));
      child.stdin.end('x');
      await new Promise((resolve) => child.on('close', resolve));
      await new Promise((resolve) => setTimeout(resolve, 20));
      traces[name].push(log);
    }
  }
  assert.deepEqual(traces.node[0], ['missing program', 'child error ENOENT', 'write callback EPIPE', 'stdin close']);
  assert.deepEqual(traces.spawnpool, traces.node);
});

test("a failed spawn's 'close' comes after its 'error' has been awaited, as Node's pipes close in a later loop phase", async () => {
  // Its streams ended and closed on the ticks right after 'error': a
  // 'close' listener added after an await of the 'error' never heard it.
  const results = {};
  for (const [name, spawn] of Object.entries(impls)) {
    const log = [];
    const child = spawn('spawnpool-no-such-program');
    child.on('error', (err) => {
      log.push(`error ${err.code}`);
      setImmediate(() => log.push('immediate after error'));
    });
    await null;
    const closed = new Promise((resolve) => child.on('close', (code) => { log.push(`close ${code}`); resolve(); }));
    const again = spawn('spawnpool-no-such-program');
    await new Promise((resolve) => again.once('error', resolve));
    const outcome = await Promise.race([
      new Promise((resolve) => again.once('close', (code) => resolve(`close ${code}`))),
      new Promise((resolve) => setTimeout(() => resolve('no close'), 2000)),
    ]);
    await closed;
    results[name] = { log: log.filter((e) => e !== 'immediate after error'), outcome };
  }
  assert.deepEqual(results.node, { log: ['error ENOENT', 'close -2'], outcome: 'close -2' });
  assert.deepEqual(results.spawnpool, results.node);
});

test("an unread stdout that reaches EOF emits 'end' at once, not at the exit: stderr attached after awaiting it is not lost", async () => {
  // Its push(null) had no read(0) after it (net's onStreamRead has one):
  // 'end' waited for a reader, which came only with the exit's flush, and
  // that flush also drained stderr before its listener was attached.
  const results = {};
  for (const [name, spawn] of Object.entries(impls)) {
    const first = spawn('sh', ['-c', 'exec >&-; sleep 0.5']);
    const ended = await Promise.race([
      once(first.stdout, 'end').then(() => `end, exitCode ${first.exitCode}`),
      once(first, 'exit').then(() => 'exit first'),
    ]);
    await once(first, 'close');
    const second = spawn('sh', ['-c', 'echo oops >&2; exit 1']);
    await once(second.stdout, 'end');
    let err = '';
    second.stderr.on('data', (d) => { err += d; });
    await once(second, 'close');
    results[name] = { ended, err };
  }
  assert.deepEqual(results.node, { ended: 'end, exitCode null', err: 'oops\n' });
  assert.deepEqual(results.spawnpool, results.node);
});

test("a child's async resource is destroyed after the last callback in its scope, its stdio's 'close' included", async () => {
  // The closes run in the child's scope; the destroy came at the id's
  // release, before them: async_hooks saw 'before' after 'destroy'.
  const { createHook } = await import('node:async_hooks');
  const ids = new Set();
  const destroyed = new Set();
  const late = [];
  const hook = createHook({
    init(id, type) { if (type === 'SPAWNPOOL_CHILD') ids.add(id); },
    before(id) { if (destroyed.has(id)) late.push(id); },
    destroy(id) { if (ids.has(id)) destroyed.add(id); },
  }).enable();
  try {
    await new Promise((resolve) => pool.spawn('echo', ['hi']).on('close', resolve));
    await new Promise((resolve) => pool.spawn('spawnpool-no-such-program').on('error', () => {}).on('close', resolve));
    await new Promise((resolve) => {
      const child = pool.spawn('sh', ['-c', 'echo a; echo b >&2']);
      child.stdout.resume();
      child.on('close', resolve);
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
  } finally {
    hook.disable();
  }
  assert.equal(ids.size, 3);
  assert.deepEqual({ destroyed: destroyed.size, late }, { destroyed: 3, late: [] });
});

test('pool closes', async () => {
  await pool.close();
});
