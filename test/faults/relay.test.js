// The output relay under mixed traffic: busy streams are spliced from the
// child's socket to the client's behind their frame headers, the rest is
// copied through the server's buffer, and both kinds of frame share one
// connection. Every byte must arrive once, in order, on its own stream,
// whatever the interleaving, pauses and small reads in between.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, writeFileSync, rmSync, readlinkSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import * as nodeCp from 'node:child_process';
import { createPool } from '../../lib/index.js';
import { Server } from '../../lib/server.js';
import { addon } from '../../lib/launch.js';
import { T } from '../../lib/protocol.js';
import { stdoutBeforeStderr } from '../helpers/record.js';
import { withServerStopped } from '../helpers/stopped.js';

let dir;
let big;
let bigHash;
const MB = 1024 * 1024;

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'spawnpool-relay-'));
  big = join(dir, 'big.bin');
  const data = randomBytes(24 * MB + 12345);         // not a multiple of any chunk
  writeFileSync(big, data);
  bigHash = createHash('sha256').update(data).digest('hex');
});

after(() => rmSync(dir, { recursive: true, force: true }));

/** Hashes and sizes of what `child` writes on stdout and stderr, at 'close'. */
async function collect(child, { pauseEvery = 0 } = {}) {
  const hashes = [createHash('sha256'), createHash('sha256')];
  const sizes = [0, 0];
  const chunks = [0, 0];
  [child.stdout, child.stderr].forEach((stream, i) => {
    stream.on('data', (d) => {
      hashes[i].update(d);
      sizes[i] += d.length;
      if (pauseEvery && ++chunks[i] % pauseEvery === 0) {
        stream.pause();
        setTimeout(() => stream.resume(), 3);
      }
    });
  });
  const [code] = await once(child, 'close');
  return { code, out: [hashes[0].digest('hex'), sizes[0]], err: [hashes[1].digest('hex'), sizes[1]] };
}

test('busy stdout and stderr of several children on one server, with chatty neighbours: every byte, in order', async () => {
  const pool = createPool({ size: 1 });
  try {
    const size = 24 * MB + 12345;
    const runs = [];
    for (let i = 0; i < 3; i++) {
      // Both streams busy at once (stderr from a background cat).
      runs.push(collect(pool.spawn('sh', ['-c', 'cat "$1" >&2 & cat "$1"; wait', 'sh', big]), { pauseEvery: i === 1 ? 7 : 0 }));
    }
    // Small frames in between: a child printing lines while the big ones run.
    const lines = collect(pool.spawn('sh', ['-c', 'i=0; while [ $i -lt 2000 ]; do echo line $i; i=$((i+1)); done']));
    const expectedLines = createHash('sha256');
    for (let i = 0; i < 2000; i++) expectedLines.update(`line ${i}\n`);
    for (const r of await Promise.all(runs)) {
      assert.deepEqual(r, { code: 0, out: [bigHash, size], err: [bigHash, size] });
    }
    const small = await lines;
    assert.equal(small.code, 0);
    assert.equal(small.out[0], expectedLines.digest('hex'));
  } finally {
    await pool.close();
  }
});

test('a busy stream that turns quiet and busy again (small writes between big ones) stays intact', async () => {
  const pool = createPool({ size: 1 });
  try {
    const script = 'for i in 1 2 3; do cat "$1"; printf "gap %s\\n" $i; sleep 0.01; done';
    const child = pool.spawn('sh', ['-c', script, 'sh', big], { stdio: ['ignore', 'pipe', 'pipe'] });
    const r = await collect(child);
    const data = (await import('node:fs')).readFileSync(big);
    const expected = createHash('sha256');
    for (const i of [1, 2, 3]) expected.update(data).update(`gap ${i}\n`);
    assert.deepEqual(r.out, [expected.digest('hex'), 3 * (data.length + 6)]);
    assert.equal(r.code, 0);
  } finally {
    await pool.close();
  }
});

