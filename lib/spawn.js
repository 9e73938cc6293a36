// spawn(): Node's lib/child_process.js spawn(), with the process started by
// a pool server. What a server cannot serve goes to node:child_process.
import { nodeSpawn } from './node-child-process.js';
import * as events from 'node:events';
import { errorMonitor } from 'node:events';
import { ChildProcess, kUsedAsStdio } from './child-process.js';
import { Session } from './session.js';
import {
  normalizeSpawnArguments, validateTimeout, validateAbortSignal, sanitizeKillSignal, planStdio, resolveCwd, cString, argString,
  validateSerialization,
} from './options.js';
import { FLAG_DETACHED, FLAG_SET_UID, FLAG_SET_GID } from './protocol.js';
import { AbortError } from './errors.js';
import {
  childCreated, spawnStart, spawnOutcome, fallback, wantsSpawnErrors, spawnFailed,
} from './observe.js';
import { checkRuntime, childProcessDenied, delegates } from './runtime.js';
import { checkSpawn, throwsSynchronously, spawnError } from './precheck.js';
import { inheritedChanged } from './inherited.js';
import { ChildReadable, ChildWritable } from './streams.js';

function toRequest(norm, plan, window) {
  const { options } = norm;
  let flags = 0;
  if (options.detached) flags |= FLAG_DETACHED;
  if (options.uid != null) flags |= FLAG_SET_UID;
  if (options.gid != null) flags |= FLAG_SET_GID;
  return {
    flags,
    uid: options.uid ?? 0,
    gid: options.gid ?? 0,
    window,
    stdio: plan.modes,
    file: cString(norm.file),
    cwd: resolveCwd(norm.cwd),
    argv: Array.from(norm.args, argString), // a hole is 'undefined', as Node's
    env: norm.envPairs,       // C strings already (options.js)
  };
}

function abortChildProcess(child, killSignal, reason) {
  try {
    if (child.kill(killSignal)) child.emit('error', new AbortError(undefined, { cause: reason }));
  } catch (err) {
    child.emit('error', err);
  }
}

// events.addAbortListener (Node >= 20.5), as Node's spawn uses, cannot be
// silenced by another listener's stopImmediatePropagation(); earlier 20.x
// get a plain listener. Returns the function that removes it.
function listenAbort(signal, onAbort) {
  if (events.addAbortListener) {
    const disposable = events.addAbortListener(signal, onAbort);
    return () => disposable[Symbol.dispose]();
  }
  signal.addEventListener('abort', onAbort, { once: true });
  return () => signal.removeEventListener('abort', onAbort);
}

/** Node's timeout / killSignal / AbortSignal wiring, shared by both spawn paths. */
function superviseChild(child, options, killSignal) {
  if (options.timeout > 0) {
    let timer = setTimeout(() => {
      if (timer) {
        try {
          child.kill(killSignal);
        } catch (err) {
          child.emit('error', err);
        }
        timer = null;
      }
    }, options.timeout);
    const clear = () => {
      if (timer) {
        clearTimeout(timer);
        timer = null;
      }
    };
    // As Node's: a spawn that failed emits no 'exit', and its timer runs
    // out, its kill() finding no process (one whose exec failed after
    // 'spawn' emits one: Session.exitAfterFailure).
    child.once('exit', clear);
  }
  const signal = options.signal;
  if (signal) {
    const onAbort = () => abortChildProcess(child, killSignal, signal.reason);
    if (signal.aborted) {
      // As Node: the abort follows 'spawn' (an earlier nextTick). A pid-less
      // spawn's 'spawn' is later: wait for it. A spawn that fails emits no
      // 'spawn', and under Node its kill() finds no process: no AbortError.
      if (child.pid !== undefined) process.nextTick(onAbort);
      else child.once('spawn', () => process.nextTick(onAbort));
    } else {
      child.once('exit', listenAbort(signal, onAbort));
    }
  }
}

/**
 * Reports a failed spawn (ENOENT, EACCES...) to the log and the channels,
 * when anyone listens. errorMonitor sees the 'error' without handling it:
 * an unhandled one still throws, as under Node.
 */
function watchSpawnError(pool, child) {
  if (!wantsSpawnErrors()) return;
  const onError = (error) => {
    if (child.pid !== undefined || !String(error?.syscall).startsWith('spawn')) return;
    spawnFailed(pool, child, error);
  };
  child.on(errorMonitor, onError);
  child.once('spawn', () => child.off(errorMonitor, onError));
}

