// One spawn server: starts the native binary with a private socketpair on
// its fd 3, speaks the protocol, and hands each frame to the session it
// names, one frame per emulated libuv callback (lib/delivery.js).
import { nodeSpawn } from './node-child-process.js';
import { closeSync, readSync, writeSync } from 'node:fs';
import { Socket } from 'node:net';
import { constants as osConstants } from 'node:os';
import { isMainThread } from 'node:worker_threads';
import {
  Decoder, T, encodeHello, encodeSpawn, joinData, ProtocolError, VERSION, FEED_LEADER, FLAG_HANDOVER, FLAG_SAME_ENV, getU32,
} from './protocol.js';
import { asCallback, closeOverdue } from './delivery.js';
import { debug, now } from './observe.js';
import { deliver } from './session.js';
import { runtime } from './runtime.js';
import {
  addon, startProcess, launchResult, reapProcess, receiveHandover, watchSocket, writeFd, readFd, readPipe,
} from './launch.js';
import { errnoError } from './errors.js';

const HANDSHAKE_TIMEOUT_MS = 5000;
const RETRY_WRITE_MS = 1;
const EXIT_FLUSH_MS = 1000;
const SPAWN_WRITE_MS = 1000;      // a parked pid goes out only with its SPAWN in the kernel
const KILL_WRITE_MS = 50;        // kill() waits this long at most for a server behind
const EXIT_POLL_MAX_MS = 50;      // a launched server's exit is polled for, from 1 ms up to this
const { EAGAIN } = osConstants.errno;
const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** Sleeps this thread `ms` (fractions allowed), without a busy loop. */
export const sleepSync = (ms) => Atomics.wait(sleeper, 0, 0, ms);
const live = new Set();           // servers with a connection, flushed at exit

// A launched server's socket is read into this buffer, shared by all of
// them (onData copies out what it keeps before any listener runs): large
// enough for all a server's socket holds at once (its send buffer, ~208
// KiB by default), so that a burst of frames is one read, and no buffer is
// allocated per read.
const READ_BUFFER_SIZE = 256 * 1024;
let readBuffer = null;

// Frames queued in this tick still leave if the process exits now
// (process.exit() in the same tick, say): the server handles whatever
// reached its socket before it saw us go.
process.once('exit', () => {
  for (const server of live) server.flushAtExit();
});

// Node's handles expose the OS fd; Deno's `fd` is a resource id and Bun's
// handles cannot stop reading: there, frames go through the socket stream
// (the next tick) and pids come with 'spawn' (docs/runtimes.md).
const DIRECT = runtime === 'node';

/** The fd under a stream Node made for a child's stdio, or -1. */
const fdOf = (stream) => {
  if (!DIRECT) return -1;
  const fd = stream?._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : -1;
};

// The server keeps only what it needs from our environment: sanitizer and
// debug switches. Children get their env in each SPAWN, never the server's.
// SPAWND_PARK: our protocol version and the parked children the HELLO
// will ask for, parked from the server's start if it speaks that version
// (native/main.c, park_early).
// (The keys first, then the few values kept: process.env reads each value
// through an interceptor, and this runs inside a process's first spawn.)
const passEnv = (env, parked) => {
  const kept = {};
  for (const k of Object.keys(env)) {
    if ((k.startsWith('SPAWND_') && k !== 'SPAWND_PARK') || k === 'SPAWNPOOL_PATH_CACHE' || k.endsWith('SAN_OPTIONS')) {
      kept[k] = env[k];
    }
  }
  if (parked > 0) kept.SPAWND_PARK = `${VERSION}:${parked}`;
  return kept;
};
const envPairs = (env) => Object.entries(env).map(([k, v]) => `${k}=${v}`);

// What the server's exit status says (docs/protocol.md, "Lifetime").
const EXIT_MEANING = {
  2: 'it speaks another protocol version (rebuild it: npm rebuild spawnpool)',
  3: 'it reported a protocol error',
  100: 'it is not a spawnd (usage error)',
  111: 'a system call failed or memory ran out in it (SPAWND_DEBUG=1 prints which)',
};

/**
 * The frames of one read, in the order libuv would have handed Node the
 * same events had its loop been as busy: each pipe read to its end (data,
 * then EOF) in the order the pipes first had something, and the exits
 * last (libuv finds the pipes readable before the SIGCHLD), each with the
 * stdin END that followed it. Frames of one stream keep their order.
 */