test('a child writing in small pieces (dd bs=100) while the stream is busy: nothing is lost or stuck', async () => {
  const pool = createPool({ size: 1 });
  try {
    // A big write first makes the stream busy (spliced); then many small
    // writes queue up as many small socket buffers.
    const child = pool.spawn('sh', ['-c', 'head -c 1048576 "$1"; dd if="$1" bs=100 count=40000 status=none', 'sh', big]);
    const r = await collect(child, { pauseEvery: 5 });
    const data = (await import('node:fs')).readFileSync(big);
    const expected = createHash('sha256').update(data.subarray(0, MB)).update(data.subarray(0, 4_000_000)).digest('hex');
    assert.deepEqual(r.out, [expected, MB + 4_000_000]);
  } finally {
    await pool.close();
  }
});

test('the relay does splice here (spawnd says so under SPAWND_DEBUG=1), and what it splices arrives intact', async () => {
  // The tests above pass with or without splicing; this one makes sure
  // they exercised it on this machine. With the launch addon busy streams
  // are handed over to Node instead (test/faults/handover.test.js); the
  // relay serves where there is no addon (npm test's second pass runs
  // this file that way too), so it is checked without it.
  const code = `
    const { createPool } = await import(${JSON.stringify(new URL('../../lib/index.js', import.meta.url).href)});
    const { createHash } = await import('node:crypto');
    const pool = createPool({ size: 1 });
    const hash = createHash('sha256');
    await new Promise((resolve) => {
      const c = pool.spawn('cat', [${JSON.stringify(big)}]);
      c.stdout.on('data', (d) => hash.update(d));
      c.on('close', resolve);
    });
    await pool.close();
    console.log(hash.digest('hex'));
  `;
  const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', code], {
    env: { ...process.env, SPAWND_DEBUG: '1', SPAWNPOOL_ADDON: '0' }, maxBuffer: 64 * MB, timeout: 60_000,
  });
  assert.equal(stdout.trim(), bigHash);
  assert.match(stderr, /relay: busy streams are spliced/);
  assert.doesNotMatch(stderr, /relaying by copy/);
});

test('a relayed stream is read to its end before a stream that became readable later, as Node reads pipes (differential)', async (t) => {
  // 150,000 bytes on stdout, then "done" on stderr: Node reads the whole
  // stdout first; nano-spawn's `output` depends on it. The server used to
  // read one chunk per stream per round. Relayed without the launch addon
  // (npm test's pass with SPAWNPOOL_ADDON=0); with it, stdout is handed
  // over after its first full chunk (most runs: the server may also keep
  // up with the writer to the end), and Node's reads of the pipe must come
  // before the relayed "done" just the same.
  // The child's writes block, so all of stdout is in its socket before
  // "done" is written, whatever the kernel and the load (an asynchronous
  // process.stdout.write lands whole only if the socket takes it at once:
  // with 220,000 bytes here, node:child_process itself got "done" early in
  // 38 of 40 runs).
  const pool = createPool({ size: 1 });
  try {
    const outcomes = {};
    for (const [name, spawn] of [['node', nodeCp.spawn], ['spawnpool', pool.spawn]]) {
      const seen = [];
      for (let i = 0; i < 40; i++) seen.push((await stdoutBeforeStderr(spawn, 150000)).outAtDone);
      outcomes[name] = seen.filter((n) => n !== 150000);
    }
    t.diagnostic(`node:child_process delivered "done" early in ${outcomes.node.length} of 40 runs`);
    t.diagnostic(`spawnpool handed stdout over in ${pool.stats().handedOver} of 40 runs`);
    assert.deepEqual(outcomes.spawnpool, []);
    if (addon === null) assert.equal(pool.stats().handedOver, 0, 'relayed');
  } finally {
    await pool.close();
  }
});

