// A pool of spawn servers: started together on first use, least-busy
// dispatch, replaced when one dies, never keeping an idle process alive.
import { readFileSync, accessSync, constants as fsConstants } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { debuglog } from 'node:util';
import { Server } from './server.js';
import { ProtocolError } from './protocol.js';
import { NodeLink } from './node-link.js';
import { poolError, invalidArgType, invalidArgValue } from './errors.js';
import { envVar } from './runtime.js';

const debug = debuglog('spawnpool');
const defaultBinary = fileURLToPath(new URL('../native/build/spawnd', import.meta.url));
const LATENCY_SAMPLES = 1024;
const MAX_START_FAILURES = 3;
const RECHECK_MS = 30_000;          // an unavailable pool tries again after this
const BACKOFF_MIN_MS = 50;
const BACKOFF_MAX_MS = 5_000;

/** CPUs this process may use: affinity, then cgroup v2 cpu.max of its cgroup and ancestors. */
export function availableCpus() {
  let cpus = availableParallelism();
  try {
    const line = readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((l) => l.startsWith('0::'));
    let dir = line.slice(3).trim();
    for (;;) {
      try {
        const [quota, period] = readFileSync(`/sys/fs/cgroup${dir === '/' ? '' : dir}/cpu.max`, 'utf8').trim().split(/\s+/);
        if (quota !== 'max') cpus = Math.min(cpus, Math.max(1, Math.ceil(Number(quota) / Number(period))));
      } catch { /* no cpu controller at this level */ }
      if (dir === '/' || dir === '') break;
      dir = dir.slice(0, dir.lastIndexOf('/')) || '/';
    }
  } catch { /* not cgroup v2: affinity alone */ }
  return cpus;
}

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

const STRATEGIES = ['least-busy', 'round-robin', 'random'];

function validatePoolOptions(options) {
  if (options === null || typeof options !== 'object') throw invalidArgType('options', 'object', options);
  const { size, strategy, server, window } = options;
  const positiveInt = (v, name, max) => {
    if (v === undefined) return;
    if (typeof v !== 'number') throw invalidArgType(name, 'number', v);
    if (!Number.isInteger(v) || v < 1 || v > max) throw invalidArgValue(name, v, `must be an integer from 1 to ${max}`);
  };
  positiveInt(size, 'options.size', 1024);
  positiveInt(window, 'options.window', 0x7fffffff);
  if (strategy !== undefined && !STRATEGIES.includes(strategy)) {
    throw invalidArgValue('options.strategy', strategy, `must be one of ${STRATEGIES.map((x) => `'${x}'`).join(', ')}`);
  }
  if (server !== undefined && typeof server !== 'string') throw invalidArgType('options.server', 'string', server);
}

export class Pool {
  /**
   * @param {object} [options]
   * @param {number} [options.size] servers; default: CPUs available to the process
   * @param {'least-busy'|'round-robin'|'random'} [options.strategy]
   * @param {string} [options.server] path of the spawnd binary
   * @param {number} [options.window] stdout/stderr credit per stream, bytes
   */
  constructor(options = {}) {
    validatePoolOptions(options);
    this.size = options.size ?? availableCpus();
    this.strategy = options.strategy ?? 'least-busy';
    this.binary = options.server ?? envVar('SPAWNPOOL_SERVER') ?? defaultBinary;
    this.window = options.window ?? 256 * 1024;
    this.servers = [];
    this.closed = false;
    this.next = 0;
    this.startFailures = 0;       // servers in a row that died before their handshake
    this.unavailable = null;      // why spawns go to node:child_process, or null
    this.retryAt = 0;             // when to try starting servers again
    this.warned = new Set();
    this.counters = { spawned: 0, spawnErrors: 0, fallbacks: 0, restarts: 0, lost: 0, retried: 0 };
    this.latencies = new Float64Array(LATENCY_SAMPLES);
    this.latencyCount = 0;
    this.closing = null;
    this.onClosed = null;
    this.exiting = [];
  }

  /**
   * The server for the next spawn (per the strategy), or null when this
   * spawn must go to node:child_process. Starts servers as needed; never
   * forks the Node process to find out whether the binary works (the
   * handshake says so).
   */
  acquire() {
    if (this.closed) throw poolError('ERR_SPAWNPOOL_CLOSED', 'spawnpool: this pool is closed');
    if (this.unavailable !== null) {
      if (performance.now() < this.retryAt) return null;
      debug('trying the native server again (%s)', this.unavailable);
      this.unavailable = null;
      this.startFailures = 0;
    }
    if (this.servers.length < this.size && performance.now() >= this.retryAt) this.start();
    return this.servers.length === 0 ? null : this.pick();
  }

  start() {
    try {
      accessSync(this.binary, fsConstants.X_OK);
    } catch (err) {
      this.markUnavailable(err.code === 'ENOENT'
        ? `native server not found at ${this.binary} (build it: npm rebuild spawnpool)`
        : `native server at ${this.binary} cannot be run (${err.code})`, err);
      return;
    }
    while (this.servers.length < this.size) {
      const server = this.startServer();
      if (server.gone) {
        // EMFILE, EAGAIN...: this call falls back; try again after a pause.
        this.backoff();
        return;
      }
      this.servers.push(server);
    }
  }

