// Public API: node:child_process's surface, served by a pool of spawn servers.
import { nodeChildProcess } from './node-child-process.js';
import { Pool } from './pool.js';
import { createSpawn } from './spawn.js';
import { createExec } from './exec.js';
import { ChildProcess } from './child-process.js';
import { isInstalled } from './hook.js';

let defaultPool = null;
const getDefaultPool = () => (defaultPool ??= new Pool());

/** Creates a separate pool with its own servers and its own spawn/exec/execFile. */
export function createPool(options) {
  const pool = new Pool(options);
  const spawn = createSpawn(() => pool);
  return { spawn, ...createExec(spawn), stats: () => pool.stats(), close: (options) => pool.close(options) };
}

export const spawn = createSpawn(getDefaultPool);
export const { exec, execFile } = createExec(spawn);

/**
 * Statistics of the default pool (servers, in flight, totals, fallbacks,
 * latency), and whether spawnpool/register routes node:child_process to it.
 */
export const stats = () => ({ ...getDefaultPool().stats(), registered: isInstalled({ spawn, exec, execFile }) });

// What a server cannot serve (synchronous calls, fork's IPC channel) is
// node:child_process's own function, counted in stats().fallbacks.
function fallback(name) {
  const original = nodeChildProcess[name];
  const wrapper = {
    [name](...args) {
      getDefaultPool().counters.fallbacks++;
      return original.apply(this, args);
    },
  }[name];
  Object.defineProperty(wrapper, 'length', { value: original.length });
  return wrapper;
}

export const fork = fallback('fork');
export const spawnSync = fallback('spawnSync');
export const execSync = fallback('execSync');
export const execFileSync = fallback('execFileSync');
export const _forkChild = nodeChildProcess._forkChild;
export { ChildProcess };

export default {
  _forkChild, ChildProcess, exec, execFile, execFileSync, execSync, fork, spawn, spawnSync, createPool, stats,
};