test("the server reads a ready pipe to its end before the next one: its own frames come in Node's read order", async () => {
  // The client puts the frames of one read in that order anyway, which hid
  // a server reading one chunk per stream per round (the test above passes
  // with SPAWND_READS_IN_A_ROW = 1). Here the frames are recorded as they
  // arrive, and the server is stopped while the child writes 150,000 bytes
  // on stdout and then "done" on stderr, and exits: when it goes on, both
  // pipes and the exit wait for it at once, as for a loop that was busy.
  const flag = join(dir, 'go');
  const frames = [];
  const collectFrame = Server.prototype.collect;
  Server.prototype.collect = function (msg) {
    if (msg.type === T.DATA || msg.type === T.END) frames.push({ id: msg.id, fd: msg.fd, n: msg.data?.length ?? 0 });
    return collectFrame.call(this, msg);
  };
  const pool = createPool({ size: 1 });
  let server = 0;
  try {
    const script = `const fs = require("fs"); const wait = new Int32Array(new SharedArrayBuffer(4));
      while (!fs.existsSync(${JSON.stringify(flag)})) Atomics.wait(wait, 0, 0, 5);
      fs.writeSync(1, "x".repeat(150000)); fs.writeSync(2, "done\\n");`;
    for (let run = 0; run < 3; run++) {
      rmSync(flag, { force: true });
      frames.length = 0;
      const child = pool.spawn(process.execPath, ['-e', script]);
      let out = 0;
      let outAtDone = -1;
      child.stdout.on('data', (d) => { out += d.length; });
      child.stderr.on('data', () => { if (outAtDone === -1) outAtDone = out; });
      await once(child, 'spawn');
      const runsNode = () => { try { return readlinkSync(`/proc/${child.pid}/exe`) === realpathSync(process.execPath); } catch { return false; } };
      await withServerStopped(child, () => pool.stats().servers[0].pid, runsNode, () => writeFileSync(flag, ''), (pid) => { server = pid; });
      await once(child, 'close');
      assert.equal(outAtDone, 150000);
      const order = frames.map((f) => `${f.fd}${f.n ? '' : ' end'}`);
      const firstErr = order.indexOf('2');
      assert.ok(firstErr > order.lastIndexOf('1'), `run ${run}, frames as the server sent them: ${order.join(', ')}`);
    }
    // With the addon, stdout goes over after its first chunk: the server's
    // frames (that chunk, then "done") and Node's reads of the pipe in
    // between must still give Node's order.
    assert.equal(pool.stats().handedOver, addon === null ? 0 : 3);
  } finally {
    if (server !== 0) process.kill(server, 'SIGCONT');
    Server.prototype.collect = collectFrame;
    await pool.close();
  }
});

const python = ['/usr/bin/python3', '/usr/local/bin/python3', '/bin/python3'].find((p) => existsSync(p));

for (const mode of ['fd', 'oob']) {
  test(`bytes queued behind a message with ${mode === 'fd' ? 'fds attached (SCM_RIGHTS)' : 'an out-of-band byte'} arrive at once, as with node:child_process`, { skip: !python && 'no python3 to write such a message' }, async () => {
    const script = fileURLToPath(new URL('../fixtures/scripts/stdout-scm.py', import.meta.url));
    // How long before the D (written 1.5 s after them) the C's arrived:
    // measured from the D, not from the spawn, so a slow start on a loaded
    // machine does not count.
    const cs = async (spawn) => {
      const child = spawn(python, [script, mode], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      let cAt = null;
      let dAt = null;
      child.stdout.on('data', (d) => {
        out += d;
        if (cAt === null && out.includes('C'.repeat(1000))) cAt = performance.now();
        if (dAt === null && out.includes('D')) dAt = performance.now();
      });
      await once(child, 'close');
      return { before: cAt === null || dAt === null ? null : dAt - cAt, tail: out.slice(-2) };
    };
    const pool = createPool({ size: 1 });
    try {
      const [ours, node] = await Promise.all([cs(pool.spawn), cs(nodeCp.spawn)]);
      assert.equal(ours.tail, node.tail);
      assert.ok(node.before !== null && node.before > 1000, `node:child_process got the C's ${node.before} ms before the D`);
      assert.ok(ours.before !== null && ours.before > 1000, `spawnpool got the C's ${ours.before} ms before the D (written 1.5 s after them)`);
    } finally {
      await pool.close();
    }
  });
}
