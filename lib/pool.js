// A pool of spawn servers: started together on first use, least-busy
// dispatch, replaced when one dies, never keeping an idle process alive.
import { accessSync, existsSync, constants as fsConstants } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Server, sleepSync } from './server.js';
import { ProtocolError, encodeSpawn, FLAG_DETACHED } from './protocol.js';
import { NodeLink } from './node-link.js';
import { SPAWNING } from './session.js';
import { poolError, invalidArgType, invalidArgValue } from './errors.js';
import {
  validatePoolOptions, resolveSizing, availableCpus, DEFAULT_IDLE_TIMEOUT_MS,
} from './config.js';
import { debug, channels, unpublished, fallback, now } from './observe.js';
import { inheritedState } from './inherited.js';
import { childProcessDenied, envVar } from './runtime.js';

export { availableCpus };

// The server `npm install` built or installed; failing that (scripts
// skipped: --ignore-scripts, pnpm, Bun), the static one the tarball carries
// for this platform, which the handshake verifies before any child is
// trusted to it.
const builtBinary = fileURLToPath(new URL('../native/build/spawnd', import.meta.url));
// ($SPAWNPOOL_PLATFORM stands in for another OS in the install tests.)
const platform = envVar('SPAWNPOOL_PLATFORM') ?? process.platform;
const prebuiltBinary = fileURLToPath(new URL(`../native/build/prebuilt/${platform}-${process.arch}/spawnd`, import.meta.url));
// (Deno without read access throws from existsSync: the built path it is.)
const exists = (path) => { try { return existsSync(path); } catch { return true; } };
const defaultBinary = () => (exists(builtBinary) || !exists(prebuiltBinary) ? builtBinary : prebuiltBinary);
const LATENCY_SAMPLES = 1024;
const MAX_START_FAILURES = 3;
const RECHECK_MS = 30_000;          // an unavailable pool tries again after this
const BACKOFF_MIN_MS = 50;
const BACKOFF_MAX_MS = 5_000;
// Parked children each server keeps (pids handed out by spawn() at once):
// 32 by default, enough for a few dozen spawns in flight per server without
// waiting for pids; fewer in a pool of many servers, so that one pool parks
// at most about 256 tasks (they count against pids.max, TasksMax and
// RLIMIT_NPROC), and never fewer than 8. Then how long spawn() waits for
// one when a burst has taken them all.
export const DEFAULT_PARKED = 32;
export const PARKED_PER_POOL = 256;
export const defaultParked = (servers) => Math.max(8, Math.min(DEFAULT_PARKED, Math.floor(PARKED_PER_POOL / servers)));
const PARK_WAIT_MS = 1_000;
const PARK_POLL_MS = 0.05;
// A dynamic pool (min < max) starts another server when every server has
// this many children in flight: one server spawns thousands a second, so
// only sustained concurrency is worth a process.
export const GROW_AT = 4;
// The 'pack' strategy (opt-in) gives a fixed pool's spawns to its first
// server that has a parked child ready, while that server has fewer than
// this many children in flight; the others take what it cannot. A server
// with more spawns per loop turn spends less per spawn (one epoll_wait,
// one read of the client's socket, one write of its frames for several),
// and so does the main thread reading fewer, fuller sockets: side by side
// on the HTTP echo benchmark, 0.92-0.94x of spawnpool's own CPU per request
// against spreading them evenly (docs/benchmarks.md, "Fifteenth pass").
// A server that cannot keep up runs out of parked children, and the next
// one takes the overflow; the cap keeps one server from holding every
// long-running child's fds. It is a preference: a spawn takes a pid from a
// server at the cap rather than wait for one from a server below it.
// Not the default: in two full benchmark runs on a heavily loaded machine
// the echo requests' p99 was 108-267 ms against 26-128 for Go and Rust
// (37 under least-busy in an earlier run), one server's stalls holding up
// every request in flight (docs/benchmarks.md, "Fifteenth pass").
export const PACK_MAX = 64;

/** Stops a server's idle timer, if it runs: it is not retired for idleness. */
function cancelIdle(server) {
  if (server.idleTimer !== undefined) clearTimeout(server.idleTimer);
  server.idleTimer = undefined;
}

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