function inNodeOrder(msgs) {
  if (msgs.length < 2) return msgs;
  const groups = new Map();
  const exits = [];
  let exited = null;            // ids whose EXIT came in this read
  for (const msg of msgs) {
    if (msg.type === T.EXIT) {
      exits.push(msg);
      (exited ??= new Set()).add(msg.id);
      continue;
    }
    // A STDIN the server refused after that child's exit: its answer
    // follows the EXIT, as on the wire (the write is lost with the child,
    // not failed while it ran).
    if (exited !== null && msg.type === T.END && msg.fd === 0 && exited.has(msg.id)) {
      exits.push(msg);
      continue;
    }
    const key = msg.type === T.DATA || msg.type === T.END || msg.type === T.HANDED ? msg.id * 4 + msg.fd : msg.id * 4 + 3;
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [msg]);
    else group.push(msg);
  }
  const out = [];
  for (const group of groups.values()) for (const msg of group) out.push(msg);
  for (const msg of exits) out.push(msg);
  return out;
}

export class Server {
  /**
   * Starts the binary now; frames may be sent at once (the server reads them
   * after the handshake). Tells `pool` when it dies (onServerGone) and when
   * a child is done with it (onRelease). In a worker thread the server
   * detaches (forks once; the process we started exits at once and is
   * reaped while the worker lives), so no zombie outlives the worker.
   * `parked`: how many parked children to ask it to keep (0: none, every
   * SPAWN starts its child on receipt and the pid comes back with SPAWNED).
   */
  constructor(binary, pool, parked = 0) {
    this.sessions = new Map();
    this.nextId = 1;
    this.refs = 0;
    this.ready = false;
    this.gone = false;            // no more frames are sent
    this.dead = false;            // the pool has been (or is being) told
    this.pool = pool;
    this.queue = [];
    this.queued = false;
    this.startError = null;
    this.exitStatus = null;
    this.detached = !isMainThread;
    this.batch = [];
    this.decoder = new Decoder((msg) => this.collect(msg));
    this.flushNow = () => this.flush();
    this.lazy = false;            // a check-phase flush is scheduled
    this.flushLazy = () => {
      this.lazy = false;
      if (!this.queued) this.flush();
    };
    this.retryTimer = null;
    this.reaps = true;            // a child's EXIT waits for REAPED (protocol 4)
    this.fd = -1;                 // the socket, written with write() below
    this.proc = null;             // the ChildProcess, when node:child_process started it
    this.knownPid = undefined;
    this.launching = null;        // the launch addon's start, until its outcome is taken
    this.watchExit = null;        // started by the launch addon: waits for its exit
    this.holdForExit = false;     // close() waits for the exit: the wait holds the loop
    this.feed = null;
    this.feedFd = -1;             // parked pids, read with readSync
    this.pids = [];               // announced and not yet taken
    this.leaders = [];            // the same, parked as session leaders (for detached spawns)
    this.announced = false;       // a parked child was ever announced
    this.handoverFd = -1;         // busy streams come through here (launched servers)
    this.sentEnv = null;          // the environment the server has: later SPAWNs with it say SAME_ENV
    this.feedBuf = null;
    this.feedKept = 0;            // bytes of a pid split over two reads, at the buffer's start
    this.exitWatch = null;        // the launched server's pidfd, read by the addon (watchProcess)
    this.exitedEarly = false;     // its process exited before its connection closed
    this.parks = parked > 0;      // false: pids come with SPAWNED (pid-less SPAWN)
    this.stalled = false;         // a wait for its pid timed out; none announced since

    const args = this.detached ? ['--detach', String(process.pid)] : [String(process.pid)];
    // A launched server's feed is always read: it may park from its start.
    const launched = addon !== null && !this.detached;
    const env = passEnv(process.env, launched ? parked : 0);
    if (launched ? !this.launch(binary, args, env) : !this.fork(binary, args, env)) {
      // Not started: the start error follows and tells the pool.
      this.gone = true;
      return;
    }
    this.socket.on('data', (chunk) => this.onData(chunk));
    this.socket.on('error', (err) => this.die(err));
    this.socket.on('close', () => {
      this.die();
      this.watchExit?.();
    });
    if (this.feedFd === -1) this.parks = false;
    if (this.proc !== null && !this.detached) this.proc.unref();
    this.socket.unref();
    this.feed?.unref();
    // Judged after a poll phase: timers run first in an iteration, so after
    // a loop blocked that long (a burst of spawns taking parked pids, a
    // long synchronous task) the hello may be waiting, unread, and the
    // children of those pids running.
    this.handshakeTimer = setTimeout(() => setImmediate(() => {
      if (this.ready || this.dead) return;
      this.die(new Error(`no handshake within ${HANDSHAKE_TIMEOUT_MS} ms`));
      if (this.proc !== null) this.proc.kill('SIGKILL');
      else if (this.exitStatus === null && this.pid !== undefined) process.kill(this.pid, 'SIGKILL');
    }).unref(), HANDSHAKE_TIMEOUT_MS).unref();
    live.add(this);
    this.send(encodeHello(this.parks ? parked : 0));
    this.flush();
  }

