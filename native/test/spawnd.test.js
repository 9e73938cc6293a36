// Black-box tests of the native server: frames in, frames out, over the
// same private socket (fd 3) the library uses. Runs against
// $SPAWNPOOL_SERVER, or native/build/spawnd (build it first:
// node scripts/build-native.js).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync, chmodSync, readFileSync, readdirSync, openSync, closeSync, rmSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir, constants } from 'node:os';
import { fileURLToPath } from 'node:url';
import * as P from '../../lib/protocol.js';

const BIN = process.env.SPAWNPOOL_SERVER ?? fileURLToPath(new URL('../build/spawnd', import.meta.url));
const SANITIZED = BIN.includes('asan');
const dir = mkdtempSync(join(tmpdir(), 'spawnd-test-'));
const conns = [];
after(() => {
  for (const c of conns) c.close();
  rmSync(dir, { recursive: true, force: true });
});

const ENOENT = 2, EACCES = 13, EINVAL = 22, EPIPE = 32, EMFILE = 24;

function request(argv, opts = {}) {
  return {
    flags: 0, uid: 0, gid: 0, window: 65536, stdio: [0, 0, 0], file: argv[0], cwd: '',
    env: [`PATH=${process.env.PATH}`], ...opts, argv,
  };
}

/** One server and its socket; frames are queued until a test takes them. */
class Conn {
  constructor({
    args = [String(process.pid)], stdio = ['ignore', 'ignore', 'inherit'], hello = true, bin = BIN, parked = 0, env = {},
  } = {}) {
    this.proc = spawn(bin, args, { stdio: [...stdio, 'pipe', ...(parked ? ['pipe'] : [])], env: { ...process.env, ...env } });
    // The pid feed (fd 4): parked pids, 4 bytes each.
    this.pids = [];
    this.leaders = [];      // announced with bit 31 set: parked as session leaders
    this.proc.stdio[4]?.on('data', (chunk) => {
      for (let off = 0; off + 4 <= chunk.length; off += 4) {
        const v = chunk.readUInt32LE(off);
        if (v >= P.FEED_LEADER) this.leaders.push(v - P.FEED_LEADER);
        else this.pids.push(v);
      }
      this.wake?.();
    });
    this.sock = this.proc.stdio[3];
    this.frames = [];
    this.wake = null;
    this.nextId = 1;
    this.reap = true;
    this.exit = new Promise((resolve) => this.proc.on('exit', (code, signal) => resolve({ code, signal })));
    const reaping = new Set();
    const decoder = new P.Decoder((m) => {
      // As the library does once it has read the EXIT: the zombie may go
      // (the REAPED that answers is the library's cue for 'exit').
      if (m.type === P.T.EXIT && this.reap) {
        reaping.add(m.id);
        this.send(P.encodeReap(m.id));
      }
      if (m.type === P.T.REAPED && reaping.delete(m.id)) return;
      this.frames.push(m);
      this.wake?.();
    });
    this.sock.on('data', (chunk) => decoder.push(chunk));
    this.sock.on('error', () => {});
    this.sock.on('close', () => { this.closed = true; this.wake?.(); });
    if (hello) this.send(P.encodeHello(parked));
    conns.push(this);
  }

  send(buf) { this.sock.write(buf); }

  close() { if (!this.sock.destroyed) this.sock.end(); }

  /** The first queued frame matching `pred`, waiting up to `ms`. */
  async frame(pred = () => true, ms = 10000) {
    const deadline = Date.now() + ms;
    for (;;) {
      const i = this.frames.findIndex(pred);
      if (i >= 0) return this.frames.splice(i, 1)[0];
      if (this.closed) throw new Error('socket closed while waiting for a frame');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('timed out waiting for a frame');
      await new Promise((resolve) => {
        const t = setTimeout(resolve, left);
        this.wake = () => { clearTimeout(t); resolve(); };
      });
    }
  }

  spawn(argv, opts) {
    const id = this.nextId++;
    this.send(P.encodeSpawn(id, request(argv, opts)));
    return id;
  }

  /** Frames of `id` until its terminal state (docs/protocol.md, Request ids). */
  async collect(id, { stdio = [0, 0, 0], closed = [] } = {}) {
    const r = { id, out: Buffer.alloc(0), err: Buffer.alloc(0), frames: [] };
    let ends = [1, 2].filter((fd) => stdio[fd] === 0 && !closed.includes(fd)).length;
    for (;;) {
      const f = await this.frame((m) => m.id === id);
      r.frames.push(f);
      if (f.type === P.T.SPAWN_ERROR) return { ...r, error: [f.errno, f.syscall] };
      if (f.type === P.T.SPAWNED) r.pid = f.pid;
      if (f.type === P.T.DATA) r[f.fd === 1 ? 'out' : 'err'] = Buffer.concat([r[f.fd === 1 ? 'out' : 'err'], f.data]);
      if (f.type === P.T.END && f.fd > 0) ends--;
      if (f.type === P.T.EXIT) r.exit = [f.code, f.signal];
      if (r.exit && ends === 0) return r;
    }
  }

  run(argv, opts = {}) { return this.collect(this.spawn(argv, opts), opts); }

  /** The next announced parked pid (a session leader's if `leader`), waiting for one. */
  async parkedPid(ms = 5000, leader = false) {
    const deadline = Date.now() + ms;
    const pids = leader ? this.leaders : this.pids;
    while (pids.length === 0) {
      if (Date.now() > deadline) throw new Error('no parked pid announced');
      await new Promise((resolve) => {
        const t = setTimeout(resolve, 20);
        this.wake = () => { clearTimeout(t); resolve(); };
      });
    }
    return pids.shift();
  }

  /** SPAWN for the parked child `pid`. */
  spawnParked(pid, argv, opts) {
    const id = this.nextId++;
    this.send(P.encodeSpawn(id, request(argv, opts), pid));
    return id;
  }