// Node's onSpawnNT and onErrorNT: the nextTick callbacks of spawn().
function spawned(child, pid) {
  child._spawned(pid);
}

function failSpawn(session, errno) {
  session.resource.runInAsyncScope(session.spawnFailed, session, errno);
}

const STREAM_FIELDS = ['stdin', 'stdout', 'stderr'];

/**
 * Another served child's stdout given as the stdin of this spawn, or its
 * stdin as this spawn's stdout or stderr (`stdio: [cat.stdout, 'pipe',
 * 'pipe']`, as Node's own pipe-dataflow test does). Node hands the new
 * child that socket's fd. A served child's pipes are the server's, with no
 * fd here: the new child gets a pipe of its own, joined to that stream in
 * this process from its 'spawn' on (feed, drain). Returns the options to
 * spawn with and the joins, or null.
 */
function childStreamsIn(options) {
  // As Node's spread of the options: own enumerable properties only.
  if (options == null || !Object.prototype.propertyIsEnumerable.call(options, 'stdio')) return null;
  const stdio = options.stdio;
  if (!Array.isArray(stdio)) return null;
  // Nothing copied for the usual stdio (every spawn passes here).
  let joins = null;
  for (let fd = 0; fd < 3 && fd < stdio.length; fd++) {
    const entry = stdio[fd];
    const joinable = fd === 0 ? entry instanceof ChildReadable : entry instanceof ChildWritable;
    if (joinable && !entry.destroyed) (joins ??= []).push([fd, entry]);
  }
  if (joins === null) return null;
  const replaced = stdio.slice();
  for (const [fd] of joins) replaced[fd] = 'pipe';
  return { options: { ...options, stdio: replaced }, joins };
}

function joinStreams(child, joins) {
  for (const [fd, stream] of joins) {
    // Its child's exit must not drain it (flushStdio): it is this one's.
    if (fd === 0) stream[kUsedAsStdio] = true;
    const own = child.stdio[fd];
    // The user cannot reach it: its errors are the join's.
    child.stdio[fd] = null;
    child[STREAM_FIELDS[fd]] = null;
    own.on('error', () => {});
    // A spawn that fails takes nothing from the given stream, as Node's.
    child.once('spawn', fd === 0 ? () => feed(stream, own) : () => drain(own, stream));
  }
}

/** Adds a join's listeners ([emitter, event, listener]); returns what removes them. */
function listen(listeners) {
  for (const [emitter, event, listener] of listeners) emitter.on(event, listener);
  return () => {
    for (const [emitter, event, listener] of listeners) emitter.off(event, listener);
  };
}

/**
 * The given stdout into the new child's stdin, ended at its end (or when
 * it is destroyed: the child reads EOF). Read with read(), so that it
 * flows whatever listeners the user left on it. Once the new child's stdin
 * is gone (it exited), the stdout is left unread: under Node the parent
 * holds that socket's reading end, and the writer blocks.
 */
function feed(from, to) {
  if (to.destroyed) return;
  if (from.readableEnded || from.destroyed) {
    to.end();
    return;
  }
  let waiting = false;
  const pump = () => {
    waiting = false;
    for (let chunk = from.read(); chunk !== null; chunk = from.read()) {
      if (!to.write(chunk)) {
        waiting = true;
        return;
      }
    }
  };
  const onEnd = () => {
    stop();
    to.end();
  };
  const stop = listen([
    [from, 'readable', pump], [from, 'end', onEnd], [from, 'close', onEnd],
    [to, 'drain', () => { if (waiting) pump(); }], [to, 'close', () => stop()],
  ]);
  pump();
}

/**
 * The new child's output into the given stdin, not ended (under Node the
 * parent holds that stdin open, so the writer's exit is no EOF). Once that
 * stdin fails or closes, the output pipe is closed too, and the writer
 * gets SIGPIPE (or EPIPE) as under Node, writing into a closed socket. The
 * failures of these writes are the join's, not the user's: Node's parent
 * never wrote them.
 */