  /**
   * Starts the server with the launch addon (posix_spawn: Node is not
   * forked). Its exit is waited for once its socket closes: the server
   * holds it to its end. False if it could not be started.
   */
  launch(binary, args, env) {
    this.proc = null;
    let started;
    try {
      started = startProcess(binary, [binary, ...args], envPairs(env));
    } catch (err) {
      if (err.syscall === undefined) throw err;
      this.exited = Promise.resolve();
      // As node:child_process reports it: on the next tick.
      process.nextTick(() => {
        this.startError = err;
        this.die(err);
      });
      return false;
    }
    this.launching = started.launch;
    this.fd = started.fd;
    this.feedFd = started.feedFd;
    this.handoverFd = started.handoverFd;
    readBuffer ??= Buffer.allocUnsafeSlow(READ_BUFFER_SIZE);
    this.socket = watchSocket(started.fd, readBuffer, (chunk) => this.onData(chunk, true)) ?? new Socket({
      fd: started.fd,
      readable: true,
      writable: true,
      onread: { buffer: readBuffer, callback: (n, buf) => this.onData(buf.subarray(0, n), true) },
    });
    let resolveExit;
    this.exited = new Promise((resolve) => (resolveExit = resolve));
    this.binary = binary;
    this.launchFailed = (err) => {
      this.startError = err;
      resolveExit();
    };
    let delay = 0;
    let timer = null;
    const poll = () => {
      timer = null;
      const pid = this.pid;       // undefined while posix_spawn runs, or if it failed
      if (this.startError !== null) {
        this.watchExit = null;
        return;                   // settleLaunch() resolved `exited`
      }
      const status = pid === undefined ? null : reapProcess(pid);
      if (status === null) {
        delay = Math.min(delay * 2 || 1, EXIT_POLL_MAX_MS);
        timer = setTimeout(poll, delay);
        if (!this.holdForExit) timer.unref();
        return;
      }
      this.exitStatus = status.signal ?? status.code;
      this.watchExit = null;
      resolveExit();
    };
    this.watchExit = () => {
      if (timer === null) poll();
    };
    this.holdExit = () => {
      this.holdForExit = true;
      timer?.ref();
    };
    return true;
  }

  /**
   * The server's pid: for a launched one, known once the addon's
   * posix_spawn has returned (its HELLO says it too); undefined until then.
   */
  get pid() {
    if (this.launching !== null) this.settleLaunch();
    return this.knownPid;
  }

  set pid(pid) {
    this.knownPid = pid;
  }

  /** Takes the outcome of a launch once there is one: the pid, or the start error. */
  settleLaunch() {
    const result = launchResult(this.launching, this.binary);
    if (result === null) return;
    this.launching = null;
    if (result.error) this.launchFailed(result.error);
    else this.knownPid ??= result.pid;
  }

  /** Starts the server with node:child_process. False if it could not be. */
  fork(binary, args, env) {
    // Inherited stdio is what 'inherit' and stdio 0-2 give the children.
    this.proc = nodeSpawn(binary, args, {
      stdio: ['inherit', 'inherit', 'inherit', 'pipe', 'pipe'],
      env,
    });
    this.pid = this.detached ? undefined : this.proc.pid;
    this.exited = new Promise((resolve) => {
      this.proc.once('exit', (code, signal) => {
        // A detached server's process here is the one that detached it.
        if (!this.detached) {
          this.exitStatus = signal ?? code;
          this.processExited();
        }
        resolve();
      });
      // ENOENT/EACCES/EMFILE/EAGAIN: Node reports them asynchronously.
      this.proc.once('error', (err) => {
        this.startError = err;
        resolve();
        this.die(err);
      });
    });
    this.socket = this.proc.stdio?.[3] ?? null;
    if (this.proc.pid === undefined || this.socket === null) return false;
    this.fd = fdOf(this.socket);
    const feed = this.proc.stdio[4] ?? null;
    this.feed = feed;
    // The feed is only ever read synchronously, by takePid(): libuv must
    // not read it (net.Socket starts reading at once, and pause() does not
    // stop a plain socket's handle). Nothing was read yet: no poll phase
    // has run since the spawn.
    // (A runtime whose handles cannot stop reading, Bun's, gets no parked
    // children: its pids come with 'spawn'.)
    if (typeof feed?._handle?.readStop === 'function') {
      feed._handle.reading = false;
      feed._handle.readStop();
      this.feedFd = fdOf(feed);
    }
    feed?.on('error', () => {});
    return true;
  }