  startServer() {
    return new Server(this.binary, this);
  }

  backoff() {
    const ms = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** Math.min(this.startFailures, 10));
    this.retryAt = performance.now() + ms;
  }

  markUnavailable(reason, cause) {
    this.unavailable = reason;
    this.retryAt = performance.now() + RECHECK_MS;
    debug('unavailable: %s', reason);
    if (this.warned.has(reason)) return;
    this.warned.add(reason);
    process.emitWarning(`spawnpool: ${reason}; spawning with node:child_process instead`,
      { code: 'SPAWNPOOL_UNAVAILABLE', detail: cause?.message });
  }

  /** Hands a new session to a server; false when it must go to node:child_process. */
  submit(session) {
    const server = this.acquire();
    if (server === null) return false;
    server.submit(session);
    return true;
  }

  onServerReady() {
    this.startFailures = 0;
  }

  /** A server finished with a child: a closing pool may now be idle. */
  onRelease() {
    if (this.closing !== null) this.closeIdle();
  }

  onServerGone(server, cause, sessions) {
    const i = this.servers.indexOf(server);
    if (i !== -1) this.servers.splice(i, 1);
    if (!server.ready) {
      this.startFailures++;
      // An exit status other than "orphaned" (0) or "a syscall failed at
      // start" (111), or a wrong handshake, says the binary itself is wrong.
      const status = server.exitStatus;
      const wrong = (typeof status === 'number' && status !== 0 && status !== 111) || cause instanceof ProtocolError;
      if (server.startError === null && (wrong || this.startFailures >= MAX_START_FAILURES)) {
        this.markUnavailable(`the native server at ${this.binary} does not work: ${server.describeFailure(cause)}`, cause);
      } else {
        this.backoff();
      }
    } else if (!this.closed) {
      this.counters.restarts++;
    }
    // Each on its own callback: a listener that throws must not keep the
    // others from learning that their server is gone.
    for (const session of sessions) setImmediate(() => this.rescue(session));
    if (this.closing !== null) this.closeIdle();
  }

  /**
   * A session whose server died: a request it never answered goes to a
   * live server (the server reports each spawn as soon as it is made, so
   * an unanswered request was not started); a running child is lost.
   */
  rescue(session) {
    if (!session.alive || session.state !== 'spawning') {
      this.counters.lost++;
      session.resource.runInAsyncScope(session.lost, session);
      return;
    }
    let server = null;
    try {
      server = this.acquire();
    } catch { /* closed: only the servers still draining can take it */ }
    server ??= this.servers.find((s) => !s.gone) ?? null;
    if (server === null) {
      // Nothing can serve it here: node:child_process does, behind the
      // ChildProcess the caller already holds.
      this.counters.fallbacks++;
      session.attach(new NodeLink(session, session.spawnArgs), 1);
      return;
    }
    this.counters.retried++;
    server.submit(session);
  }

  pick() {
    const servers = this.servers;
    if (this.strategy === 'random') return servers[Math.floor(Math.random() * servers.length)];
    const start = this.next++ % servers.length;
    if (this.strategy === 'round-robin') return servers[start];
    let best = servers[start];
    for (let k = 1; k < servers.length && best.inFlight > 0; k++) {
      const s = servers[(start + k) % servers.length];
      if (s.inFlight < best.inFlight) best = s;
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

  /** A snapshot of the pool: servers, load, totals and spawn latency percentiles (ms). */
  stats() {
    const n = Math.min(this.latencyCount, LATENCY_SAMPLES);
    const sorted = Array.from(this.latencies.subarray(0, n)).sort((a, b) => a - b);
    return {
      size: this.size,
      available: this.unavailable === null,
      unavailableReason: this.unavailable,
      servers: this.servers.map((s) => ({ pid: s.pid ?? null, ready: s.ready, inFlight: s.inFlight })),
      inFlight: this.servers.reduce((sum, s) => sum + s.inFlight, 0),
      ...this.counters,
      latency: { p50: percentile(sorted, 0.5), p90: percentile(sorted, 0.9), p99: percentile(sorted, 0.99) },
    };
  }

  /**
   * Stops taking spawns and resolves once every running child has finished
   * and the servers have exited. After `timeout` ms the children still
   * running are sent SIGKILL; a second later their servers are closed.
   */
  close({ timeout } = {}) {
    if (this.closing !== null) return this.closing;
    this.closed = true;
    this.closing = new Promise((resolve) => {
      this.onClosed = resolve;
    });
    if (timeout !== undefined) {
      setTimeout(() => {
        for (const s of this.servers) for (const session of s.sessions.values()) session.child.kill('SIGKILL');
        setTimeout(() => this.closeIdle(true), 1000).unref();
      }, timeout).unref();
    }
    this.closeIdle();
    return this.closing;
  }

  closeIdle(force = false) {
    const idle = this.servers.filter((x) => force || x.inFlight === 0);
    this.servers = this.servers.filter((x) => !idle.includes(x));
    this.exiting.push(...idle.map((x) => x.close()));
    if (this.servers.length === 0 && this.onClosed !== null) {
      const resolve = this.onClosed;
      this.onClosed = null;
      Promise.all(this.exiting).then(() => resolve());
    }
  }
}
