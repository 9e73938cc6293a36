// Which runtime runs us (Node, Bun, Deno), and whether its spawns are served
// by the pool or delegated to the runtime's own node:child_process.
//
// The default per runtime is what bench/runtimes.js measured (docs/runtimes.md):
// the pool outran the runtime's own spawn under all three, so all three serve.
// SPAWNPOOL_RUNTIME_MODE=serve|delegate overrides the measurement (tests,
// a runtime version whose own spawn got faster). Deno's permissions come
// first whatever the mode: without them the pool cannot serve (see denoGate).
import { debuglog } from 'node:util';
import { poolError } from './errors.js';

const debug = debuglog('spawnpool');

/** 'node', 'bun' or 'deno'. */
export const runtime = globalThis.Deno?.permissions ? 'deno' : globalThis.Bun ? 'bun' : 'node';

// Spawns/s of `true`, 64 in flight, medians of 3 interleaved rounds, 2 cores,
// own node:child_process → pool, four runs each (docs/runtimes.md):
// Node 20 882–1,067 → 2,408–2,837; Bun 1.4.4 1,771–2,804 → 2,259–3,207
// (1.11–1.28x); Deno 2.9.6 1,661–2,294 → 2,110–2,752 (1.10–1.34x).
const MEASURED = { node: 'serve', bun: 'serve', deno: 'serve' };
const MODES = ['serve', 'delegate'];

const warned = new Set();
function warnOnce(message, code) {
  if (warned.has(message)) return;
  warned.add(message);
  process.emitWarning(message, { code });
}

/**
 * process.env[name], or undefined where Deno denies reading it: spawnpool's
 * own switches must not throw NotCapable (stats() and createPool() work
 * without --allow-env; spawn() says what it needs, see checkRuntime).
 */
export function envVar(name) {
  if (runtime === 'deno' && globalThis.Deno.permissions.querySync({ name: 'env', variable: name }).state !== 'granted') {
    return undefined;
  }
  return process.env[name];
}

let preferred = null;
function preferredMode() {
  if (preferred !== null) return preferred;
  const forced = envVar('SPAWNPOOL_RUNTIME_MODE');
  if (forced !== undefined && forced !== '' && !MODES.includes(forced)) {
    warnOnce(`spawnpool: SPAWNPOOL_RUNTIME_MODE=${forced} is not one of ${MODES.join(', ')}; ignored`,
      'SPAWNPOOL_RUNTIME_MODE');
  }
  preferred = MODES.includes(forced) ? forced : MEASURED[runtime];
  debug('%s: spawns %s', runtime, preferred === 'serve' ? 'served by the pool' : 'delegated to node:child_process');
  return preferred;
}

const denyState = (descriptor) => globalThis.Deno.permissions.querySync(descriptor).state !== 'granted';
// `partial`: granted, but with exceptions (a --deny-run list).
const restricted = (descriptor) => {
  const status = globalThis.Deno.permissions.querySync(descriptor);
  return status.state !== 'granted' || status.partial === true;
};

/**
 * Throws before anything reads process.env when Deno denies env access:
 * spawning needs it (a child's default environment is process.env, and
 * Deno's own spawn reads it too), so the caller learns which flag to add
 * rather than a NotCapable from deep inside.
 */
export function checkRuntime() {
  if (runtime !== 'deno' || !denyState({ name: 'env' })) return;
  throw poolError('ERR_SPAWNPOOL_DENO_PERMISSION',
    'spawnpool: spawning needs env access under Deno (a child\'s environment defaults to process.env); run with --allow-env');
}

// Deno: why the pool may not serve, or null. Only an unrestricted
// --allow-run lets the pool serve: a spawn server runs whatever program it
// is asked to, so serving under a narrow --allow-run=prog,... or a
// --deny-run=prog would bypass Deno's per-program check. Delegated, Deno applies that list itself.
// Starting the server also checks the binary (fs.accessSync: read access to
// it, and sys access to the uid under Deno).
const gates = new Map();
function denoGate(binary) {
  let reason = gates.get(binary);
  if (reason !== undefined) return reason;
  const missing = [
    restricted({ name: 'run' }) && '--allow-run (unrestricted: a spawn server can run any program, so a '
      + 'per-program --allow-run list or --deny-run is left to Deno\'s own spawn to enforce)',
    denyState({ name: 'read', path: binary }) && `--allow-read (of ${binary})`,
    denyState({ name: 'sys', kind: 'uid' }) && '--allow-sys (uid)',
  ].filter(Boolean);
  reason = missing.length === 0 ? null : `Deno grants no ${missing.join(', no ')}`;
  gates.set(binary, reason);
  if (reason !== null) {
    warnOnce(`spawnpool: ${reason}; spawning with Deno's node:child_process instead`, 'SPAWNPOOL_DENO_PERMISSION');
  }
  return reason;
}

/**
 * Node's permission model (`--permission`) without `--allow-child-process`:
 * node:child_process refuses every spawn, and so does spawnpool. Its
 * servers are processes too, which the launch addon (allowed by
 * `--allow-addons`) would otherwise start regardless.
 */
export const childProcessDenied = () => runtime === 'node' && process.permission?.has('child') === false;

/** True when spawns of a pool using `binary` go to the runtime's own node:child_process. */
export function delegates(binary) {
  if (preferredMode() === 'delegate') return true;
  return runtime === 'deno' && denoGate(binary) !== null;
}

/**
 * process.env for reading configuration: under Deno without env access a
 * variable reads as unset instead of throwing NotCapable.
 */
export const readableEnv = runtime === 'deno'
  ? new Proxy({}, { get: (_, name) => (typeof name === 'string' ? envVar(name) : undefined) })
  : process.env;
