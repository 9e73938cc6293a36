// node:child_process's own functions, as they were before spawnpool/register
// replaced spawn, exec and execFile on the module object. spawnpool starts
// its servers and serves its fallbacks with these: calling the patched
// module from inside would recurse (a server start asking the pool for a
// server).
//
// The first copy of this module to run records the originals on a global
// symbol, so that a second copy of spawnpool loaded after the hook (another
// version in node_modules) still gets Node's functions, not the first copy's.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const ORIGINALS = Symbol.for('spawnpool.node-child-process');
const cp = require('node:child_process');

const originals = (globalThis[ORIGINALS] ??= Object.freeze({
  spawn: cp.spawn,
  exec: cp.exec,
  execFile: cp.execFile,
  fork: cp.fork,
  spawnSync: cp.spawnSync,
  execSync: cp.execSync,
  execFileSync: cp.execFileSync,
  ChildProcess: cp.ChildProcess,
  _forkChild: cp._forkChild,
}));

export const {
  spawn: nodeSpawn,
  exec: nodeExec,
  execFile: nodeExecFile,
  fork: nodeFork,
  spawnSync: nodeSpawnSync,
  execSync: nodeExecSync,
  execFileSync: nodeExecFileSync,
  ChildProcess: NodeChildProcess,
  _forkChild: nodeForkChild,
} = originals;

/** Node's functions by their export name. */
export const nodeChildProcess = originals;

/** The live node:child_process module object (the one the hook patches). */
export const childProcessModule = cp;
