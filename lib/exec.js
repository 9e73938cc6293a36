// exec and execFile, ported from Node's lib/child_process.js (identical in
// Node 20, 22 and 24) and built on whatever spawn() they are given, so that
// buffering, maxBuffer, encodings, timeout, killSignal and the error shapes
// match node:child_process byte for byte. Quirks are kept on purpose: code
// written against Node depends on them (see the comments where they occur).
import { Buffer } from 'node:buffer';
import { promisify, getSystemErrorName } from 'node:util';
import {
  genericNodeError,
  invalidArgType,
  invalidArgValue,
  maxBufferExceeded,
  outOfRange,
} from './errors.js';
import { childProcessModule } from './node-child-process.js';
import { validateTimeout, sanitizeKillSignal } from './options.js';

const MAX_BUFFER = 1024 * 1024;
const kEmptyObject = Object.freeze({ __proto__: null });
// Node 22 named the promise forms after the function (assignFunctionName);
// Node 20 left them anonymous. Follow the running Node.
const namePromiseForms = Number(process.versions.node.split('.')[0]) >= 22;

// The exec functions installed as node:child_process's (spawnpool/register).
const installedExecs = new WeakSet();

/**
 * Marks `exec` as node:child_process's own: from then on it calls the
 * module's current execFile, as Node's exec calls module.exports.execFile,
 * so that a wrapper or a mock put there (t.mock.method(cp, 'execFile'))
 * sees exec's calls too.
 */
export function execThroughModule(exec) {
  installedExecs.add(exec);
}

/** Build exec/execFile (with their util.promisify forms) on top of `spawn`. */
export function createExec(spawn) {
  function exec(command, options, callback) {
    const opts = normalizeExecArgs(command, options, callback);
    if (installedExecs.has(exec)) return childProcessModule.execFile(opts.file, opts.options, opts.callback);
    return execFile(opts.file, opts.options, opts.callback);
  }

  function execFile(file, args, options, callback) {
    ({ file, args, options, callback } = normalizeExecFileArgs(file, args, options, callback));
    options = withExecFileDefaults(options);
    const child = spawn(file, args, spawnOptions(options));
    return bufferOutput(child, file, args, options, callback);
  }

  definePromiseForm(exec);
  definePromiseForm(execFile);
  return { exec, execFile };
}

function normalizeExecArgs(command, options, callback) {
  validateString(command, 'command');
  validateNoNullBytes(command, 'command');
  if (typeof options === 'function') {
    callback = options;
    options = undefined;
  }
  // Node spreads without validating, so exec('ls', 'ab') runs with options
  // {0: 'a', 1: 'b'}; kept for parity.
  options = { __proto__: null, ...options };
  options.shell = typeof options.shell === 'string' ? options.shell : true;
  return { file: command, options, callback };
}

function normalizeExecFileArgs(file, args, options, callback) {
  if (Array.isArray(args)) {
    args = args.slice();
  } else if (args != null && typeof args === 'object') {
    callback = options;
    options = args;
    args = null;
  } else if (typeof args === 'function') {
    callback = args;
    options = null;
    args = null;
  }
  // Anything else (a string, a number) is left for spawn() to reject as "args".
  args ??= [];
  if (typeof options === 'function') callback = options;
  else if (options != null) validateObject(options, 'options');
  options ??= kEmptyObject;
  if (callback != null) validateFunction(callback, 'callback');
  // Validated like Node does, though execFile never passes argv0 on to spawn.
  if (options.argv0 != null) {
    validateString(options.argv0, 'options.argv0');
    validateNoNullBytes(options.argv0, 'options.argv0');
  }
  return { file, args, options, callback };
}

function withExecFileDefaults(options) {
  // An explicit `undefined` overrides a default here, as in Node: encoding
  // undefined yields Buffers and maxBuffer undefined means no limit.
  options = {
    __proto__: null,
    encoding: 'utf8',
    timeout: 0,
    maxBuffer: MAX_BUFFER,
    killSignal: 'SIGTERM',
    cwd: null,
    env: null,
    shell: false,
    ...options,
  };
  validateTimeout(options.timeout);
  validateMaxBuffer(options.maxBuffer);
  options.killSignal = sanitizeKillSignal(options.killSignal);
  return options;
}

// Exactly the options Node's execFile hands to spawn: timeout and killSignal
// stay here, and stdio, argv0 and detached are dropped.
function spawnOptions(options) {
  return {
    cwd: options.cwd,
    env: options.env,
    gid: options.gid,
    shell: options.shell,
    signal: options.signal,
    uid: options.uid,
    windowsHide: !!options.windowsHide,
    windowsVerbatimArguments: !!options.windowsVerbatimArguments,
  };
}

