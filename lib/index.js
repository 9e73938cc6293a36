// Public API: node:child_process's surface, served by a pool of spawn servers.
import { nodeChildProcess } from './node-child-process.js';
import { Pool } from './pool.js';
import { createSpawn } from './spawn.js';
import { createExec } from './exec.js';
import { ChildProcess } from './child-process.js';
import { isInstalled } from './hook.js';
import { validatePoolOptions, optionsFromEnv, mergeOptions } from './config.js';
import { fallback as countFallback } from './observe.js';
import { poolError } from './errors.js';
import { drainOnSignal as drainPoolOnSignal } from './drain.js';

let defaultPool = null;
let configured = {};
// SPAWNPOOL_* are read when the default pool is made (its first use): an
// invalid one throws there, naming the variable.
const getDefaultPool = () => (defaultPool ??= new Pool(mergeOptions(optionsFromEnv(), configured)));

/**
 * Sets the default pool's options (those of createPool()) before it starts
 * its first server; they take precedence over the SPAWNPOOL_* variables.
 * Throws ERR_SPAWNPOOL_STARTED once it has started (first spawn, ready()).
 */
export function configure(options) {
  validatePoolOptions(options);
  if (defaultPool !== null && (defaultPool.started || defaultPool.closed)) {
    throw poolError('ERR_SPAWNPOOL_STARTED',
      'spawnpool: the default pool has started; call configure() before the first spawn or ready()');
  }
  configured = { ...options };
  if (defaultPool !== null) {
    // Made but never started (stats(), a *Sync fallback): rebuild it, keeping its counts.
    const old = defaultPool;
    defaultPool = null;
    const pool = getDefaultPool();
    Object.assign(pool.counters, old.counters);
    Object.assign(pool.fallbacksByReason, old.fallbacksByReason);
  }
}

/** Creates a separate pool with its own servers and its own spawn/exec/execFile. */
export function createPool(options) {
  const pool = new Pool(options);
  const spawn = createSpawn(() => pool);
  return {
    spawn,
    ...createExec(spawn),
    stats: () => pool.stats(),
    ready: () => pool.ready(),
    close: (opts) => pool.close(opts),
    drainOnSignal: (signal, opts) => drainPoolOnSignal(pool, signal, opts),
  };
}

export const spawn = createSpawn(getDefaultPool);
export const { exec, execFile } = createExec(spawn);

/**
 * Statistics of the default pool (servers, in flight, totals, fallbacks,
 * latency), and whether spawnpool/register routes node:child_process to it.
 */
export const stats = () => ({ ...getDefaultPool().stats(), registered: isInstalled({ spawn, exec, execFile }) });

/** Starts the default pool's servers now; resolves true once all are ready (false: not available). */
export const ready = () => getDefaultPool().ready();

/** Drains and closes the default pool (see Pool#close); later spawns throw ERR_SPAWNPOOL_CLOSED. */
export const close = (options) => getDefaultPool().close(options);

/** On `signal` (default SIGTERM): drains the default pool, then lets the signal take its course. */
export const drainOnSignal = (signal, options) => drainPoolOnSignal(getDefaultPool(), signal, options);

// What a server cannot serve (synchronous calls, fork's IPC channel) is
// node:child_process's own function, counted in stats().fallbacks.
function fallback(name, reason) {
  const original = nodeChildProcess[name];
  const wrapper = {
    [name](...args) {
      countFallback(getDefaultPool(), reason, typeof args[0] === 'string' ? args[0] : undefined);
      return original.apply(this, args);
    },
  }[name];
  Object.defineProperty(wrapper, 'length', { value: original.length });
  return wrapper;
}

export const fork = fallback('fork', 'fork');
export const spawnSync = fallback('spawnSync', 'sync-api');
export const execSync = fallback('execSync', 'sync-api');
export const execFileSync = fallback('execFileSync', 'sync-api');
export const _forkChild = nodeChildProcess._forkChild;
export { ChildProcess };

export default {
  _forkChild, ChildProcess, exec, execFile, execFileSync, execSync, fork, spawn, spawnSync, createPool, stats,
  configure, ready, close, drainOnSignal,
};