  /** The feed is done with: closed (never read by libuv, it sees no EOF). */
  closeFeed() {
    if (this.feed !== null) {
      if (!this.feed.destroyed) this.feed.destroy();
    } else if (this.feedFd !== -1) {
      closeSync(this.feedFd);
    }
    this.feedFd = -1;
  }

  get inFlight() {
    return this.sessions.size;
  }

  /**
   * Queues a frame that may wait for the loop's check phase (a REAP): the
   * REAPs of one read, and whatever SPAWN leaves first, share one write.
   */
  sendLazy(frame) {
    if (this.gone) return;
    this.queue.push(frame);
    if (!this.queued && !this.lazy) {
      this.lazy = true;
      setImmediate(this.flushLazy).unref();
    }
  }

  /** Queues a frame; all frames of one tick leave in one write. */
  send(frame) {
    if (this.gone) return;
    this.queue.push(frame);
    if (!this.queued) {
      this.queued = true;
      process.nextTick(this.flushNow);
    }
  }

  /**
   * Queues a frame and writes the queue now, as a syscall of Node's would
   * act before it returns (a kill): a process that dies right after (a
   * signal handler re-raising its signal) must not take it along.
   */
  sendNow(frame) {
    this.send(frame);
    if (!this.gone) this.flushWithin(KILL_WRITE_MS);
  }

  /**
   * Writes the queue now, synchronously: what the socket takes is in the
   * kernel when this returns. What it does not take (the server is behind)
   * is retried shortly; frames keep their order.
   */
  flush() {
    this.queued = false;
    if (this.gone || this.queue.length === 0 || this.retryTimer !== null) return;
    const data = this.queue.length === 1 ? this.queue[0] : Buffer.concat(this.queue);
    this.queue = [];
    if (this.fd === -1) {
      this.socket.write(data);
      return;
    }
    const written = this.write(data);
    if (written < 0) return;
    if (written === data.length) return;
    this.queue.unshift(data.subarray(written));
    // Behind on reading our frames (a child's stdin in bulk, say): wait
    // until the socket takes more, or where that cannot be waited for,
    // try again shortly.
    const retry = () => {
      if (this.retryTimer !== token) return;   // flushWithin wrote it meanwhile
      this.retryTimer = null;
      this.flush();
    };
    const token = this.socket.waitWritable?.(retry) ? retry : setTimeout(retry, RETRY_WRITE_MS);
    this.retryTimer = token;
  }

  /**
   * One write(2) of `data` on the socket: the bytes taken (0 when it is
   * full), or -1 once the server is declared dead of the error.
   */
  write(data) {
    // A net.Socket (servers started without the addon) closes its fd as it
    // is destroyed, before its 'close' tells us: from then on the number
    // may be another file's (a new server's socket), so it is never
    // written to again.
    if (this.socket.destroyed) {
      this.die();
      return -1;
    }
    if (writeFd !== null) {
      const n = writeFd(this.fd, data);
      if (n >= 0 || n === -EAGAIN) return Math.max(n, 0);
      this.die(errnoError(-n, 'write'));
      return -1;
    }
    try {
      return writeSync(this.fd, data);
    } catch (err) {
      if (err.code === 'EAGAIN') return 0;
      this.die(err);
      return -1;
    }
  }

  /** At process exit (and close): what is queued goes now, waiting briefly if it must. */
  flushAtExit() {
    this.flushWithin(EXIT_FLUSH_MS);
  }

