// The mechanism behind spawnpool/register: node:child_process's module
// object is shared by every user in the process (require, createRequire,
// ESM default imports), so replacing its spawn, exec and execFile properties
// reroutes them all; module.syncBuiltinESMExports() then updates the named
// ESM bindings (`import { spawn } from 'node:child_process'`), which are
// otherwise snapshots taken when the builtin was first imported.
//
// fork, the *Sync functions and ChildProcess stay Node's: a server cannot
// serve them, and Node's fork() calls its internal spawn, not the property.
// spawnpool itself keeps Node's originals (node-child-process.js).
import { syncBuiltinESMExports } from 'node:module';
import { execThroughModule } from './exec.js';
import { childProcessModule } from './node-child-process.js';

const REPLACED = ['spawn', 'exec', 'execFile'];

/**
 * Routes node:child_process's spawn/exec/execFile to `impl`'s; `impl.exec`
 * then calls the module's execFile, as Node's exec does. Idempotent.
 */
export function install(impl) {
  for (const name of REPLACED) childProcessModule[name] = impl[name];
  execThroughModule(impl.exec);
  syncBuiltinESMExports();
}

/** Whether node:child_process currently hands out `impl`'s functions. */
export function isInstalled(impl) {
  return REPLACED.every((name) => childProcessModule[name] === impl[name]);
}