export class Pool {
  /**
   * @param {object} [options]
   * @param {number} [options.size] servers, fixed (min = max = size); default: see config.js defaultSize()
   * @param {number} [options.min] servers kept running when idle
   * @param {number} [options.max] servers at most, under load
   * @param {number} [options.idleTimeout] ms a server above `min` may stay idle before it exits
   * @param {'pack'|'least-busy'|'round-robin'|'random'} [options.strategy]
   * @param {string} [options.server] path of the spawnd binary
   * @param {number} [options.window] stdout/stderr credit per stream, bytes
   */
  constructor(options = {}) {
    validatePoolOptions(options);
    const { min, max, reason } = resolveSizing(options);
    this.min = min;
    this.max = max;
    this.sizeReason = reason;
    this.target = Math.max(1, min);    // servers wanted now: min..max
    this.idleTimeout = options.idleTimeout ?? DEFAULT_IDLE_TIMEOUT_MS;
    this.strategy = options.strategy ?? 'least-busy';
    this.binary = options.server ?? envVar('SPAWNPOOL_SERVER') ?? defaultBinary();
    this.window = options.window ?? 256 * 1024;
    this.parked = options.parked ?? defaultParked(max);
    this.servers = [];
    this.closed = false;
    this.started = false;
    this.startedAt = 0;
    this.inherited = null;        // the umask, credentials and nice value the servers took (lib/inherited.js)
    this.draining = [];           // servers renewed (renew()) with children still running
    this.next = 0;
    this.startFailures = 0;       // servers in a row that died before their handshake
    this.unavailable = null;      // why spawns go to node:child_process, or null
    this.retryAt = 0;             // when to try starting servers again
    this.warned = new Set();
    this.counters = {
      spawned: 0, spawnErrors: 0, fallbacks: 0, restarts: 0, lost: 0, retried: 0, parkedWaits: 0, parkedTimeouts: 0, handedOver: 0,
    };
    this.fallbacksByReason = {};
    this.latencies = new Float64Array(LATENCY_SAMPLES);
    this.latencyCount = 0;
    this.closing = null;
    this.onClosed = null;
    this.exiting = [];
    this.waiters = new Set();     // ready() callbacks, told of every server change
  }

  /** Whether the pool changes size with load (min < max). */
  get dynamic() {
    return this.min < this.max;
  }

  /** Servers the pool keeps now (fixed pools: always `max`). */
  get size() {
    return this.dynamic ? this.target : this.max;
  }

  /**
   * The server for the next spawn (per the strategy), or null when this
   * spawn must go to node:child_process. Starts servers as needed; never
   * forks the Node process to find out whether the binary works (the
   * handshake says so).
   */
  acquire(pick = true, detached = false) {
    if (this.closed) throw poolError('ERR_SPAWNPOOL_CLOSED', 'spawnpool: this pool is closed');
    if (this.unavailable !== null) {
      if (now() < this.retryAt) return null;
      debug('trying the native server again (%s)', this.unavailable);
      this.unavailable = null;
      this.startFailures = 0;
    }
    if (this.dynamic) this.maybeGrow();
    if (this.servers.length < this.size && now() >= this.retryAt) this.start();
    if (this.servers.length === 0) return null;
    return pick ? this.pick(detached) : this.servers[0];
  }

  /** Whether a spawn now can be served (starts servers as needed), without choosing one. */
  serving() {
    return this.acquire(false) !== null;
  }

  /** Why acquire() just returned null, for stats().fallbacksByReason. */
  refusal() {
    if (this.unavailable !== null) return 'server-unavailable';
    return this.servers.some((s) => !s.gone) ? 'no-parked-child' : 'server-start-failed';
  }

  maybeGrow() {
    if (this.target < Math.max(1, this.min)) this.target = Math.max(1, this.min);
    if (this.target >= this.max || this.servers.length < this.target) return;
    for (const s of this.servers) if (s.inFlight < GROW_AT) return;
    this.target++;
    debug('growing to %d servers: every server has %d or more children in flight', this.target, GROW_AT);
  }