  /**
   * Writes the whole queue, waiting for the server to take it (sleeping
   * between tries) for at most `ms`. False if some of it is still queued.
   */
  flushWithin(ms) {
    const until = now() + ms;
    for (;;) {
      clearTimeout(this.retryTimer);
      this.retryTimer = null;
      this.flush();
      if (this.gone || this.queue.length === 0) return true;
      if (now() >= until) return false;
      sleepSync(0.05);
    }
  }

  /**
   * A parked child's pid, taken for one spawn (a session leader's for a
   * detached one), or 0 when none is announced right now (the server parks
   * more as pids are taken).
   */
  takePid(detached = false) {
    return this.hasPid(detached) ? (detached ? this.leaders : this.pids).pop() : 0;
  }

  /** Whether takePid() would give a pid now, without waiting (reads the feed if need be). */
  hasPid(detached = false) {
    if (this.gone) return false;
    const pids = detached ? this.leaders : this.pids;
    if (pids.length === 0 && this.parks) this.readFeed();
    return pids.length > 0;
  }

  readFeed() {
    // The same for the feed: Node resumes a dead server's stdio streams,
    // which read the feed to its end and close it.
    if (this.feed?.destroyed === true) {
      this.parks = false;
      return;
    }
    this.feedBuf ??= Buffer.allocUnsafe(4096);
    let n;
    if (readFd !== null && this.feedFd >= 0) {
      // Often empty (the pack strategy asks each server in turn): a thrown
      // EAGAIN would cost more than the read.
      n = readFd(this.feedFd, this.feedBuf, this.feedKept);
      if (n < 0) {
        if (n !== -EAGAIN) this.parks = false;
        return;
      }
    } else {
      try {
        n = readSync(this.feedFd, this.feedBuf, this.feedKept, this.feedBuf.length - this.feedKept, null);
      } catch (err) {
        if (err.code !== 'EAGAIN') this.parks = false;
        return;
      }
    }
    if (n === 0) {
      this.parks = false;         // the server is gone; its socket will say so
      return;
    }
    // A stream: a write the server could only partly make may split a pid.
    const end = this.feedKept + n;
    let off = 0;
    for (; off + 4 <= end; off += 4) {
      const pid = getU32(this.feedBuf, off);
      if (pid === 0) this.parks = false;      // the server cannot park here
      else if (pid >= FEED_LEADER) this.leaders.push(pid - FEED_LEADER);
      else this.pids.push(pid);
    }
    this.feedKept = end - off;
    if (this.feedKept > 0) this.feedBuf.copy(this.feedBuf, 0, off, end);
    this.announced ||= this.pids.length + this.leaders.length > 0;
    if (this.pids.length + this.leaders.length > 0) this.stalled = false;
  }

  /**
   * Takes `session` on: gives it an id and sends its SPAWN, for the parked
   * child `pid` (the frame is in the kernel when this returns), or for one
   * the server starts on receipt (pid 0: the pid comes with SPAWNED).
   * False if the server turned out to be gone.
   */
  submit(session, pid = 0) {
    if (this.gone) return false;
    // After 2^32-1 spawns ids wrap: skip those still live.
    let id;
    do {
      id = this.nextId;
      this.nextId = id === 0xffffffff ? 1 : id + 1;
    } while (this.sessions.has(id));
    // The environment goes once, then only when it changed (options.js
    // hands out the same frozen array while it stays the same).
    const env = session.request.env;
    const flags = (this.handoverFd === -1 ? 0 : FLAG_HANDOVER) | (env === this.sentEnv ? FLAG_SAME_ENV : 0);
    this.queue.push(encodeSpawn(id, session.request, pid, flags));
    this.sentEnv = Object.isFrozen(env) ? env : null;
    // The caller hands out the pid: its SPAWN must be in the kernel (so
    // that the program runs even if this process exits next), waiting for
    // a server that is behind if need be.
    if (pid !== 0 && this.fd !== -1) this.flushWithin(SPAWN_WRITE_MS);
    else this.flush();
    if (this.gone) return false;
    this.sessions.set(id, session);
    session.attach(this, id, pid);
    return true;
  }

  /** The session is done on the wire: its id may be forgotten. */
  release(id) {
    if (this.sessions.delete(id)) this.pool.onRelease(this);
  }

  /** A session wants the event loop kept alive (or not any more). */
  ref() {
    if (this.refs++ === 0 && !this.gone) this.socket.ref();
  }

  unref() {
    if (--this.refs === 0 && !this.gone) this.socket.unref();
  }

