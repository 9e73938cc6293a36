// Public API: node:child_process's surface, served by a pool of spawn servers.
import * as nodeChildProcess from 'node:child_process';
import { Pool } from './pool.js';
import { createSpawn } from './spawn.js';
import { createExec } from './exec.js';
import { ChildProcess } from './child-process.js';

let defaultPool = null;
const getDefaultPool = () => (defaultPool ??= new Pool());

/** Creates a separate pool with its own servers and its own spawn/exec/execFile. */
export function createPool(options) {
  const pool = new Pool(options);
  const spawn = createSpawn(() => pool);
  return { spawn, ...createExec(spawn), stats: () => pool.stats(), close: () => pool.close() };
}

export const spawn = createSpawn(getDefaultPool);
export const { exec, execFile } = createExec(spawn);

/** Statistics of the default pool (servers, in flight, totals, fallbacks, latency). */
export const stats = () => getDefaultPool().stats();

export { ChildProcess };
// Served by node:child_process unchanged (docs/behaviour-differences.md).
export const { fork, spawnSync, execSync, execFileSync } = nodeChildProcess;

export default { spawn, exec, execFile, fork, spawnSync, execSync, execFileSync, ChildProcess, createPool, stats };