  start() {
    if (!this.started) {
      this.started = true;
      this.startedAt = now();
      this.inherited = inheritedState();
      debug('pool start: %d servers (min %d, max %d): %s', this.size, this.min, this.max, this.sizeReason);
      if (channels.poolStart.hasSubscribers) {
        channels.poolStart.publish({ pool: this, size: this.size, min: this.min, max: this.max, reason: this.sizeReason });
      }
    }
    if (childProcessDenied()) {
      // No warning: spawns are refused (by Node's own spawn), not served elsewhere.
      this.setUnavailable('Node\'s permission model denies child processes (run with --allow-child-process)');
      return;
    }
    if (platform !== 'linux' && this.binary === builtBinary) {
      this.markUnavailable(`the native spawn server runs on Linux only (this is ${platform})`);
      return;
    }
    try {
      accessSync(this.binary, fsConstants.X_OK);
    } catch (err) {
      this.markUnavailable(err.code === 'ENOENT'
        ? `native server not found at ${this.binary} (build it: npm rebuild spawnpool)`
        : `native server at ${this.binary} cannot be run (${err.code})`, err);
      return;
    }
    while (this.servers.length < this.size) {
      const server = unpublished(() => this.startServer());
      if (server.gone) {
        // EMFILE, EAGAIN...: this call falls back; try again after a pause.
        debug('server could not be started: %s', server.startError?.message ?? 'unknown error');
        this.backoff();
        return;
      }
      debug('server %s starting (%d of %d)', server.pid ?? '(pid to come)', this.servers.length + 1, this.size);
      this.servers.push(server);
    }
  }

  startServer() {
    return new Server(this.binary, this, this.parked);
  }