  /** A read from the socket; `borrowed`: the chunk is overwritten after this returns. */
  onData(chunk, borrowed = false) {
    try {
      this.decoder.push(chunk, borrowed);
    } catch (err) {
      if (!(err instanceof ProtocolError)) {
        // The frames so far wait for the next read: not as views of a buffer it overwrites.
        if (borrowed) this.batch = joinData(this.batch, true);
        throw err;
      }
      for (const msg of this.batch) if (msg.handle !== undefined) closeSync(msg.handle);
      this.batch = [];
      this.die(err);
      return;
    }
    // Taken first: a listener that throws leaves the rest of this batch to
    // a later callback, and the next read must not deliver it again. Closes
    // asked for in the check phase go first (lib/delivery.js).
    const msgs = joinData(inNodeOrder(this.batch), borrowed);
    this.batch = [];
    try {
      closeOverdue();
    } catch (err) {
      this.postpone(msgs, 0);
      throw err;
    }
    this.deliver(msgs);
  }

  /** Frames decoded from one read, collected; connection frames at once. */
  collect(msg) {
    if (msg.id === 0) this.connectionFrame(msg);
    else if (msg.type !== T.HANDED) this.batch.push(msg);
    else if (this.takeHandover(msg)) this.batch.push(msg);
  }

  /**
   * HANDED: the stream's fd waits on the handover socket, sent before the
   * frame. Taken now, in frame order, whoever gets it later (`msg.handle`,
   * or `msg.error` when this process had no room for it); closed at once
   * if nobody will. False when there is nobody.
   */
  takeHandover(msg) {
    const got = this.handoverFd === -1 ? -9 : receiveHandover(this.handoverFd);
    if (typeof got === 'number' || got.id !== msg.id || got.fd !== msg.fd) {
      if (typeof got !== 'number' && got.handle >= 0) closeSync(got.handle);
      throw new ProtocolError(`HANDED ${msg.id} fd ${msg.fd} without its handover (${typeof got === 'number' ? `errno ${-got}` : `got ${got.id} fd ${got.fd}`})`);
    }
    if (got.handle < 0) {
      msg.error = -got.handle;
      debug('handover of %d fd %d: the fd could not be received (errno %d): the stream ends with that error', msg.id, msg.fd, msg.error);
      return this.sessions.has(msg.id);
    }
    if (this.sessions.has(msg.id)) {
      msg.handle = got.handle;
      this.pool.counters.handedOver++;
      return true;
    }
    closeSync(got.handle);
    return false;
  }

  /**
   * Delivers each frame as its own callback. A listener that throws
   * surfaces as it would under Node; the frames after it are delivered in
   * a later callback (postpone).
   */
  deliver(msgs) {
    for (let i = 0; i < msgs.length; i++) {
      const session = this.sessions.get(msgs[i].id);
      if (session === undefined) {
        if (msgs[i].handle !== undefined) closeSync(msgs[i].handle);
        continue;
      }
      if (session.deferring()) {
        session.defer(msgs[i]);
        continue;
      }
      try {
        asCallback(deliver, session, msgs[i]);
      } catch (err) {
        this.postpone(msgs, i + 1);
        throw err;
      }
    }
  }

  /**
   * Frames from `from` on wait with their sessions (Session.defer): the
   * next read's frames for a session queue behind them, and a server that
   * dies meanwhile does not lose them (Session.lost delivers them first).
   */
  postpone(msgs, from) {
    for (let i = from; i < msgs.length; i++) {
      const session = this.sessions.get(msgs[i].id);
      if (session !== undefined) session.defer(msgs[i]);
      else if (msgs[i].handle !== undefined) closeSync(msgs[i].handle);
    }
  }

  connectionFrame(msg) {
    if (msg.type === T.S_HELLO) {
      if (msg.version !== VERSION) throw new ProtocolError(`server speaks protocol ${msg.version}, not ${VERSION}`);
      this.ready = true;
      this.pid = msg.pid;
      if (!msg.parked) this.parks = false;
      clearTimeout(this.handshakeTimer);
      if (this.proc === null && !this.detached) this.watchProcess();
      this.pool.onServerReady(this);
    } else if (msg.type === T.FATAL) {
      throw new ProtocolError(`server reported: ${msg.message}`);
    }
  }

