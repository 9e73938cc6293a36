// Pool options: validation (Node's errors, naming the option or the
// environment variable), the SPAWNPOOL_* environment, and the default size.
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import * as cluster from 'node:cluster';
import { isMainThread } from 'node:worker_threads';
import { invalidArgType, invalidArgValue } from './errors.js';
import { readableEnv } from './runtime.js';

export const STRATEGIES = ['least-busy', 'round-robin', 'random', 'pack'];
export const DEFAULT_IDLE_TIMEOUT_MS = 30_000;
const MAX_SERVERS = 1024;
const MAX_MS = 0x7fffffff;
const KNOWN = new Set(['size', 'min', 'max', 'idleTimeout', 'strategy', 'server', 'window', 'parked']);
// Parked children per server: the server's own cap (native/platform.h SPAWND_PARK_MAX).
export const MAX_PARKED = 256;

/** CPUs this process may use, and what limited them: 'cpus' (affinity) or 'cgroup' (cpu.max). */
export function cpuBudget() {
  let cpus = availableParallelism();
  let source = 'cpus';
  try {
    const line = readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((l) => l.startsWith('0::'));
    let dir = line.slice(3).trim();
    for (;;) {
      // Most levels have no cpu controller: asked first, as a thrown ENOENT
      // costs about 0.1 ms per level of a process's first spawn.
      const file = `/sys/fs/cgroup${dir === '/' ? '' : dir}/cpu.max`;
      try {
        if (existsSync(file)) {
          const [quota, period] = readFileSync(file, 'utf8').trim().split(/\s+/);
          const limit = quota === 'max' ? Infinity : Math.max(1, Math.ceil(Number(quota) / Number(period)));
          if (limit < cpus) {
            cpus = limit;
            source = 'cgroup';
          }
        }
      } catch { /* gone meanwhile, or unreadable */ }
      if (dir === '/' || dir === '') break;
      dir = dir.slice(0, dir.lastIndexOf('/')) || '/';
    }
  } catch { /* not cgroup v2: affinity alone */ }
  return { cpus, source };
}

/** CPUs this process may use: affinity, then cgroup v2 cpu.max of its cgroup and ancestors. */
export const availableCpus = () => cpuBudget().cpus;

const positiveIntEnv = (v) => (/^\d+$/.test(v) ? Number(v) : NaN);

/**
 * How many processes share this machine's CPUs with this one, and who says so:
 * - PM2 cluster mode: `exec_mode=cluster_mode` and `instances` (PM2 copies
 *   its app settings into each instance's environment, `instances` resolved
 *   to a number);
 * - node:cluster workers: $SPAWNPOOL_CLUSTER_WORKERS when the primary sets
 *   it, else one worker per CPU is assumed (the usual setup), which leaves
 *   one server per worker;
 * - otherwise 1.
 */
function sharers(env, cpus, isWorker) {
  const pm2 = positiveIntEnv(env.instances ?? '');
  if (env.NODE_APP_INSTANCE !== undefined && env.exec_mode === 'cluster_mode' && pm2 > 0) {
    return { workers: pm2, why: `PM2 cluster mode, ${pm2} instances` };
  }
  if (isWorker) {
    const n = positiveIntEnv(env.SPAWNPOOL_CLUSTER_WORKERS ?? '');
    if (n > 0) return { workers: n, why: `node:cluster worker, SPAWNPOOL_CLUSTER_WORKERS=${n}` };
    return { workers: cpus, why: 'node:cluster worker, one worker per CPU assumed' };
  }
  return { workers: 1, why: null };
}

/**
 * The default number of servers and why: the CPUs available to the process
 * (affinity, cgroup quota), shared among cluster/PM2 workers, at least 1;
 * 1 in a worker thread (the main thread usually has its own pool).
 */
export function defaultSize({
  env = readableEnv, budget = cpuBudget(), isWorker = cluster.isWorker, mainThread = isMainThread,
} = {}) {
  if (!mainThread) return { size: 1, reason: 'worker thread' };
  const { cpus, source } = budget;
  const { workers, why } = sharers(env, cpus, isWorker);
  const size = Math.max(1, Math.floor(cpus / workers));
  const what = source === 'cgroup' ? `${cpus} CPUs (cgroup cpu.max)` : `${cpus} CPUs`;
  return { size, reason: why === null ? what : `${what} / ${workers} (${why})` };
}

function checkInt(value, name, min, max) {
  if (value === undefined) return;
  if (typeof value !== 'number') throw invalidArgType(name, 'number', value);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw invalidArgValue(name, value, `must be an integer from ${min} to ${max}`);
  }
}

