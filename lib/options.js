// Argument normalization for spawn(), done once at the API boundary with
// Node's validation and errors (lib/child_process.js normalizeSpawnArguments,
// lib/internal/child_process.js getValidStdio). Later layers trust the result.
import { fileURLToPath } from 'node:url';
import { constants } from 'node:os';
import {
  invalidArgType, invalidArgValue, outOfRange, unknownSignal, invalidSyncForkInput,
} from './errors.js';
import { STDIO_PIPE, STDIO_IGNORE, stdioFd, presetEnvBlock } from './protocol.js';
import { envSnapshot, envSnapshotBlock } from './launch.js';

const signalNumbers = constants.signals;
// Node names a signal by its first name: 6 is SIGABRT, not SIGIOT; 29 is
// SIGIO, not SIGPOLL (os.constants lists the aliases after).
const signalNames = {};
for (const [name, n] of Object.entries(signalNumbers)) signalNames[n] ??= name;

/** Signal number → name ('SIGTERM'), or undefined. */
export const signalName = (n) => signalNames[n];

/** Node's convertToValidSignal: a known name (any case) or number, else ERR_UNKNOWN_SIGNAL. */
export function toSignalNumber(signal) {
  if (typeof signal === 'number' && signalNames[signal] !== undefined) return signal;
  if (typeof signal === 'string') {
    const n = signalNumbers[signal.toUpperCase()];
    if (n !== undefined) return n;
  }
  throw unknownSignal(signal);
}

function validateString(value, name) {
  if (typeof value !== 'string') throw invalidArgType(name, 'string', value);
}

function validateBoolean(value, name) {
  if (typeof value !== 'boolean') throw invalidArgType(name, 'boolean', value);
}

function validateNoNul(value, name) {
  if (typeof value === 'string' && value.includes('\u0000')) {
    throw invalidArgValue(name, value, 'must be a string without null bytes');
  }
}

const isInt32 = (value) => value === (value | 0);

// Node 24 deprecates args with `shell: true` (DEP0190), once per process.
let shellArgsWarned = Number(process.versions.node.split('.')[0]) < 24;
function warnShellArgs() {
  if (shellArgsWarned) return;
  shellArgsWarned = true;
  process.emitWarning('Passing args to a child process with shell option true can lead to security ' +
    'vulnerabilities, as the arguments are not escaped, only concatenated.', 'DeprecationWarning', 'DEP0190');
}

function validatedCwd(cwd) {
  if (cwd instanceof URL || (cwd != null && cwd.href !== undefined && cwd.protocol !== undefined)) {
    cwd = fileURLToPath(cwd);
  }
  if (typeof cwd !== 'string' && !(cwd instanceof Uint8Array)) {
    throw invalidArgType('options.cwd', ['string', 'Buffer', 'URL'], cwd);
  }
  const text = typeof cwd === 'string' ? cwd : Buffer.from(cwd).toString();
  if (text.includes('\u0000')) {
    throw invalidArgValue('options.cwd', cwd, 'must be a string, Uint8Array, or URL without null bytes');
  }
  // Node (20-24) validates a Buffer cwd and then ignores it: its native
  // spawn reads `cwd` only when it is a string. Children run in the parent's.
  return typeof cwd === 'string' ? text : undefined;
}

/**
 * Node's normalizeSpawnArguments: validates, applies `shell` and `argv0`,
 * flattens `env` into "K=V" pairs. Returns { file, args (argv, argv[0]
 * included), cwd, envPairs, options }.
 */
export function normalizeSpawnArguments(file, args, options) {
  validateString(file, 'file');
  validateNoNul(file, 'file');
  if (file.length === 0) throw invalidArgValue('file', file, 'cannot be empty');

  if (Array.isArray(args)) {
    args = args.slice();
  } else if (args == null) {
    args = [];
  } else if (typeof args !== 'object') {
    throw invalidArgType('args', 'object', args);
  } else {
    options = args;
    args = [];
  }
  for (let i = 0; i < args.length; i++) validateNoNul(args[i], `args[${i}]`);

  if (options === undefined) options = {};
  else if (options === null || typeof options !== 'object' || Array.isArray(options)) throw invalidArgType('options', 'object', options);
  options = { __proto__: null, ...options };

  let cwd = options.cwd;
  if (cwd != null) cwd = validatedCwd(cwd);
  if (options.detached != null) validateBoolean(options.detached, 'options.detached');
  if (options.uid != null && !isInt32(options.uid)) throw invalidArgType('options.uid', 'int32', options.uid);
  if (options.gid != null && !isInt32(options.gid)) throw invalidArgType('options.gid', 'int32', options.gid);
  if (options.shell != null && typeof options.shell !== 'boolean' && typeof options.shell !== 'string') {
    throw invalidArgType('options.shell', ['boolean', 'string'], options.shell);
  }
  if (options.argv0 != null) {
    validateString(options.argv0, 'options.argv0');
    validateNoNul(options.argv0, 'options.argv0');
  }
  if (options.windowsHide != null) validateBoolean(options.windowsHide, 'options.windowsHide');
  if (options.windowsVerbatimArguments != null) {
    validateBoolean(options.windowsVerbatimArguments, 'options.windowsVerbatimArguments');
  }

  if (options.shell) {
    validateNoNul(options.shell, 'options.shell');
    if (args.length > 0) warnShellArgs();
    const command = [file, ...args].join(' ');
    file = typeof options.shell === 'string' ? options.shell : '/bin/sh';
    args = ['-c', command];
  }
  args.unshift(typeof options.argv0 === 'string' ? options.argv0 : file);

  // Node always propagates NODE_V8_COVERAGE, so coverage works through spawns.
  if (options.env && process.env.NODE_V8_COVERAGE && !Object.hasOwn(options.env, 'NODE_V8_COVERAGE')) {
    options.env.NODE_V8_COVERAGE = process.env.NODE_V8_COVERAGE;
  }
  // `env: process.env` is Node's default spelled out (a common idiom): the
  // same pairs, found the cheap way rather than key by key.
  const envPairs = options.env && options.env !== process.env ? pairsOfObject(options.env) : pairsOfProcessEnv();
  return { file, args, cwd, envPairs, options };
}

