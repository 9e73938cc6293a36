// A pool of spawn servers: started together on first use, least-busy
// dispatch, replaced when one dies, never keeping an idle process alive.
import { readFileSync } from 'node:fs';
import { nodeSpawnSync as spawnSync } from './node-child-process.js';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { debuglog } from 'node:util';
import { Server } from './server.js';
import { VERSION } from './protocol.js';
import { poolError, invalidArgType, invalidArgValue } from './errors.js';

const debug = debuglog('spawnpool');
const defaultBinary = fileURLToPath(new URL('../native/build/spawnd', import.meta.url));
const LATENCY_SAMPLES = 1024;
const MAX_START_FAILURES = 3;

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
    this.binary = options.server ?? process.env.SPAWNPOOL_SERVER ?? defaultBinary;
    this.window = options.window ?? 256 * 1024;
    this.servers = [];
    this.closed = false;
    this.next = 0;
    this.startFailures = 0;
    this.unavailable = null;
    this.counters = { spawned: 0, spawnErrors: 0, fallbacks: 0, restarts: 0, lost: 0 };
    this.latencies = new Float64Array(LATENCY_SAMPLES);
    this.latencyCount = 0;
    this.probed = false;
    this.closing = null;
    this.onClosed = null;
    this.exiting = [];
  }

  // Runs the binary once, synchronously, before the first server starts: a
  // missing or foreign binary must send spawns to node:child_process rather
  // than fail the first children handed to it.
  probe() {
    this.probed = true;
    const r = spawnSync(this.binary, ['--version'], { encoding: 'utf8', timeout: 5000, stdio: ['ignore', 'pipe', 'ignore'] });
    const expected = `spawnd protocol ${VERSION}\n`;
    if (r.error?.code === 'ENOENT') {
      this.markUnavailable(`native server not found at ${this.binary} (run "npm install" to build it)`, r.error);
    } else if (r.error || r.stdout !== expected) {
      this.markUnavailable(`${this.binary} is not a working spawnd speaking protocol ${VERSION}`,
        r.error ?? new Error(`--version printed ${JSON.stringify(r.stdout)}, exit ${r.status ?? r.signal}`));
    }
  }

  /**
   * The server for the next spawn (per the strategy), or null when spawns
   * must go to node:child_process. Starts the pool on first use.
   */
  acquire() {
    if (this.closed) throw poolError('ERR_SPAWNPOOL_CLOSED', 'spawnpool: this pool is closed');
    if (!this.probed) this.probe();
    if (this.unavailable !== null) return null;
    if (this.servers.length < this.size) this.start();
    // No server could be started (the process is out of fds, say): this
    // call goes to node:child_process, which reports that as Node would.
    return this.servers.length === 0 ? null : this.pick();
  }

  markUnavailable(reason, cause) {
    if (this.unavailable !== null) return;
    this.unavailable = reason;
    process.emitWarning(`spawnpool: ${reason}; spawning with node:child_process instead`,
      { code: 'SPAWNPOOL_UNAVAILABLE', detail: cause?.message });
  }

  start() {
    while (this.servers.length < this.size) {
      const server = this.startServer();
      if (server.failed) {
        if (++this.startFailures >= MAX_START_FAILURES) this.markUnavailable('the native server fails to start');
        return;
      }
      this.servers.push(server);
    }
  }

  startServer() {
    return new Server(this.binary, this);
  }

  /** A server finished with a child: a closing pool may now be idle. */
  onRelease() {
    if (this.closing !== null) this.closeIdle();
  }

  onServerGone(server, cause, orphans) {
    const i = this.servers.indexOf(server);
    if (i !== -1) this.servers.splice(i, 1);
    this.counters.lost += orphans.length;
    // Each on its own tick: a listener that throws must not keep the others
    // from learning that their server is gone.
    for (const child of orphans) process.nextTick(() => child._onServerLost(cause));
    if (this.closing !== null) this.closeIdle();
    if (this.closed) return;
    if (!server.ready && ++this.startFailures >= MAX_START_FAILURES) {
      this.markUnavailable('the native server fails to start', cause);
      return;
    }
    this.counters.restarts++;
    debug('replacing server %d', server.pid);
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
    if (this.servers.length > 0) this.startFailures = 0;
  }

  /** A snapshot of the pool: servers, load, totals and spawn latency percentiles (ms). */
  stats() {
    const n = Math.min(this.latencyCount, LATENCY_SAMPLES);
    const sorted = Array.from(this.latencies.subarray(0, n)).sort((a, b) => a - b);
    return {
      size: this.size,
      available: this.unavailable === null,
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
        for (const s of this.servers) for (const child of s.children.values()) child.kill('SIGKILL');
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