function drain(from, to) {
  if (to.destroyed) {
    from.destroy();
    return;
  }
  // Each writer joined adds its listeners to the user's stdin for a time:
  // many writers into one stdin are no leak (Node warns of none).
  const max = to.getMaxListeners();
  if (max !== 0) to.setMaxListeners(max + 1);
  let writing = 0;
  let ended = false;
  const ignore = () => {};
  const release = () => {
    if (!ended || writing !== 0 || !to.listeners('error').includes(ignore)) return;
    to.off('error', ignore);
    const now = to.getMaxListeners();
    if (now > 1) to.setMaxListeners(now - 1);
  };
  const written = () => {
    writing--;
    release();
  };
  const onEnd = () => {
    if (ended) return;
    ended = true;
    stop();
    release();
  };
  to.on('error', ignore);
  const stop = listen([
    [from, 'data', (chunk) => {
      writing++;
      if (!to.write(chunk, written)) from.pause();
    }],
    [from, 'end', onEnd], [from, 'close', onEnd],
    [to, 'drain', () => from.resume()],
    [to, 'close', () => {
      onEnd();
      from.destroy();
    }],
  ]);
}

/** Builds spawn() over a pool (`getPool()` is called at the first spawn). */
export function createSpawn(getPool) {
  const spawnOne = createSpawnOne(getPool);
  return function spawn(file, args, options) {
    // spawn(file, options) as Node reads it (the third argument ignored).
    const inArgs = args != null && typeof args === 'object' && !Array.isArray(args);
    const linked = childStreamsIn(inArgs ? args : options);
    if (linked === null) return spawnOne(file, args, options);
    const child = inArgs ? spawnOne(file, linked.options) : spawnOne(file, args, linked.options);
    joinStreams(child, linked.joins);
    return child;
  };
}

function createSpawnOne(getPool) {
  return function spawn(file, args, options) {
    checkRuntime();
    const norm = normalizeSpawnArguments(file, args, options);
    const opts = norm.options;
    validateTimeout(opts.timeout);
    validateAbortSignal(opts.signal, 'options.signal');
    const killSignal = sanitizeKillSignal(opts.killSignal);
    const plan = planStdio(opts.stdio);
    validateSerialization(opts.serialization);
    // Node's own spawn throws its ERR_ACCESS_DENIED; no pool is started.
    if (childProcessDenied()) return nodeSpawn(file, args, options);
    const pool = getPool();
    if (plan === null) {
      fallback(pool, 'unservable-stdio', norm.file);
      return nodeSpawn(file, args, options);
    }
    // Bun/Deno where their own spawn is faster, or Deno without the permissions the pool needs.
    if (delegates(pool.binary)) {
      fallback(pool, 'runtime', norm.file);
      return nodeSpawn(file, args, options);
    }
    if (!pool.serving()) {
      fallback(pool, pool.refusal(), norm.file);
      return nodeSpawn(file, args, options);
    }
    // The umask, the credentials or the nice value changed since the servers started: new
    // ones, started now, inherit them.
    if (pool.inherited !== null && inheritedChanged(pool.inherited)) pool.renew();
    const request = toRequest(norm, plan, pool.window);
    // What Node's spawn() learns from its fork, found out here: the errors
    // it throws are thrown, those it emits are emitted on the next tick,
    // with no pid and no server involved.
    const errno = checkSpawn({
      file: request.file, argv: request.argv, env: request.env, cwd: request.cwd, uid: opts.uid, gid: opts.gid,
    });
    if (errno !== 0 && throwsSynchronously(errno)) throw spawnError(errno);
    const child = new ChildProcess();
    const session = new Session(child, request, [file, args, options]);
    child._init(session, plan.length, (ms) => {
      pool.recordSpawn(ms);
      if (ms !== undefined) spawnOutcome(child);
    });
    // The caller's values, holes and non-strings as they are (Node's).
    child.spawnargs = norm.args;
    const pid = errno === 0 ? pool.submit(session) : 0;
    if (pid === -1) {
      fallback(pool, pool.refusal(), norm.file);
      return nodeSpawn(file, args, options);
    }
    // Where Node publishes its own children: on creation (its ChildProcess
    // constructor), then the spawn's trace. Only children a server serves:
    // node:child_process publishes those it spawns itself.
    childCreated(child);
    if (errno !== 0) {
      session.doomed = true;
      process.nextTick(failSpawn, session, errno);
    } else if (pid !== 0) {
      child.pid = pid;
      process.nextTick(spawned, child, pid);
    }
    spawnStart(child, norm);
    watchSpawnError(pool, child);
    superviseChild(child, opts, killSignal);
    return child;
  };
}