// The environment a spawn passes is nearly always the one the last spawn
// passed. The pairs of the last one are kept, frozen, and handed out again
// when the same environment comes back, so that what depends only on them
// (their encoding on the wire, the precheck's PATH) is worked out once.
let lastProcessEnv = null;        // { json, pairs } for process.env
let lastPairs = null;             // for an options.env object

// process.env is a native interceptor: reading it key by key crosses into
// C++ twice per variable. JSON.stringify walks it in one pass (about 40%
// less time per spawn); keys and values are strings, so the round trip is
// exact, and the text tells whether it changed since the last spawn. With
// the launch addon, the C environment itself tells (one memcmp against a
// copy, under Node's lock), and hands over its strings when it changed.
function pairsOfProcessEnv() {
  const env = process.env;
  const last = lastProcessEnv;
  const snapshot = envSnapshot(env, last !== null && last.env === env ? last.stamp : -1);
  if (snapshot === null) return last.pairs;
  const pairs = snapshot === undefined ? null : pairsOfEntries(snapshot);
  if (pairs !== null) {
    const same = last !== null && samePairs(last.pairs, pairs);
    lastProcessEnv = { json: null, stamp: snapshot[0], env, pairs: same ? last.pairs : Object.freeze(pairs) };
    // Its SPAWN encoding, made by the addon from the same strings.
    if (!same) {
      const block = envSnapshotBlock();
      if (block !== null) presetEnvBlock(lastProcessEnv.pairs, block);
    }
    return lastProcessEnv.pairs;
  }
  const json = JSON.stringify(env);
  if (last !== null && last.json === json) {
    last.stamp = -1;
    last.env = env;
    return last.pairs;
  }
  lastProcessEnv = { json, stamp: -1, env, pairs: Object.freeze(pairsOfObject(JSON.parse(json), true)) };
  return lastProcessEnv.pairs;
}

const isIndex = (key) => /^(?:0|[1-9]\d{0,9})$/.test(key) && Number(key) < 2 ** 32 - 1;

/**
 * The C environment's "K=V" strings (after the stamp at [0]) as the pairs
 * JSON.stringify(process.env) would give: the same strings, in the same
 * order, as long as each has a key and no key repeats or is an array
 * index (JSON.parse would move it first). null for such an odd one: the
 * text decides then.
 */
function pairsOfEntries(snapshot) {
  const keys = new Set();
  const pairs = snapshot.slice(1);
  for (const entry of pairs) {
    const eq = entry.indexOf('=');
    if (eq <= 0) return null;
    const key = entry.slice(0, eq);
    if (keys.has(key) || isIndex(key)) return null;
    keys.add(key);
  }
  return pairs;
}

/** Node's "K=V" pairs of `env`, validated as Node does (prototype values included). */
function pairsOfObject(env, fresh = false) {
  const pairs = [];
  for (const key in env) {
    const value = env[key];
    if (value !== undefined) {
      validateNoNul(key, `options.env['${key}']`);
      validateNoNul(value, `options.env['${key}']`);
      // A NUL from a value's toString() ends the C string exec sees.
      pairs.push(cString(`${key}=${value}`));
    }
  }
  if (fresh) return pairs;
  if (lastPairs !== null && samePairs(lastPairs, pairs)) return lastPairs;
  return (lastPairs = Object.freeze(pairs));
}