  backoff() {
    const ms = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** Math.min(this.startFailures, 10));
    this.retryAt = now() + ms;
  }

  /** The pool cannot serve, for `reason`; it looks again after RECHECK_MS. */
  setUnavailable(reason) {
    this.unavailable = reason;
    this.retryAt = now() + RECHECK_MS;
    debug('unavailable: %s', reason);
    this.notify();
  }

  /** setUnavailable(), and one process warning per reason: calls go to node:child_process. */
  markUnavailable(reason, cause) {
    this.setUnavailable(reason);
    if (this.warned.has(reason)) return;
    this.warned.add(reason);
    process.emitWarning(`spawnpool: ${reason}; spawning with node:child_process instead`,
      { code: 'SPAWNPOOL_UNAVAILABLE', detail: cause?.message });
  }

  /**
   * Hands a new session to a server, synchronously: returns the pid of the
   * parked child that runs it; 0 when only servers that cannot park are
   * left (the pid comes with 'spawn'); -1 when node:child_process must
   * serve it (no server, or none announced a parked child in time).
   */
  submit(session) {
    const detached = (session.request.flags & FLAG_DETACHED) !== 0;
    let server = this.acquire(true, detached);
    // A server found gone as the SPAWN is written: the next one.
    for (let attempt = 0; server !== null && attempt <= this.max; attempt++) {
      let pid = server.takePid(detached);
      if (pid === 0) ({ server, pid } = this.waitForPid(server, detached));
      if (server === null) break;
      if (this.assign(server, session, pid)) return pid;
      server = this.servers.find((s) => !s.gone) ?? null;
    }
    return -1;
  }

  /**
   * The chosen server has no parked child announced (a burst took them
   * all, or it is still starting): its next one is waited for, so that
   * the strategy's choice holds; another server's only if the chosen one
   * cannot park. Under 'pack' (a fixed pool) the first pid any server
   * announces is taken, from a server below PACK_MAX if one has it.
   * Polled for at most PARK_WAIT_MS. The servers park new children as
   * SPAWNs take them, in their own processes; this thread only reads
   * their feeds.
   */
  waitForPid(chosen, detached) {
    const deadline = now() + PARK_WAIT_MS;
    const packing = this.strategy === 'pack' && !this.dynamic;
    // (No JS runs while this waits: the loads stay as they are.)
    let candidates = packing
      ? [...this.servers.filter((s) => s.inFlight < PACK_MAX), ...this.servers.filter((s) => s.inFlight >= PACK_MAX)]
      : [chosen];
    let waited = false;
    for (;;) {
      let parking = false;
      for (const s of candidates) {
        if (s.gone || !s.parks) continue;
        const pid = s.takePid(detached);
        if (pid !== 0) {
          s.stalled = false;
          return { server: s, pid };
        }
        // One that let a wait time out is not waited for again until it
        // announces a pid: its spawns are pid-less meanwhile.
        if (!s.stalled) parking = true;
      }
      if (!parking && candidates.length < this.servers.length) {
        candidates = this.servers;     // the chosen one cannot park: any other
        continue;
      }
      // No server parks (Bun, Deno, `parked: 0`): a pid-less SPAWN to the
      // server chosen, if it is still there.
      if (!parking) return { server: chosen.gone ? (this.servers.find((s) => !s.gone) ?? null) : chosen, pid: 0 };
      if (!waited) {
        waited = true;
        this.counters.parkedWaits++;
      }
      if (now() >= deadline) {
        this.counters.parkedTimeouts++;
        debug('no parked child announced within %d ms: this spawn goes to node:child_process', PARK_WAIT_MS);
        // A server that never announced one (hung at start?) is not waited
        // for again: its spawns are pid-less from now on. Only the one
        // chosen, or those waited for in its place: a server started
        // during this wait (a replacement) had no second to announce.
        // One that did announce before but has no child parked now (its
        // clone() fails: a process limit, pids.max; or it is stopped) is
        // not waited for until it announces another: the spawns after this
        // one go to it pid-less, without a wait (they blocked the loop a
        // second each), and fail as Node's would (EAGAIN) if it cannot
        // spawn at all.
        for (const s of packing ? [chosen] : candidates) {
          if (!s.announced) s.parks = false;
          else s.stalled = true;
        }
        return { server: null, pid: 0 };
      }
      sleepSync(PARK_POLL_MS);
    }
  }

  /** Sends the session's SPAWN to `server`; false if the server turned out gone. */
  assign(server, session, pid = 0) {
    cancelIdle(server);
    return server.submit(session, pid);
  }

  onServerReady(server) {
    this.startFailures = 0;
    debug('server %s ready', server.pid);
    if (channels.serverStart.hasSubscribers) channels.serverStart.publish({ pool: this, pid: server.pid ?? null });
    this.idle(server);
    this.notify();
  }

  /** A server finished with a child: a closing pool may now be idle. */
  onRelease(server) {
    if (server !== undefined && server.inFlight === 0 && this.draining.includes(server)) {
      this.draining.splice(this.draining.indexOf(server), 1);
      this.closeServer(server);
    }
    if (this.closing !== null) this.closeIdle();
    else if (server !== undefined) this.idle(server);
  }

  /**
   * A server with no child left, in a pool above `min`: it exits after
   * `idleTimeout` ms unless a spawn comes to it first (assign()).
   */
  idle(server) {
    if (!this.dynamic || server.inFlight > 0 || server.idleTimer !== undefined) return;
    if (this.servers.length <= this.min || this.closing !== null) return;
    server.idleTimer = setTimeout(() => {
      server.idleTimer = undefined;
      this.retire(server);
    }, this.idleTimeout);
    server.idleTimer.unref();
  }

  retire(server) {
    const i = this.servers.indexOf(server);
    if (i === -1 || server.inFlight > 0 || this.servers.length <= this.min || this.closing !== null) return;
    this.servers.splice(i, 1);
    this.target = Math.max(Math.max(1, this.min), this.servers.length);
    server.retired = true;
    debug('server %s idle for %d ms: retiring it (%d servers left)', server.pid, this.idleTimeout, this.servers.length);
    this.closeServer(server);
  }

  /** Closes a server out of service; its exit is awaited by close() until it comes. */
  closeServer(server) {
    const exited = server.close();
    this.exiting.push(exited);
    exited.then(() => {
      const k = this.exiting.indexOf(exited);
      if (k !== -1) this.exiting.splice(k, 1);
    });
  }

  /**
   * The process's umask, credentials or nice value changed since the servers started
   * (lib/inherited.js): they take no more spawns and exit once their
   * children are done (servers started as root must not outlive the
   * program's drop of its privileges); the next spawn starts new ones,
   * which inherit the process as it is now.
   */
  renew() {
    this.inherited = inheritedState();
    debug('the umask, credentials or nice value changed: renewing %d servers', this.servers.length);
    for (const server of this.servers) {
      cancelIdle(server);
      server.retired = true;
      if (server.inFlight === 0) this.closeServer(server);
      else this.draining.push(server);
    }
    this.servers = [];
    this.target = Math.max(1, this.min);
  }

  onServerGone(server, cause, sessions) {
    const i = this.servers.indexOf(server);
    if (i !== -1) this.servers.splice(i, 1);
    const j = this.draining.indexOf(server);
    if (j !== -1) this.draining.splice(j, 1);
    cancelIdle(server);
    const lost = sessions.filter((s) => !(s.alive && s.state === 'spawning')).length;
    let reason;
    if (!server.ready) {
      reason = 'start-failed';
      this.startFailures++;
      // An exit status other than "orphaned" (0) or "a syscall failed, or
      // memory ran out" (111), or a wrong handshake, says the binary itself
      // is wrong.
      const status = server.exitStatus;
      const wrong = (typeof status === 'number' && status !== 0 && status !== 111) || cause instanceof ProtocolError;
      if (server.startError === null && (wrong || this.startFailures >= MAX_START_FAILURES)) {
        this.markUnavailable(`the native server at ${this.binary} does not work: ${server.describeFailure(cause)}`, cause);
      } else {
        this.backoff();
      }
    } else if (server.retired) {
      reason = 'idle';
    } else if (this.closed) {
      reason = 'closed';
    } else {
      reason = 'died';
      this.counters.restarts++;
    }
    debug('server %s exit (%s): %s; %d children lost', server.pid, reason, server.describeFailure(cause), lost);
    if (channels.serverExit.hasSubscribers) {
      channels.serverExit.publish({
        pool: this, pid: server.pid ?? null, ready: server.ready, reason, cause, status: server.exitStatus, childrenLost: lost,
      });
    }
    // Each on its own callback: a listener that throws must not keep the
    // others from learning that their server is gone.
    for (const session of sessions) setImmediate(() => this.rescue(session));
    if (this.closing !== null) this.closeIdle();
    this.notify();
  }

  /**
   * A session whose server died: a pid-less request it never answered
   * goes to a live server (the server reports each such spawn as soon as
   * it is made, so an unanswered one was not started); a running child,
   * which every child of a parked pid is, is lost.
   */
  rescue(session) {
    if (session.state !== SPAWNING) {
      this.counters.lost++;
      session.resource.runInAsyncScope(session.lost, session);
      return;
    }
    let server = null;
    try {
      server = this.acquire();
    } catch { /* closed: only the servers still draining can take it */ }
    if (server === null || server.gone) server = this.servers.find((s) => !s.gone) ?? null;
    if (server !== null && this.assign(server, session)) {
      this.counters.retried++;
      return;
    }
    // Nothing can serve it here: node:child_process does, behind the
    // ChildProcess the caller already holds.
    fallback(this, 'server-lost', session.request.file);
    session.attach(new NodeLink(session, session.spawnArgs), 1, 0, encodeSpawn(1, session.request));
  }

  /** The server for a spawn (`detached`: one that needs a session leader's pid). */
  pick(detached = false) {
    const servers = this.servers;
    if (this.strategy === 'random') return servers[Math.floor(Math.random() * servers.length)];
    if (this.strategy !== 'round-robin' && this.dynamic) {
      // Pack: the first server below the growth threshold, so that the
      // servers started under load go idle (and exit) when it passes.
      let best = servers[0];
      for (const s of servers) {
        if (s.inFlight < GROW_AT) return s;
        if (s.inFlight < best.inFlight) best = s;
      }
      return best;
    }
    if (this.strategy === 'pack') {
      for (const s of servers) if (s.inFlight < PACK_MAX && s.hasPid(detached)) return s;
    }
    // Least busy: the fewest in flight, ties taken in turn.
    const start = this.next++ % servers.length;
    if (this.strategy === 'round-robin') return servers[start];
    let best = servers[start];
    for (let k = 1; k < servers.length && (best.gone || best.inFlight > 0); k++) {
      const s = servers[(start + k) % servers.length];
      if (!s.gone && (best.gone || s.inFlight < best.inFlight)) best = s;
    }
    return best;
  }

  /** Records call → 'spawn' latency (ms), or a spawn error. */
  recordSpawn(ms) {
    if (ms === undefined) {
      this.counters.spawnErrors++;
      return;
    }
    this.counters.spawned++;
    this.latencies[this.latencyCount++ % LATENCY_SAMPLES] = ms;
  }

  /**
   * Starts the servers the pool keeps (`min`, or `size`) ahead of traffic.
   * Resolves true once every one has finished its handshake, false when
   * they cannot be started (spawns then go to node:child_process).
   */
  async ready() {
    if (this.closed) throw poolError('ERR_SPAWNPOOL_CLOSED', 'spawnpool: this pool is closed');
    // Servers never hold the event loop; whoever awaits ready() does, until
    // it settles (each attempt is bounded by the handshake timeout).
    const hold = setInterval(() => {}, 1 << 30);
    try {
      return await this.startAll();
    } finally {
      clearInterval(hold);
    }
  }

  async startAll() {
    for (let attempt = 0; attempt < MAX_START_FAILURES + 2; attempt++) {
      const wait = this.retryAt - now();
      if (wait > 0 && this.unavailable === null) await new Promise((r) => setTimeout(r, wait));
      if (this.closed) return false;
      if (this.unavailable === null && this.servers.length < this.size) this.start();
      if (this.unavailable !== null) return false;
      const outcome = await new Promise((resolve) => {
        const check = () => {
          if (this.unavailable !== null || this.closed) resolve(false);
          else if (this.servers.length >= this.size && this.servers.every((s) => s.ready)) resolve(true);
          else if (this.servers.length < this.size) resolve(null);   // one died: start it again
          else return;
          this.waiters.delete(check);
        };
        this.waiters.add(check);
        check();
      });
      if (outcome !== null) return outcome;
    }
    return this.servers.length > 0 && this.servers.every((s) => s.ready);
  }

  notify() {
    for (const check of [...this.waiters]) check();
  }

  /** A snapshot of the pool: servers, load, totals and spawn latency percentiles (ms). */
  stats() {
    const n = Math.min(this.latencyCount, LATENCY_SAMPLES);
    const sorted = Array.from(this.latencies.subarray(0, n)).sort((a, b) => a - b);
    return {
      size: this.size,
      min: this.min,
      max: this.max,
      available: this.unavailable === null,
      unavailableReason: this.unavailable,
      servers: this.servers.map((s) => ({ pid: s.pid ?? null, ready: s.ready, inFlight: s.inFlight })),
      inFlight: this.servers.reduce((sum, s) => sum + s.inFlight, 0),
      ...this.counters,
      fallbacksByReason: { ...this.fallbacksByReason },
      uptime: this.started ? now() - this.startedAt : 0,
      latency: { p50: percentile(sorted, 0.5), p90: percentile(sorted, 0.9), p99: percentile(sorted, 0.99) },
    };
  }

  /**
   * Stops taking spawns and resolves once every running child has finished
   * and the servers have exited. After `timeout` ms the children still
   * running are sent SIGKILL; a second later their servers are closed.
   */
  close(options = {}) {
    if (options === null || typeof options !== 'object') throw invalidArgType('options', 'object', options);
    const { timeout } = options;
    if (timeout !== undefined) {
      if (typeof timeout !== 'number') throw invalidArgType('options.timeout', 'number', timeout);
      if (!Number.isInteger(timeout) || timeout < 0) {
        throw invalidArgValue('options.timeout', timeout, 'must be a non-negative integer (ms)');
      }
    }
    if (this.closing !== null) return this.closing;
    this.closed = true;
    this.closing = new Promise((resolve) => {
      this.onClosed = resolve;
    });
    for (const s of this.servers) cancelIdle(s);
    if (timeout !== undefined) {
      setTimeout(() => {
        for (const s of [...this.servers, ...this.draining]) for (const session of s.sessions.values()) session.child.kill('SIGKILL');
        setTimeout(() => this.closeIdle(true), 1000).unref();
      }, timeout).unref();
    }
    this.closeIdle();
    this.notify();
    return this.closing;
  }

  closeIdle(force = false) {
    const idle = this.servers.filter((x) => force || x.inFlight === 0);
    this.servers = this.servers.filter((x) => !idle.includes(x));
    const drained = this.draining.filter((x) => force || x.inFlight === 0);
    this.draining = this.draining.filter((x) => !drained.includes(x));
    for (const x of [...idle, ...drained]) this.closeServer(x);
    if (this.servers.length === 0 && this.draining.length === 0 && this.onClosed !== null) {
      const resolve = this.onClosed;
      this.onClosed = null;
      Promise.all(this.exiting).then(() => resolve());
    }
  }
}