  rssKb() { return Number(readFileSync(`/proc/${this.proc.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]); }

  fdCount() { return readdirSync(`/proc/${this.proc.pid}/fd`).length; }

  zombies() {
    return readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
      try {
        const s = readFileSync(`/proc/${p}/stat`, 'utf8');
        const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
        return f[0] === 'Z' && Number(f[1]) === this.proc.pid;
      } catch { return false; }
    });
  }
}

const shared = new Conn();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test('handshake: HELLO answers version 5, the server pid, and no parked children without a feed on fd 4', async () => {
  const h = await shared.frame((m) => m.type === P.T.S_HELLO);
  assert.equal(h.version, P.VERSION);
  assert.equal(h.pid, shared.proc.pid);
  assert.equal(h.parked, 0);
});

test('SPAWND_PARK parks from the start, before the HELLO; the HELLO\'s number is the one that holds', async () => {
  const early = new Conn({ hello: false, parked: 1, env: { SPAWND_PARK: `${P.VERSION}:4` } });
  const late = new Conn({ hello: false, parked: 1, env: { SPAWND_PARK: '' } });
  // A client of another version (its HELLO will be refused) gets none before it.
  const other = new Conn({ hello: false, parked: 1, env: { SPAWND_PARK: `${P.VERSION + 1}:4` } });
  for (const deadline = Date.now() + 5000; early.pids.length < 4 && Date.now() < deadline;) await sleep(5);
  assert.equal(early.pids.length, 4, 'four parked before any HELLO');
  assert.ok(early.leaders.length >= 1, 'and a session leader');
  await sleep(100);
  assert.equal(late.pids.length, 0, 'without it, nothing is parked before the HELLO');
  assert.equal(other.pids.length, 0, 'nor for another protocol version');
  other.close();
  early.send(P.encodeHello(6));
  assert.equal((await early.frame((m) => m.type === P.T.S_HELLO)).parked, 6);
  for (const deadline = Date.now() + 5000; early.pids.length < 6 && Date.now() < deadline;) await sleep(5);
  assert.equal(early.pids.length, 6, 'then as many as the HELLO asked for');
  const marker = join(dir, 'park-early');
  early.spawnParked(early.pids[0], ['sh', '-c', `echo ran > ${marker}`], { stdio: [1, 1, 1] });
  await early.frame((m) => m.type === P.T.EXIT);
  assert.equal(readFileSync(marker, 'utf8'), 'ran\n', 'an early parked child runs a SPAWN like any other');
  early.close();
  late.close();
});

test('echo hi: SPAWNED, DATA, ENDs, EXIT 0', async () => {
  const r = await shared.run(['echo', 'hi']);
  assert.equal(r.frames[0].type, P.T.SPAWNED);
  assert.equal(r.out.toString(), 'hi\n');
  assert.deepEqual(r.exit, [0, 0]);
});

test('exec failures are SPAWN_ERROR with syscall "spawn"', async () => {
  const script = join(dir, 'not-exec');
  writeFileSync(script, 'echo no\n');
  assert.deepEqual((await shared.run(['no-such-program-xyz'])).error, [ENOENT, 'spawn']);
  assert.deepEqual((await shared.run(['/no/such/file'])).error, [ENOENT, 'spawn']);
  assert.deepEqual((await shared.run(['true'], { cwd: '/no/such/dir' })).error, [ENOENT, 'spawn']);
  assert.deepEqual((await shared.run([script])).error, [EACCES, 'spawn']);
  assert.deepEqual((await shared.run(['true'], { env: [`PATH=${dir}`] })).error, [ENOENT, 'spawn']);
});

test('PATH comes from the child env; default /usr/bin:/bin; relative entries from cwd', async () => {
  const bin = join(dir, 'bin');
  const bad = join(dir, 'bad');
  for (const d of [bin, bad]) rmSync(d, { recursive: true, force: true });
  writeFileSync(join(dir, 'x'), '');
  const { mkdirSync } = await import('node:fs');
  mkdirSync(bin);
  mkdirSync(bad);
  writeFileSync(join(bin, 'hello'), '#!/bin/sh\necho "hello from $PWD"\n');
  chmodSync(join(bin, 'hello'), 0o755);
  writeFileSync(join(bad, 'hello'), 'not executable');
  assert.equal((await shared.run(['hello'], { env: [`PATH=${bad}:${bin}`] })).out.toString(), `hello from ${process.cwd()}\n`);
  assert.deepEqual((await shared.run(['hello'], { env: [`PATH=${bad}`] })).error, [EACCES, 'spawn']);
  assert.equal((await shared.run(['hello'], { env: ['PATH=bin'], cwd: dir })).out.toString(), `hello from ${dir}\n`);
  assert.equal((await shared.run(['hello'], { env: ['PATH=:/usr/bin'], cwd: bin })).out.toString(), `hello from ${bin}\n`);
  assert.equal((await shared.run(['echo', 'ok'], { env: [] })).out.toString(), 'ok\n');
});

test('a script without #! runs under /bin/sh, like execvp', async () => {
  const script = join(dir, 'noshebang');
  writeFileSync(script, 'echo "sh: $0 $1"\n');
  chmodSync(script, 0o755);
  assert.equal((await shared.run([script, 'arg'])).out.toString(), `sh: ${script} arg\n`);
});

test('argv and env bytes arrive intact (non-ASCII, empty entries)', async () => {
  const r = await shared.run(['sh', '-c', 'printf "%s|" "$@"; printf "%s" "$GREETING"', 'sh', 'café', '', '日本'],
    { env: ['GREETING=héllo', `PATH=${process.env.PATH}`] });
  assert.equal(r.out.toString(), 'café||日本|héllo');
});

test('stdin round trip through cat, WROTE acknowledges every byte', async () => {
  const id = shared.spawn(['cat']);
  const data = Buffer.alloc(3 << 20, 'abcdefghij');
  let sent = 0, acked = 0, got = 0, exited = false, ends = 0;
  while (!exited || ends < 2) {
    while (sent < data.length && sent - acked < P.STDIN_WINDOW) {
      const n = Math.min(P.STDIN_WINDOW - (sent - acked), data.length - sent, 30000);
      shared.send(P.encodeStdin(id, data.subarray(sent, sent + n)));
      sent += n;
      if (sent === data.length) shared.send(P.encodeStdinEnd(id));
    }
    const f = await shared.frame((m) => m.id === id);
    if (f.type === P.T.WROTE) acked += f.bytes;
    if (f.type === P.T.DATA) { got += f.data.length; shared.send(P.encodeCredit(id, 1, f.data.length)); }
    if (f.type === P.T.END) ends++;
    if (f.type === P.T.EXIT) exited = true;
  }
  assert.equal(acked, data.length);
  assert.equal(got, data.length);
});

test('KILL: SIGTERM gives EXIT(-1, 15); bad signal KILL_ERROR; after reap ignored', async () => {
  const id = shared.spawn(['sleep', '30']);
  await shared.frame((m) => m.id === id && m.type === P.T.SPAWNED);
  shared.send(P.encodeKill(id, 999));
  assert.equal((await shared.frame((m) => m.id === id && m.type === P.T.KILL_ERROR)).errno, EINVAL);
  shared.send(P.encodeKill(id, 0));
  shared.send(P.encodeKill(id, 15));
  const r = await shared.collect(id);
  assert.deepEqual(r.exit, [-1, 15]);
  assert.equal(r.frames.filter((f) => f.type === P.T.KILL_ERROR).length, 0);
  shared.send(P.encodeKill(id, 9));
  assert.deepEqual((await shared.run(['true'])).exit, [0, 0]);
  assert.equal(shared.frames.filter((f) => f.id === id).length, 0);
});

test('credit: the server reads no more than the window; CREDIT opens it', async () => {
  const id = shared.spawn(['yes'], { window: 1000 });
  let got = 0;
  const take = async (ms) => {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      const f = await shared.frame((m) => m.id === id && m.type === P.T.DATA, end - Date.now()).catch(() => null);
      if (f) got += f.data.length;
    }
  };
  await take(300);
  assert.equal(got, 1000);
  shared.send(P.encodeCredit(id, 1, 5000));
  await take(300);
  assert.equal(got, 6000);
  shared.send(P.encodeKill(id, 9));
  shared.send(P.encodeClose(id, 1));
  const r = await shared.collect(id, { closed: [1] });
  assert.deepEqual(r.exit, [-1, 9]);
});

test('CLOSE of stdout with unread data: no END for it; yes gets ECONNRESET, exits 1', async () => {
  // A small window stops the server reading, so the socket holds unread
  // bytes when it closes: ECONNRESET, as under Node, not SIGPIPE.
  const id = shared.spawn(['yes'], { window: 1000, stdio: [0, 0, 0] });
  await shared.frame((m) => m.id === id && m.type === P.T.SPAWNED);
  await sleep(100);
  shared.send(P.encodeClose(id, 1));
  const r = await shared.collect(id, { closed: [1] });
  assert.deepEqual(r.exit, [1, 0]);
  assert.match(r.err.toString(), /Connection reset by peer/);
  await sleep(50);
  assert.equal(shared.frames.filter((f) => f.id === id).length, 0);
});

test('child stdio are sockets, as libuv makes them', async () => {
  const r = await shared.run(['sh', '-c', 'for f in 0 1 2; do test -S /proc/self/fd/$f && echo sock$f; done']);
  assert.equal(r.out.toString(), 'sock0\nsock1\nsock2\n');
  assert.deepEqual(r.exit, [0, 0]);
});

test('STDIN_END shuts stdin down: the child reads EOF, and later output still ends', async () => {
  const id = shared.spawn(['sh', '-c', 'cat; echo done; exec 1>&- 2>&-; sleep 0.2']);
  shared.send(P.encodeStdin(id, Buffer.from('abc\n')));
  shared.send(P.encodeStdinEnd(id));
  const r = await shared.collect(id);
  assert.equal(r.out.toString(), 'abc\ndone\n');
  assert.deepEqual(r.exit, [0, 0]);
  const types = r.frames.map((f) => f.type);
  assert.ok(types.lastIndexOf(P.T.END) < types.indexOf(P.T.EXIT), 'ENDs arrive at EOF, before the exit');
});

test('stdin closed by the child: END fd 0 EPIPE', async () => {
  const id = shared.spawn(['sh', '-c', 'exec 0<&-; sleep 0.3']);
  await shared.frame((m) => m.id === id && m.type === P.T.SPAWNED);
  await sleep(100);
  shared.send(P.encodeStdin(id, Buffer.alloc(100)));
  const r = await shared.collect(id);
  const end0 = r.frames.find((f) => f.type === P.T.END && f.fd === 0);
  assert.equal(end0?.errno, EPIPE);
});

test('stdin closed by the child with bytes unread: END fd 0 EPIPE, not ECONNRESET, unasked at the hang-up; a STDIN after it is refused the same way', async () => {
  const id = shared.spawn(['sh', '-c', 'sleep 0.2; exec 0<&-; sleep 0.3']);
  shared.send(P.encodeStdin(id, Buffer.from('never read')));
  assert.equal((await shared.frame((m) => m.id === id && m.type === P.T.WROTE)).bytes, 10);
  // The child's close hangs up our end: the server says so without being
  // written to. (The close sets ECONNRESET on our socket, but the peer's
  // shutdown comes first: EPIPE, as Node's write sees.)
  const unasked = await shared.frame((m) => m.id === id && m.type === P.T.END && m.fd === 0);
  assert.equal(unasked.errno, EPIPE);
  shared.send(P.encodeStdin(id, Buffer.from('reset')));
  const r = await shared.collect(id);
  const end0 = r.frames.filter((f) => f.type === P.T.END && f.fd === 0);
  assert.deepEqual(end0.map((f) => f.errno), [EPIPE]);
  assert.ok(!r.frames.some((f) => f.type === P.T.WROTE), 'nothing of the second STDIN written');
});

test('a child that closes its stdin and then writes: END fd 0 comes unasked, before that output (spawned, and parked)', async () => {
  const script = 'exec 0<&-; echo closed; sleep 0.1';
  const order = (r) => r.frames.filter((f) => (f.type === P.T.END && f.fd === 0) || (f.type === P.T.DATA && f.fd === 1))
    .map((f) => (f.type === P.T.END ? `END 0 ${f.errno}` : 'DATA 1'));
  for (let i = 0; i < 5; i++) {
    const r = await shared.run(['sh', '-c', script]);
    assert.deepEqual(order(r), [`END 0 ${EPIPE}`, 'DATA 1']);
    assert.equal(r.out.toString(), 'closed\n');
  }
  const c = new Conn({ parked: 2 });
  for (let i = 0; i < 5; i++) {
    const r = await c.collect(c.spawnParked(await c.parkedPid(), ['sh', '-c', script]));
    assert.deepEqual(order(r), [`END 0 ${EPIPE}`, 'DATA 1']);
  }
  // A child that keeps its stdin open: nothing of it until its exit.
  const r = await c.collect(c.spawnParked(await c.parkedPid(), ['sh', '-c', 'echo hi; sleep 0.2']));
  const types = r.frames.map((f) => `${f.type === P.T.END ? 'END' : f.type === P.T.DATA ? 'DATA' : f.type === P.T.EXIT ? 'EXIT' : f.type} ${f.fd ?? ''}`.trim());
  assert.ok(types.indexOf('DATA 1') < types.indexOf('END 0'), types.join(', '));
  c.close();
  await c.exit;
});

test('STDIN that cannot be delivered is answered END fd 0 EPIPE', async () => {
  const isEnd0 = (id) => (m) => m.id === id && m.type === P.T.END && m.fd === 0;
  const done = shared.spawn(['true']);
  await shared.collect(done);
  shared.send(P.encodeStdin(done, Buffer.from('late')));
  assert.equal((await shared.frame(isEnd0(done))).errno, EPIPE);
  shared.send(P.encodeStdin(0x7fff0000, Buffer.from('nobody')));
  assert.equal((await shared.frame(isEnd0(0x7fff0000))).errno, EPIPE);
  const ignored = shared.spawn(['sleep', '0.2'], { stdio: [1, 0, 0] });
  shared.send(P.encodeStdin(ignored, Buffer.from('x')));
  assert.equal((await shared.frame(isEnd0(ignored))).errno, EPIPE);
  await shared.collect(ignored, { stdio: [1, 0, 0] });
  const ended = shared.spawn(['sleep', '0.2']);
  shared.send(P.encodeStdinEnd(ended));
  shared.send(P.encodeStdin(ended, Buffer.from('after end')));
  assert.equal((await shared.frame(isEnd0(ended))).errno, EPIPE);
  const closed = shared.spawn(['sleep', '0.2']);
  shared.send(P.encodeClose(closed, 0));
  shared.send(P.encodeStdin(closed, Buffer.from('after close')));
  assert.equal((await shared.frame(isEnd0(closed))).errno, EPIPE);
  // Reaped while a grandchild keeps stdout open: known id, stdin closed.
  const held = shared.spawn(['sh', '-c', 'sleep 0.3 & exit 0']);
  await shared.frame((m) => m.id === held && m.type === P.T.EXIT);
  shared.send(P.encodeStdin(held, Buffer.from('x')));
  assert.equal((await shared.frame(isEnd0(held))).errno, EPIPE);
  for (const id of [ended, closed]) await shared.collect(id);
  for (const fd of [1, 2]) await shared.frame((m) => m.id === held && m.type === P.T.END && m.fd === fd);
});

test('stdin still queued at reap: END fd 0 EPIPE before EXIT', async () => {
  const id = shared.spawn(['sleep', '0.3']);
  for (let i = 0; i < 14; i++) shared.send(P.encodeStdin(id, Buffer.alloc(60000, 'q')));
  const r = await shared.collect(id);
  const types = r.frames.map((f) => (f.type === P.T.END && f.fd === 0 ? 'END0' : f.type));
  assert.equal(types.filter((t) => t === 'END0').length, 1);
  assert.equal(types.indexOf('END0'), types.indexOf(P.T.EXIT) - 1);
  assert.equal(r.frames.find((f) => f.type === P.T.END && f.fd === 0).errno, EPIPE);
  assert.deepEqual(r.exit, [0, 0]);
});

test('output that ends as its writer exits: every byte, then END, at any window (a short read of a closed peer is its end)', async () => {
  // seq's last bytes and its exit come together: the server takes a short
  // read of a socket whose peer is closed for its EOF, as libuv does.
  const expected = Array.from({ length: 60000 }, (_, i) => `${i + 1}\n`).join('');
  for (const window of [65536, 4096, 1000, 7]) {
    const id = shared.spawn(['seq', '1', '60000'], { window });
    let out = '';
    let ended = false;
    let exited = false;
    while (!ended || !exited) {
      const f = await shared.frame((m) => m.id === id);
      if (f.type === P.T.DATA) {
        assert.ok(!ended, 'DATA after END');
        out += f.data.toString();
        shared.send(P.encodeCredit(id, 1, f.data.length));
      } else if (f.type === P.T.END && f.fd === 1) {
        assert.equal(f.errno, 0);
        ended = true;
      } else if (f.type === P.T.EXIT) {
        assert.deepEqual([f.code, f.signal], [0, 0]);
        exited = true;
      }
    }
    assert.equal(out.length, expected.length, `window ${window}`);
    assert.ok(out === expected, `window ${window}: the bytes differ`);
  }
});

test('EXIT may precede the ENDs when a grandchild holds the pipes', async () => {
  const r = await shared.run(['sh', '-c', '(sleep 0.3; echo late) & echo early']);
  assert.equal(r.out.toString(), 'early\nlate\n');
  const types = r.frames.map((f) => f.type);
  assert.ok(types.indexOf(P.T.EXIT) < types.lastIndexOf(P.T.END));
});

test('a child sees exactly fds 0, 1, 2 and default signals, empty mask', async () => {
  const r = await shared.run(['sh', '-c', 'ls /proc/self/fd; grep -E "^Sig(Blk|Ign)" /proc/self/status']);
  const lines = r.out.toString().trim().split('\n');
  assert.deepEqual(lines.filter((l) => /^\d+$/.test(l)).map(Number).filter((fd) => fd > 2).length, 1, lines.join(' ')); // ls's own
  assert.ok(lines.includes('SigBlk:\t0000000000000000'), lines.join(' '));
  assert.ok(lines.includes('SigIgn:\t0000000000000000'), lines.join(' '));
});

test('stdio IGNORE and FDn map to /dev/null and the server own fds, swaps included', async () => {
  const a = join(dir, 'server-out'), b = join(dir, 'server-err');
  const fa = openSync(a, 'w'), fb = openSync(b, 'w');
  const c = new Conn({ stdio: ['ignore', fa, fb] });
  closeSync(fa);
  closeSync(fb);
  const stdio = [1, P.stdioFd(2), P.stdioFd(1)];
  const r = await c.run(['sh', '-c', 'read x || echo eof; echo to-1; echo to-2 >&2'], { stdio });
  assert.deepEqual(r.exit, [0, 0]);
  assert.equal(readFileSync(a, 'utf8'), 'to-2\n');
  assert.equal(readFileSync(b, 'utf8'), 'eof\nto-1\n');
  c.close();
});

test('DETACHED makes a new session; SET_UID/SET_GID drop privileges', async (t) => {
  const r = await shared.run(['sh', '-c', 'read a b c d e sid rest < /proc/self/stat; echo $sid'], { flags: P.FLAG_DETACHED });
  assert.equal(Number(r.out.toString()), r.pid);
  if (process.getuid() !== 0) return t.skip('not root');
  const u = await shared.run(['sh', '-c', 'id -u; id -g; id -G'], { flags: P.FLAG_SET_UID | P.FLAG_SET_GID, uid: 65534, gid: 65534 });
  assert.equal(u.out.toString(), '65534\n65534\n65534\n');
});

test('1,000 sequential and 64-concurrent spawns: no zombies, no fd leaks, small RSS', async () => {
  // Earlier tests' last children may still wait for their REAP (a pidfd each).
  for (let waited = 0; shared.zombies().length > 0 && waited < 2000; waited += 20) await sleep(20);
  await sleep(50);
  const fds = shared.fdCount();
  for (let i = 0; i < (SANITIZED ? 200 : 1000); i++) {
    const r = await shared.run(['true'], { env: [] });
    assert.deepEqual(r.exit, [0, 0]);
  }
  const total = SANITIZED ? 200 : 1000;
  let started = 0;
  const worker = async () => {
    while (started < total) {
      started++;
      const r = await shared.run(['true'], { env: [] });
      assert.deepEqual(r.exit, [0, 0]);
    }
  };
  await Promise.all(Array.from({ length: 64 }, worker));
  // Each child stays a zombie until its REAP, sent as its EXIT was read.
  for (let waited = 0; shared.zombies().length > 0 && waited < 2000; waited += 20) await sleep(20);
  assert.deepEqual(shared.zombies(), []);
  assert.equal(shared.fdCount(), fds);
  if (!SANITIZED) assert.ok(shared.rssKb() < 2048, `RSS ${shared.rssKb()} kB`);
});

test('a paused consumer keeps server memory bounded', async () => {
  const c = new Conn();
  await c.frame((m) => m.type === P.T.S_HELLO);
  c.sock.pause();
  const id = c.spawn(['yes'], { window: 0xffffffff });
  await sleep(1000);
  const rss = c.rssKb();
  if (!SANITIZED) assert.ok(rss < 2560, `RSS ${rss} kB while paused`);
  c.sock.resume();
  await c.frame((m) => m.id === id && m.type === P.T.DATA);
  c.send(P.encodeKill(id, 9));
  c.send(P.encodeClose(id, 1));
  assert.deepEqual((await c.collect(id, { closed: [1] })).exit, [-1, 9]);
  c.close();
});

test('frames split byte by byte and many frames per write both work', async () => {
  const c = new Conn({ hello: false });
  const bytes = Buffer.concat([P.encodeHello(), P.encodeSpawn(1, request(['echo', 'a'])), P.encodeSpawn(2, request(['echo', 'b']))]);
  for (const b of bytes.subarray(0, 40)) { c.send(Buffer.from([b])); await sleep(1); }
  c.send(bytes.subarray(40));
  assert.equal((await c.collect(1)).out.toString(), 'a\n');
  assert.equal((await c.collect(2)).out.toString(), 'b\n');
  const big = Array.from({ length: 2000 }, (_, i) => `VAR${i}=${'x'.repeat(1000)}`);
  const r = await c.run(['sh', '-c', 'echo ${#VAR1999}'], { env: big });
  assert.equal(r.out.toString(), '1000\n');
  c.close();
});

test('EOF on the socket: exit 0 promptly, children live on', async () => {
  const c = new Conn();
  const id = c.spawn(['sleep', '5'], { stdio: [1, 1, 1] });
  const { pid } = await c.frame((m) => m.id === id && m.type === P.T.SPAWNED);
  const t0 = Date.now();
  c.close();
  assert.deepEqual(await c.exit, { code: 0, signal: null });
  assert.ok(Date.now() - t0 < 1000);
  process.kill(pid, 0);
  process.kill(pid, 'SIGKILL');
});

test('protocol errors: FATAL then exit 3; wrong version: HELLO then exit 2', async () => {
  const bad = new Conn({ hello: false });
  bad.send(P.encodeSpawn(1, request(['true'])));
  assert.equal((await bad.frame((m) => m.type === P.T.FATAL)).id, 0);
  assert.equal((await bad.exit).code, 3);
  const junk = new Conn();
  junk.send(Buffer.from([4, 0, 0, 0, 1, 0, 0, 0]));
  await junk.frame((m) => m.type === P.T.FATAL);
  assert.equal((await junk.exit).code, 3);
  const flood = new Conn();
  const id = flood.spawn(['sleep', '5']);
  for (let i = 0; i < 20; i++) flood.send(P.encodeStdin(id, Buffer.alloc(65536)));
  // The server exits with our unread bytes still queued: Linux then resets
  // the socket (ECONNRESET) and may drop the FATAL it wrote. The exit status
  // is the contract here.
  await flood.frame((m) => m.type === P.T.FATAL).catch((err) => assert.match(err.message, /socket closed/));
  assert.equal((await flood.exit).code, 3);
  const v6 = new Conn({ hello: false });
  v6.send(P.encodeHello(4, 6));
  assert.equal((await v6.frame((m) => m.type === P.T.S_HELLO)).version, P.VERSION);
  assert.equal((await v6.exit).code, 2);
  // Version 4 sent every SPAWN's environment and knew no SAME_ENV; version
  // 3 did not answer REAP, whose REAPED a later client awaits; version 2
  // had no handover either: their clients' HELLOs are refused the same way.
  for (const old of [4, 3, 2]) {
    const conn = new Conn({ hello: false });
    conn.send(P.encodeHello(4, old));
    assert.equal((await conn.frame((m) => m.type === P.T.S_HELLO)).version, P.VERSION, `version ${old}`);
    assert.equal((await conn.exit).code, 2);
  }
  // Version 1's HELLO had no parked count: still answered, with our version.
  const v1 = new Conn({ hello: false });
  v1.send(Buffer.from([9, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0]));
  assert.equal((await v1.frame((m) => m.type === P.T.S_HELLO)).version, P.VERSION);
  assert.equal((await v1.exit).code, 2);
});

test('usage: fd 3 not a socket exits 100; a dead parent pid exits at once', async () => {
  const noSock = spawn(BIN, [], { stdio: ['ignore', 'ignore', 'pipe', 'ignore'] });
  let err = '';
  noSock.stderr.on('data', (d) => { err += d; });
  const code = await new Promise((r) => noSock.on('exit', r));
  assert.equal(code, 100);
  assert.match(err, /fd 3/);
  const orphan = new Conn({ args: ['1'], hello: false });
  assert.equal((await orphan.exit).code, 0);
});

/** Resolves once `pid` has exited (gone, or a zombie nobody reaped yet). */
async function gone(pid, ms = 5000) {
  const deadline = Date.now() + ms;
  for (;;) {
    let state;
    try {
      const st = readFileSync(`/proc/${pid}/stat`, 'utf8');
      state = st.slice(st.lastIndexOf(')') + 2)[0];
    } catch { return true; }
    if (state === 'Z' || state === 'X') return true;
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
}

test('--detach: the started process exits 0 at once; the forked server serves fd 3', async () => {
  const c = new Conn({ args: ['--detach', String(process.pid)] });
  const t0 = Date.now();
  assert.deepEqual(await c.exit, { code: 0, signal: null });
  assert.ok(Date.now() - t0 < 2000);
  const h = await c.frame((m) => m.type === P.T.S_HELLO);
  assert.notEqual(h.pid, c.proc.pid);
  assert.equal((await c.run(['echo', 'detached'])).out.toString(), 'detached\n');
  c.close();
  assert.ok(await gone(h.pid), 'the detached server exits on socket EOF');
  const usage = spawn(BIN, ['--detach'], { stdio: ['ignore', 'ignore', 'ignore', 'pipe'] });
  assert.equal(await new Promise((r) => usage.on('exit', r)), 100);
});

/** A server started by a short-lived `sh` (our socket stays open: only the
 * parent's exit can end the server); its pid from HELLO. */
async function serverUnderSh(script) {
  const c = new Conn({ bin: '/bin/sh', args: ['-c', script] });
  const { pid } = await c.frame((m) => m.type === P.T.S_HELLO);
  return { c, pid };
}

test('the parent process exits: a SPAWN sent before is carried out, then the server exits', async () => {
  const { c, pid } = await serverUnderSh(`"${BIN}" $$ & wait`);
  const marker = join(dir, 'marker-parent-exit');
  // Stopped, the server cannot handle the SPAWN before the parent is gone.
  process.kill(pid, 'SIGSTOP');
  const id = c.spawn(['sh', '-c', `echo ran > ${marker}`], { stdio: [1, 1, 1] });
  await sleep(100);
  c.proc.kill('SIGKILL');
  await c.exit;
  process.kill(pid, 'SIGCONT');
  assert.ok(await gone(pid), 'the server exits when its parent does');
  assert.equal((await c.frame((m) => m.id === id)).type, P.T.SPAWNED);
  for (let i = 0; i < 100 && !existsSync(marker); i++) await sleep(20);
  assert.equal(readFileSync(marker, 'utf8'), 'ran\n');
  c.close();
});

test('--detach: the parent-pid argument ties the server to that process', async () => {
  const { c, pid } = await serverUnderSh(`"${BIN}" --detach $$; exec sleep 30`);
  assert.equal((await c.run(['echo', 'ok'])).out.toString(), 'ok\n');
  c.proc.kill('SIGKILL');
  await c.exit;
  assert.ok(await gone(pid), 'the server exits when the named process does');
  c.close();
});

test('EMFILE while making stdio: SPAWN_ERROR with syscall "socketpair"', async () => {
  const c = new Conn({ bin: '/bin/sh', args: ['-c', `ulimit -n 14 && exec "${BIN}"`] });
  const ids = [];
  let error;
  for (let i = 0; i < 8 && !error; i++) {
    const id = c.spawn(['sleep', '5']);
    ids.push(id);
    const f = await c.frame((m) => m.id === id && (m.type === P.T.SPAWNED || m.type === P.T.SPAWN_ERROR));
    if (f.type === P.T.SPAWN_ERROR) error = [f.errno, f.syscall];
  }
  assert.deepEqual(error, [EMFILE, 'socketpair']);
  for (const id of ids) c.send(P.encodeKill(id, 9));
  c.close();
});

// ---------------------------------------------------------- parked children

const procStat = (pid) => {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return { comm: s.slice(s.indexOf('(') + 1, s.lastIndexOf(')')), state: f[0], ppid: Number(f[1]), pgrp: Number(f[2]), session: Number(f[3]) };
  } catch { return null; }
};

test('parked: HELLO asks for 3, S_HELLO grants 3; three pids and one session leader\'s on fd 4: children of the server, named spawnd:parked, all signals blocked', async () => {
  const c = new Conn({ parked: 3 });
  assert.equal((await c.frame((m) => m.type === P.T.S_HELLO)).parked, 3);
  const pids = [await c.parkedPid(), await c.parkedPid(), await c.parkedPid()];
  const leader = await c.parkedPid(5000, true);
  for (const pid of [...pids, leader]) {
    // (It names itself when it first runs, maybe after its pid went out.)
    for (let i = 0; i < 100 && procStat(pid)?.comm !== 'spawnd:parked'; i++) await sleep(10);
    const st = procStat(pid);
    assert.deepEqual([st.comm, st.ppid], ['spawnd:parked', c.proc.pid]);
    // (SIGKILL and SIGSTOP cannot be blocked; glibc keeps 32 and 33 open.)
    const blocked = BigInt(`0x${readFileSync(`/proc/${pid}/status`, 'utf8').match(/^SigBlk:\s*(\w+)$/m)[1]}`);
    for (const sig of ['SIGHUP', 'SIGINT', 'SIGQUIT', 'SIGTERM', 'SIGUSR1', 'SIGCHLD', 'SIGPIPE']) {
      assert.ok(blocked & (1n << BigInt(constants.signals[sig] - 1)), `${sig} blocked while parked`);
    }
  }
  assert.equal(procStat(leader).session, leader, 'the leader leads its own session');
  assert.ok(pids.every((pid) => procStat(pid).session !== pid));
  await sleep(50);
  assert.deepEqual([c.pids.length, c.leaders.length], [0, 0], 'no more than asked for (leaders: a quarter, at least 1)');
  c.close();
  await c.exit;
});

test('parked: 32 asked, 32 parked and 4 session leaders (a quarter, at most 4)', async () => {
  const c = new Conn({ parked: 32 });
  assert.equal((await c.frame((m) => m.type === P.T.S_HELLO)).parked, 32);
  for (let i = 0; i < 500 && (c.pids.length < 32 || c.leaders.length < 4); i++) {
    await sleep(10);
  }
  await sleep(100);
  assert.deepEqual([c.pids.length, c.leaders.length], [32, 4]);
  c.close();
  await c.exit;
});

test('parked: a SPAWN names a pid, the program runs as that pid (no SPAWNED), a replacement is announced, the zombie waits for REAP', async () => {
  const c = new Conn({ parked: 1 });
  const pid = await c.parkedPid();
  c.reap = false;
  const id = c.spawnParked(pid, ['sh', '-c', 'echo $$; echo err >&2']);
  const r = await c.collect(id);
  assert.equal(r.out.toString(), `${pid}\n`);
  assert.equal(r.err.toString(), 'err\n');
  assert.deepEqual(r.exit, [0, 0]);
  assert.ok(!r.frames.some((f) => f.type === P.T.SPAWNED));
  assert.notEqual(await c.parkedPid(), pid, 'a new parked child replaces it');
  assert.equal(procStat(pid)?.state, 'Z', 'a zombie until REAP: the pid names no other process');
  c.send(P.encodeReap(id));
  await c.frame((m) => m.type === P.T.REAPED && m.id === id);
  assert.equal(procStat(pid), null, 'reaped by the time REAPED comes');
  // A REAP for an id the server does not know (a pid never announced) is answered too.
  c.send(P.encodeReap(999));
  await c.frame((m) => m.type === P.T.REAPED && m.id === 999);
  c.close();
  await c.exit;
});

test('parked: detached, cwd, uid/gid, env and stdio modes as asked; signals back at their defaults; no extra fd', async () => {
  const c = new Conn({ parked: 2 });
  const pid = await c.parkedPid(5000, true);
  const script = 'echo $$ $(cut -d" " -f6 /proc/self/stat) $(pwd) $(id -u) $X; grep -E "^Sig(Blk|Ign)" /proc/self/status; ls /proc/self/fd';
  const r = await c.collect(c.spawnParked(pid, ['sh', '-c', script], {
    flags: P.FLAG_DETACHED | P.FLAG_SET_UID | P.FLAG_SET_GID, uid: 0, gid: 0, cwd: '/tmp', env: ['X=y', `PATH=${process.env.PATH}`],
  }));
  const [first, ...rest] = r.out.toString().trim().split('\n');
  assert.equal(first, `${pid} ${pid} /tmp 0 y`, 'its own session, cwd, uid, env');
  assert.match(rest.join('\n'), /SigBlk:\s*0+\nSigIgn:\s*0+/);
  assert.deepEqual(rest.slice(2).sort(), ['0', '1', '2', '3'], 'fds 0-2 (and ls\'s own)');
  c.close();
  await c.exit;
});

test('parked: a program that cannot start (bad cwd) ends with SPAWN_ERROR and nothing after; a missing program too', async () => {
  const c = new Conn({ parked: 2 });
  const r1 = await c.collect(c.spawnParked(await c.parkedPid(), ['true'], { cwd: '/nonexistent-spawnd' }));
  assert.deepEqual(r1.error, [ENOENT, 'spawn']);
  const r2 = await c.collect(c.spawnParked(await c.parkedPid(), ['spawnd-no-such-program']));
  assert.deepEqual(r2.error, [ENOENT, 'spawn']);
  await sleep(50);
  assert.equal(c.frames.filter((f) => f.id === r1.id || f.id === r2.id).length, 0);
  const ok = await c.run(['echo', 'after']);
  assert.equal(ok.out.toString(), 'after\n');
  c.close();
  await c.exit;
});

test('parked: a SPAWN for a pid that is not parked (it died) ends as killed at once: END for each pipe, EXIT SIGKILL', async () => {
  const c = new Conn({ parked: 1 });
  const pid = await c.parkedPid();
  process.kill(pid, 'SIGKILL');
  for (let i = 0; i < 100 && procStat(pid)?.state !== undefined; i++) await sleep(10);
  const r = await c.collect(c.spawnParked(pid, ['true']));
  assert.deepEqual(r.exit, [-1, constants.signals.SIGKILL]);
  assert.deepEqual(r.frames.map((f) => f.type), [P.T.END, P.T.END, P.T.EXIT]);
  c.close();
  await c.exit;
});

test('parked: the server killed, its parked children die with it; closed, they are reaped before it exits', async () => {
  const killed = new Conn({ parked: 3 });
  const pids = [await killed.parkedPid(), await killed.parkedPid(), await killed.parkedPid()];
  killed.proc.kill('SIGKILL');
  await killed.exit;
  for (let i = 0; i < 100 && pids.some((p) => procStat(p) && procStat(p).state !== 'Z'); i++) await sleep(10);
  assert.deepEqual(pids.filter((p) => procStat(p) && procStat(p).state !== 'Z'), []);
  const closed = new Conn({ parked: 3 });
  const mine = [await closed.parkedPid(), await closed.parkedPid(), await closed.parkedPid()];
  closed.close();
  await closed.exit;
  assert.deepEqual(mine.filter((p) => procStat(p) !== null), [], 'no parked child left, not even a zombie');
});

test('parked: a SPAWN received just before the parent exits still runs its program', async () => {
  const marker = join(dir, 'parked-marker');
  const c = new Conn({ parked: 1 });
  const pid = await c.parkedPid(5000, true);
  c.spawnParked(pid, ['sh', '-c', `sleep 0.2; echo ran > ${marker}`], { flags: P.FLAG_DETACHED, stdio: [1, 1, 1] });
  c.close();              // EOF right behind the SPAWN: the server finishes it, then exits
  await c.exit;
  for (let i = 0; i < 100 && !existsSync(marker); i++) await sleep(20);
  assert.equal(readFileSync(marker, 'utf8'), 'ran\n');
});

test('parked: a detached SPAWN naming an ordinary parked pid (or the reverse) is a protocol error', async () => {
  const c = new Conn({ parked: 1 });
  c.spawnParked(await c.parkedPid(), ['true'], { flags: P.FLAG_DETACHED });
  assert.match((await c.frame((m) => m.type === P.T.FATAL)).message, /session-leader/);
  assert.equal((await c.exit).code, 3);
  const d = new Conn({ parked: 1 });
  d.spawnParked(await d.parkedPid(5000, true), ['true']);
  assert.match((await d.frame((m) => m.type === P.T.FATAL)).message, /session-leader/);
  assert.equal((await d.exit).code, 3);
});

// SAME_ENV (protocol 5): the environment of the last SPAWN that carried one.
const sameEnv = (id, argv, pid = 0, opts = {}) =>
  P.encodeSpawn(id, request(argv, { ...opts, env: [] }), pid, P.FLAG_SAME_ENV);

test('SAME_ENV: the child gets the last environment sent, whatever became of that request, parked or not', async () => {
  const c = new Conn({ parked: 4 });
  const envA = [`PATH=${process.env.PATH}`, 'WHICH=a', 'LANG=C'];
  const envB = [`PATH=${process.env.PATH}`, 'WHICH=b'];
  const a = await c.run(['env'], { env: envA });
  assert.deepEqual(a.out.toString().trim().split('\n'), envA);
  for (const pid of [0, await c.parkedPid()]) {
    const id = c.nextId++;
    c.send(sameEnv(id, ['env'], pid));
    const r = await c.collect(id);
    assert.deepEqual(r.out.toString().trim().split('\n'), envA, `pid ${pid}`);
  }
  // A request that fails still notes its environment: the client counts on it.
  assert.deepEqual((await c.run(['no-such-program-here'], { env: envB })).error, [ENOENT, 'spawn']);
  const id = c.nextId++;
  c.send(sameEnv(id, ['printenv', 'WHICH']));
  assert.equal((await c.collect(id)).out.toString(), 'b\n');
  // The PATH searched is the noted environment's.
  const bin = mkdtempSync(join(dir, 'same-env-bin-'));
  writeFileSync(join(bin, 'same-env-prog'), '#!/bin/sh\necho found\n');
  chmodSync(join(bin, 'same-env-prog'), 0o755);
  await c.run(['true'], { env: [`PATH=${bin}:${process.env.PATH}`] });
  const found = c.nextId++;
  c.send(sameEnv(found, ['same-env-prog']));
  assert.equal((await c.collect(found)).out.toString(), 'found\n');
});

test('SAME_ENV: parked children woken before the environment changed keep theirs', async () => {
  const c = new Conn({ parked: 8 });
  // Each child reads its environment after a pause, when the server has
  // long moved on to the next environment (and freed nothing it used).
  const ids = [];
  for (let i = 0; i < 6; i++) {
    const pid = await c.parkedPid();
    const id = c.nextId++;
    const env = [`PATH=${process.env.PATH}`, `N=${i}`];
    c.send(i % 2 === 0
      ? P.encodeSpawn(id, request(['sh', '-c', 'sleep 0.05; echo $N'], { env }), pid)
      : sameEnv(id, ['sh', '-c', 'sleep 0.05; echo $N'], pid));
    ids.push([id, i % 2 === 0 ? i : i - 1]);
  }
  for (const [id, n] of ids) assert.equal((await c.collect(id)).out.toString(), `${n}\n`);
});

test('SAME_ENV before any environment, or with environment strings: FATAL, exit 3', async () => {
  const first = new Conn();
  first.send(sameEnv(1, ['true']));
  assert.match((await first.frame((m) => m.type === P.T.FATAL)).message, /SAME_ENV before any environment/);
  assert.equal((await first.exit).code, 3);
  const both = new Conn();
  const frame = P.encodeSpawn(1, request(['true']), 0);
  frame.writeUInt32LE(frame.readUInt32LE(13) | P.FLAG_SAME_ENV, 13);
  both.send(frame);
  assert.match((await both.frame((m) => m.type === P.T.FATAL)).message, /SAME_ENV carries environment/);
  assert.equal((await both.exit).code, 3);
});