function bufferOutput(child, file, args, options, callback) {
  const run = {
    child,
    file,
    args,
    options,
    callback,
    encoding: options.encoding !== 'buffer' && Buffer.isEncoding(options.encoding) ? options.encoding : null,
    chunks: { stdout: [], stderr: [] },
    lengths: { stdout: 0, stderr: 0 },
    ex: null,
    killed: false,
    exited: false,
    timeoutId: null,
  };
  if (options.timeout > 0) {
    run.timeoutId = setTimeout(() => {
      killChild(run);
      run.timeoutId = null;
    }, options.timeout);
  }
  collect(run, 'stdout');
  collect(run, 'stderr');
  child.addListener('close', (code, signal) => finish(run, code, signal));
  child.addListener('error', (err) => fail(run, err));
  return child;
}

function collect(run, name) {
  const stream = run.child[name];
  if (!stream) return;
  if (run.encoding) stream.setEncoding(run.encoding);
  stream.on('data', (chunk) => onChunk(run, name, chunk));
}

function onChunk(run, name, chunk) {
  const { maxBuffer } = run.options;
  if (maxBuffer === Infinity) {
    run.chunks[name].push(chunk);
    return;
  }
  const encoding = run.child[name].readableEncoding;
  const length = encoding ? Buffer.byteLength(chunk, encoding) : chunk.length;
  run.lengths[name] += length;
  if (run.lengths[name] > maxBuffer) {
    // Node counts bytes but slices decoded strings by characters, so with an
    // encoding the kept text can exceed maxBuffer bytes (utf8) or fall short
    // of it (hex, base64). Parity matters more than the arithmetic.
    const truncatedLen = maxBuffer - (run.lengths[name] - length);
    run.chunks[name].push(chunk.slice(0, truncatedLen));
    run.ex = maxBufferExceeded(name);
    killChild(run);
  } else {
    run.chunks[name].push(chunk);
  }
}

function killChild(run) {
  const { child } = run;
  // Destroying our ends first mirrors Node: a child still writing gets EPIPE.
  if (child.stdout) child.stdout.destroy();
  if (child.stderr) child.stderr.destroy();
  run.killed = true;
  try {
    child.kill(run.options.killSignal);
  } catch (err) {
    run.ex = err;
    finish(run);
  }
}

function fail(run, err) {
  run.ex = err;
  if (run.child.stdout) run.child.stdout.destroy();
  if (run.child.stderr) run.child.stderr.destroy();
  finish(run);
}

function finish(run, code, signal) {
  if (run.exited) return;
  run.exited = true;
  if (run.timeoutId) {
    clearTimeout(run.timeoutId);
    run.timeoutId = null;
  }
  if (!run.callback) return;
  const stdout = joined(run, 'stdout');
  const stderr = joined(run, 'stderr');
  const callback = run.callback; // called as Node calls it: no `this`
  if (!run.ex && code === 0 && signal === null) {
    callback(null, stdout, stderr);
    return;
  }
  let cmd = run.file;
  if (run.args?.length) cmd += ` ${run.args.join(' ')}`;
  run.ex ||= genericNodeError(`Command failed: ${cmd}\n${stderr}`, {
    code: code < 0 ? getSystemErrorName(code) : code,
    killed: run.child.killed || run.killed,
    signal,
  });
  run.ex.cmd = cmd;
  callback(run.ex, stdout, stderr);
}

// Strings if we decoded, or if the caller called setEncoding() on the stream.
function joined(run, name) {
  if (run.encoding || run.child[name]?.readableEncoding) return run.chunks[name].join('');
  return Buffer.concat(run.chunks[name]);
}

function definePromiseForm(orig) {
  const promiseForm = namePromiseForms
    ? function (...args) { return callAsPromise(orig, args); }
    : (...args) => callAsPromise(orig, args);
  if (namePromiseForms) Object.defineProperty(promiseForm, 'name', { value: orig.name });
  Object.defineProperty(orig, promisify.custom, { enumerable: false, value: promiseForm });
}

function callAsPromise(orig, args) {
  const { promise, resolve, reject } = deferred();
  promise.child = orig(...args, (err, stdout, stderr) => {
    if (err !== null) {
      err.stdout = stdout;
      err.stderr = stderr;
      reject(err);
    } else {
      resolve({ stdout, stderr });
    }
  });
  return promise;
}

function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function validateString(value, name) {
  if (typeof value !== 'string') throw invalidArgType(name, 'string', value);
}

function validateNoNullBytes(value, name) {
  if (typeof value === 'string' && value.includes('\u0000')) {
    throw invalidArgValue(name, value, 'must be a string without null bytes');
  }
}

function validateObject(value, name) {
  if (value === null || Array.isArray(value) || typeof value !== 'object') {
    throw invalidArgType(name, 'Object', value);
  }
}

function validateFunction(value, name) {
  if (typeof value !== 'function') throw invalidArgType(name, 'Function', value);
}

function validateMaxBuffer(maxBuffer) {
  if (maxBuffer != null && !(typeof maxBuffer === 'number' && maxBuffer >= 0)) {
    throw outOfRange('options.maxBuffer', 'a positive number', maxBuffer);
  }
}