function samePairs(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * What exec sees of a string: Node hands each one over as a C string, so
 * a NUL that got past validation (from a Buffer or an object's toString)
 * cuts it there. Never put one on the wire: the server would reject the
 * whole frame.
 */
export function cString(value) {
  const s = String(value);
  const nul = s.indexOf('\u0000');
  return nul === -1 ? s : s.slice(0, nul);
}

// What spawn() makes of an argument whose conversion to a string throws (a
// Symbol, an object without a usable toString): Node 20 throws that error
// from spawn(); Node 22 and 24 run the program with an empty argument.
const argFailureIsEmpty = Number(process.versions.node.split('.')[0]) >= 22;

/** An argument as Node's spawn() converts it (ToString, not String()), then as cString. */
export function argString(value) {
  if (typeof value === 'string') return cString(value);
  let s;
  try {
    s = `${value}`;
  } catch (err) {
    if (!argFailureIsEmpty) throw err;
    s = '';
  }
  return cString(s);
}

/** Node's validateTimeout for spawn: undefined/null or an integer >= 0. */
export function validateTimeout(timeout) {
  if (timeout != null && !(Number.isInteger(timeout) && timeout >= 0)) {
    throw outOfRange('timeout', 'an unsigned integer', timeout);
  }
}

/** Node's check in ChildProcess#spawn, after the stdio's. */
export function validateSerialization(serialization) {
  if (serialization !== undefined && serialization !== 'json' && serialization !== 'advanced') {
    throw invalidArgValue('options.serialization', serialization, "must be one of: undefined, 'json', 'advanced'");
  }
}

/** Node's validateAbortSignal. */
export function validateAbortSignal(signal, name) {
  if (signal !== undefined && (signal === null || typeof signal !== 'object' || !('aborted' in signal))) {
    throw invalidArgType(name, 'AbortSignal', signal);
  }
}

/** Node's sanitizeKillSignal: undefined, or a valid signal number. */
export function sanitizeKillSignal(killSignal) {
  if (typeof killSignal === 'string' || typeof killSignal === 'number') return toSignalNumber(killSignal);
  if (killSignal != null) throw invalidArgType('options.killSignal', ['string', 'number'], killSignal);
  return undefined;
}

function stdioStringToArray(stdio) {
  switch (stdio) {
    case 'ignore':
    case 'overlapped':
    case 'pipe': return [stdio, stdio, stdio];
    case 'inherit': return [0, 1, 2];
    default: throw invalidArgValue('stdio', stdio);
  }
}

const isHandleLike = (s) => typeof s === 'object' && s !== null &&
  (typeof s.fd === 'number' || s.handle !== undefined || s._handle !== undefined);

/**
 * Validates `stdio` as Node does and maps it onto what a spawn server can
 * serve: { modes: [m0, m1, m2], length } or null when some entry needs
 * node:child_process ('ipc', streams, fds above 2, extra pipes).
 */
export function planStdio(stdio) {
  if (stdio == null || stdio === '' || stdio === 0 || stdio === false) stdio = 'pipe';
  if (typeof stdio === 'string') stdio = stdioStringToArray(stdio);
  else if (!Array.isArray(stdio)) throw invalidArgValue('stdio', stdio);

  const length = Math.max(3, stdio.length);
  const modes = [];
  let servable = true;
  for (let i = 0; i < length; i++) {
    let s = stdio[i];
    if (s == null) s = i < 3 ? 'pipe' : 'ignore';
    let mode;
    if (s === 'ignore') mode = STDIO_IGNORE;
    else if (s === 'pipe' || s === 'overlapped' || (typeof s === 'number' && s < 0)) mode = STDIO_PIPE;
    else if (s === 'inherit') mode = stdioFd(i);
    else if (s === 'ipc' || isHandleLike(s) || typeof s === 'number') {
      const fd = typeof s === 'number' ? s : s.fd;
      mode = Number.isInteger(fd) && fd >= 0 && fd <= 2 ? stdioFd(fd) : undefined;
    } else if (ArrayBuffer.isView(s) || typeof s === 'string') {
      throw invalidSyncForkInput(s);
    } else {
      throw invalidArgValue('stdio', s);
    }
    if (i < 3) {
      if (mode === undefined) servable = false;
      modes.push(mode);
    } else if (mode !== STDIO_IGNORE) {
      servable = false;
    }
  }
  return servable ? { modes, length } : null;
}

/**
 * The cwd to send: the server's own does not follow ours, so always a path,
 * taken now, as Node's synchronous fork takes it (a chdir() right after
 * spawn() must not change the child's). A deleted cwd is the one case this
 * cannot express (docs/behaviour-differences.md).
 */
// Not normalized: the kernel resolves `..` after a symlink to the symlink's
// target's parent, and `missing/..` does not exist (ENOENT), as under Node,
// whose child chdir()s to the string it was given. Relative: to our cwd.
export const resolveCwd = (cwd) => {
  if (cwd == null || cwd === '') return process.cwd();
  return cwd.startsWith('/') ? cwd : `${process.cwd()}/${cwd}`;
};