/** Throws Node's ERR_INVALID_ARG_* for options createPool()/configure() cannot take. */
export function validatePoolOptions(options, prefix = 'options') {
  if (options === null || typeof options !== 'object') throw invalidArgType(prefix, 'object', options);
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) {
      throw invalidArgValue(`${prefix}.${key}`, options[key],
        `is not a pool option (expected one of ${[...KNOWN].join(', ')})`);
    }
  }
  const { size, min, max, idleTimeout, strategy, server, window, parked } = options;
  checkInt(size, `${prefix}.size`, 1, MAX_SERVERS);
  checkInt(min, `${prefix}.min`, 0, MAX_SERVERS);
  checkInt(max, `${prefix}.max`, 1, MAX_SERVERS);
  checkInt(idleTimeout, `${prefix}.idleTimeout`, 0, MAX_MS);
  checkInt(window, `${prefix}.window`, 1, MAX_MS);
  checkInt(parked, `${prefix}.parked`, 0, MAX_PARKED);
  if (size !== undefined && (min !== undefined || max !== undefined)) {
    throw invalidArgValue(`${prefix}.size`, size, `cannot be combined with ${prefix}.min or ${prefix}.max`);
  }
  if (min !== undefined && max !== undefined && min > max) {
    throw invalidArgValue(`${prefix}.min`, min, `must not exceed ${prefix}.max (${max})`);
  }
  if (strategy !== undefined && !STRATEGIES.includes(strategy)) {
    throw invalidArgValue(`${prefix}.strategy`, strategy, `must be one of ${STRATEGIES.map((x) => `'${x}'`).join(', ')}`);
  }
  if (server !== undefined && typeof server !== 'string') throw invalidArgType(`${prefix}.server`, 'string', server);
}

const ENV = [
  ['SPAWNPOOL_SIZE', 'size', 1, MAX_SERVERS],
  ['SPAWNPOOL_MIN', 'min', 0, MAX_SERVERS],
  ['SPAWNPOOL_MAX', 'max', 1, MAX_SERVERS],
  ['SPAWNPOOL_IDLE_TIMEOUT', 'idleTimeout', 0, MAX_MS],
  ['SPAWNPOOL_PARKED', 'parked', 0, MAX_PARKED],
];

/** The default pool's options from SPAWNPOOL_* variables; errors name the variable. */
export function optionsFromEnv(env = readableEnv) {
  const options = {};
  for (const [variable, key, min, max] of ENV) {
    const raw = env[variable];
    if (raw === undefined || raw === '') continue;
    const n = positiveIntEnv(raw.trim());
    if (!(n >= min && n <= max)) {
      throw invalidArgValue(`process.env.${variable}`, raw, `must be an integer from ${min} to ${max}`);
    }
    options[key] = n;
  }
  const strategy = env.SPAWNPOOL_STRATEGY;
  if (strategy !== undefined && strategy !== '') {
    if (!STRATEGIES.includes(strategy)) {
      throw invalidArgValue('process.env.SPAWNPOOL_STRATEGY', strategy,
        `must be one of ${STRATEGIES.map((x) => `'${x}'`).join(', ')}`);
    }
    options.strategy = strategy;
  }
  try {
    validatePoolOptions(options, 'process.env');
  } catch (err) {
    // Name the variables, not the option keys.
    err.message = err.message.replace(/process\.env\.(\w+)/g, (_, key) => `process.env.SPAWNPOOL_${
      key === 'idleTimeout' ? 'IDLE_TIMEOUT' : key.toUpperCase()}`);
    throw err;
  }
  return options;
}

/**
 * The default pool's options: those given to configure() win; sizing
 * (size, or min/max) comes from one source as a whole, so code that sets
 * `size` is not mixed with SPAWNPOOL_MIN.
 */
export function mergeOptions(fromEnv, fromCode) {
  const sizing = ['size', 'min', 'max'];
  const codeSizes = sizing.some((k) => fromCode[k] !== undefined);
  const merged = { ...fromEnv, ...fromCode };
  if (codeSizes) for (const k of sizing) if (fromCode[k] === undefined) delete merged[k];
  return merged;
}

/**
 * Resolves sizing: `size` means min = max = size (fixed); `min` alone grows
 * to at least the default size; `max` alone starts at 1.
 */
export function resolveSizing(options, defaults = () => defaultSize()) {
  const { size, min, max } = options;
  if (size !== undefined) return { min: size, max: size, reason: 'options' };
  if (min === undefined && max === undefined) {
    const d = defaults();
    return { min: d.size, max: d.size, reason: d.reason };
  }
  if (max === undefined) {
    const d = defaults();
    return { min, max: Math.max(1, min, d.size), reason: `min from options, max: ${d.reason}` };
  }
  return { min: min ?? Math.min(1, max), max, reason: 'options' };
}