  /** Why the server could not serve, in words, for warnings and logs. */
  describeFailure(cause) {
    if (this.startError) return `it could not be started: ${this.startError.message}`;
    const meaning = EXIT_MEANING[this.exitStatus];
    if (meaning) return `${meaning} (exit status ${this.exitStatus})`;
    // A write that found the socket closed says less than the exit status.
    const closed = cause?.code === 'EPIPE' || cause?.code === 'ECONNRESET';
    if (cause?.message && !(closed && this.exitStatus !== null)) return cause.message;
    return this.exitStatus === null ? 'its connection closed' : `it exited (${this.exitStatus})`;
  }

  /**
   * A launched server's exit, seen through a pidfd as it happens. Its
   * socket and feed close only once its parked children, which share its
   * fd table, have exited too (they die with it, a few ms later on a busy
   * machine): meanwhile a spawn would take the pid of a dead parked child
   * and write a SPAWN that nobody reads, and the child end as killed
   * without its program ever running. (A server started by
   * node:child_process has its 'exit' for that.)
   */
  watchProcess() {
    if (typeof addon?.pidfd !== 'function' || this.knownPid === undefined) return;
    const fd = addon.pidfd(this.knownPid);
    if (fd < 0) return;
    // Readable at the exit, when the addon's recv() on it fails ENOTSOCK;
    // any other end is the watch's failure, not the server's exit.
    const reader = readPipe(fd, () => {}, (errno) => {
      reader.destroy();
      this.exitWatch = null;
      if (errno === osConstants.errno.ENOTSOCK) this.processExited();
    });
    if (reader === null) {
      closeSync(fd);
      return;
    }
    reader.unref();
    this.exitWatch = reader;
  }

  /**
   * The server process exited: no more spawns go to it. Its socket is
   * still read to its end (what it sent before it died counts), and its
   * close ends the server as always (die()).
   */
  processExited() {
    if (this.gone) return;
    debug('server %s exited; its connection has not closed yet', this.knownPid);
    this.exitedEarly = true;
    this.gone = true;
    this.stopParking();
  }

  /** No pid of this server is handed out any more: its feed is not read, those read are dropped. */
  stopParking() {
    this.parks = false;
    this.pids = [];
    this.leaders = [];
  }

  /** The server is gone (exit, crash or protocol error): tell the pool once. */
  die(cause) {
    if (this.dead) return;
    if (this.launching !== null) this.settleLaunch();
    // A launch that failed on the addon's thread: what its socket said (the
    // reset of an unread HELLO) is only the echo of that.
    if (this.startError !== null) cause = this.startError;
    this.dead = true;
    this.gone = true;
    this.exitWatch?.destroy();
    this.exitWatch = null;
    this.stopParking();
    live.delete(this);
    clearTimeout(this.handshakeTimer);
    clearTimeout(this.retryTimer);
    this.queue = [];
    if (this.socket && !this.socket.destroyed) this.socket.destroy();
    // Never read by libuv, the feed never sees its EOF: closed here.
    this.closeFeed();
    // Open until now: a HANDED may follow close() (the server drains).
    if (this.handoverFd !== -1) closeSync(this.handoverFd);
    this.handoverFd = -1;
    const sessions = [...this.sessions.values()];
    this.sessions.clear();
    let reported = false;
    const report = () => {
      if (reported) return;
      reported = true;
      clearTimeout(timer);
      this.pool.onServerGone(this, cause, sessions);
    };
    // The exit status, when it comes, says more than the socket's close;
    // the timer (ref'd while children depend on the report) bounds the wait.
    const timer = setTimeout(report, 500);
    if (sessions.length === 0) timer.unref();
    if (this.detached || this.exitStatus !== null || this.startError) report();
    else this.exited.then(report);
  }

  /** Closes the connection; the server exits at EOF. Resolves at its exit. */
  close() {
    this.flushAtExit();
    live.delete(this);
    // One whose process exited before its connection closed (processExited)
    // is waited for as a live one: its connection's close, and its exit.
    if (this.gone && (this.dead || !this.exitedEarly)) return this.exited;
    this.stopParking();
    this.closeFeed();
    const closed = new Promise((resolve) => this.socket.once('close', resolve));
    this.socket.ref();
    this.socket.end();
    if (this.detached) return closed;
    // Whoever awaits close() sees the exit and the connection's end (and
    // so the pool's report of it): hold the loop until then.
    if (this.proc !== null) this.proc.ref();
    else this.holdExit();
    return Promise.all([this.exited, closed]).then(() => {});
  }
}
