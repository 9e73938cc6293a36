// The launch addon (native/addon/launch.c, built next to the server): starts
// spawn servers with posix_spawn instead of node:child_process (whose libuv
// forks the whole Node process, and blocks the event loop for as long as
// copying its page tables takes), and tells cheaply whether the C
// environment changed since the last spawn.
//
// Node only (Bun and Deno spawn without fork already, and their
// process.env is not the C environment), Linux only, and never required:
// without it (no compiler at install, SPAWNPOOL_ADDON=0, a load error)
// servers start through node:child_process and process.env is compared as
// text, as before.
import { EventEmitter } from 'node:events';
import { fileURLToPath } from 'node:url';
import { isMainThread } from 'node:worker_threads';
import { debuglog, types } from 'node:util';
import { runtime } from './runtime.js';
import { signalName } from './options.js';
import { errnoError } from './errors.js';

export const addonPath = fileURLToPath(new URL('../native/build/launch.node', import.meta.url));

/** The addon's exports, or null; `loadError` says why not, when it failed. */
export let loadError = null;
export const addon = load();
if (loadError !== null) debuglog('spawnpool')('launch addon not used (servers start through node:child_process): %s', loadError.message);

function load() {
  if (runtime !== 'node' || process.platform !== 'linux' || process.env.SPAWNPOOL_ADDON === '0') return null;
  const module = { exports: {} };
  try {
    process.dlopen(module, addonPath);
  } catch (err) {
    if (err.code !== 'ERR_DLOPEN_FAILED' || !/No such file/.test(err.message)) loadError = err;
    return null;
  }
  const { start, launched, reap, envState, receive } = module.exports;
  if (typeof start !== 'function' || typeof launched !== 'function' || typeof reap !== 'function'
    || typeof envState !== 'function' || typeof receive !== 'function') {
    loadError = new Error(`${addonPath} is not spawnpool's launch addon`);
    return null;
  }
  return module.exports;
}

/** An error shaped as node:child_process reports a spawn that failed. */
const spawnError = (file, errno) => Object.assign(errnoError(errno, `spawn ${file}`), { path: file });

/**
 * Starts `file` with `argv` (argv[0] included) and `env` ("K=V" strings),
 * stdio 0-2 shared, socket pairs' far ends on fds 3, 4 and 5. Returns
 * `{ launch, fd, feedFd, handoverFd }` (our ends, non-blocking) at once:
 * posix_spawn runs on a thread of the addon's, and `launchResult(launch)`
 * says how it went. Throws Node's spawn error (ENOENT, EACCES, EMFILE...)
 * for what can be known at once; a later failure closes the far ends.
 */
export function startProcess(file, argv, env) {
  const r = addon.start(file, argv, env);
  if (typeof r === 'number') throw spawnError(file, -r);
  return { launch: r[0], fd: r[1], feedFd: r[2], handoverFd: r[3] };
}

/**
 * How a startProcess() went: `{ pid }` once posix_spawn returned, `{ error }`
 * (Node's spawn error) if it failed, null while it runs.
 */
export function launchResult(launch, file) {
  const r = addon.launched(launch);
  if (r === 0) return null;
  return r > 0 ? { pid: r } : { error: spawnError(file, -r) };
}

/**
 * The next handover from the server's fd 5 (docs/protocol.md, "Handover"):
 * `{ id, fd, handle }`, `handle` the received fd (close-on-exec), or a
 * negative errno when it could not be received (-EMFILE); or a negative
 * errno (-EAGAIN: nothing waiting, -EPROTO: not a handover).
 */
export function receiveHandover(fd) {
  const r = addon.receive(fd);
  return typeof r === 'number' ? r : { id: r[0], fd: r[1], handle: r[2] };
}

// What a watch's callback hears when waitWritable's wait is over
// (native/addon/launch.c): no read's count, EOF or -errno is this.
const WATCH_WRITABLE = -0x80000000;

/**
 * A launched server's socket, read by the addon's watch (a libuv poll
 * handle) rather than by a net.Socket, whose first instance in a process
 * costs about 1.5 ms of Node's own first-run code. It has the part of a
 * net.Socket's surface lib/server.js uses: 'error' (on the next tick) and
 * 'close' (in the loop's check phase, where a net.Socket's close callback
 * would run), destroy(), end() (shuts down our side; reading goes on to
 * the server's EOF), ref(), unref(), `destroyed` and waitWritable(). Each read goes to
 * `onRead` as a view of `buffer`, which the next read overwrites. Frames
 * are written to `fd` directly (lib/server.js), never through this.
 */
class WatchedSocket extends EventEmitter {
  constructor(fd, buffer, onRead) {
    super();
    this.fd = fd;
    this.destroyed = false;
    this.onWritable = null;
    this.watch = addon.watch(fd, buffer, (n) => {
      if (this.destroyed) return;
      if (n === WATCH_WRITABLE) {
        const fn = this.onWritable;
        this.onWritable = null;
        fn?.();
      } else if (n > 0) {
        onRead(buffer.subarray(0, n));
      } else {
        this.destroy(n < 0 ? errnoError(-n, 'read') : undefined);
      }
    });
  }

  /**
   * `fn` runs once, as a callback of its own, when the socket can take
   * more bytes (lib/server.js: the server was behind on reading its
   * frames). False, and `fn` never runs, where the addon cannot wait
   * (one built before waitWritable).
   */
  waitWritable(fn) {
    if (this.destroyed || typeof addon.waitWritable !== 'function' || !addon.waitWritable(this.watch)) return false;
    this.onWritable = fn;
    return true;
  }

  /**
   * The fd stays open until 'close': lib/server.js writes to it until it
   * hears of the end, and a number closed sooner could be some other
   * file's by then (a handover's, a new server's socket).
   */
  destroy(err) {
    if (this.destroyed) return;
    this.destroyed = true;
    if (err !== undefined) process.nextTick(() => this.emit('error', err));
    setImmediate(() => {
      addon.unwatch(this.watch);
      this.emit('close', err !== undefined);
    });
  }

  end() {
    if (!this.destroyed) addon.shutdown(this.fd);
  }

  ref() {
    if (!this.destroyed) addon.refWatch(this.watch, true);
  }

  unref() {
    if (!this.destroyed) addon.refWatch(this.watch, false);
  }
}

/**
 * A child's pipe handed over by its server (docs/protocol.md, "Handover"),
 * read by the addon's watchPipe as libuv reads a pipe of Node's: each read
 * (at most 64 KiB, up to 32 in a row) goes to `onData` as a Buffer of its
 * own, in a callback of its own; the EOF (0) or a read error (an errno)
 * to `onEnd`, once. What a net.Socket over the fd would cost Node's main
 * thread per spawn (the socket, its handle, its stream state) is more than
 * relaying two chunks costs the server. pause() and resume() stop and
 * restart the reads, as readStop/readStart do; destroy() closes the fd.
 */
class PipeReader {
  constructor(fd, onData, onEnd) {
    this.paused = false;
    this.destroyed = false;
    this.watch = addon.watchPipe(fd, (r, n) => {
      if (typeof r === 'number') onEnd(r === 0 ? 0 : -r);
      else onData(n === r.length ? r : r.subarray(0, n));
    });
  }

  pause() {
    if (this.paused || this.destroyed) return;
    this.paused = true;
    addon.pauseWatch(this.watch, true);
  }

  resume() {
    if (!this.paused || this.destroyed) return;
    this.paused = false;
    addon.pauseWatch(this.watch, false);
  }

  ref() {
    if (!this.destroyed) addon.refWatch(this.watch, true);
  }

  unref() {
    if (!this.destroyed) addon.refWatch(this.watch, false);
  }

  destroy() {
    if (this.destroyed) return;
    this.destroyed = true;
    addon.unwatch(this.watch);
  }
}

/**
 * A PipeReader on `fd` (which it then owns), or null where the addon cannot
 * read it (not built with watchPipe, a worker thread, a libuv it does not
 * know): then a net.Socket reads it.
 */
export function readPipe(fd, onData, onEnd) {
  if (typeof addon?.watchPipe !== 'function') return null;
  const reader = new PipeReader(fd, onData, onEnd);
  return typeof reader.watch === 'number' ? null : reader;
}

/**
 * A WatchedSocket on `fd` (which it then owns, and closes at destroy()),
 * or null where the addon cannot watch it (an addon built before watch(),
 * a libuv it does not know): then read it with a net.Socket.
 */
export function watchSocket(fd, buffer, onRead) {
  if (typeof addon?.watch !== 'function') return null;
  const socket = new WatchedSocket(fd, buffer, onRead);
  return typeof socket.watch === 'number' ? null : socket;
}

/**
 * stat(2) of `path` through the addon, for the precheck: 0 with `out` (an
 * Int32Array of 3) set to mode, uid, gid, or a negative errno. null when
 * the addon is not there (use fs.statSync).
 */
export const statPath = typeof addon?.stat === 'function' ? addon.stat : null;

/**
 * write(2) of a whole Buffer on `fd` through the addon: the bytes taken, or
 * a negative errno (-EAGAIN: the socket is full). null without the addon
 * (use fs.writeSync).
 */
export const writeFd = typeof addon?.write === 'function' ? addon.write : null;

/**
 * `readFd(fd, buffer, offset)`: one read(2) into buffer[offset..]: the bytes
 * read, 0 at EOF, or a negative errno (-EAGAIN: nothing waiting), without
 * the exception fs.readSync throws for EAGAIN. null without the addon (or
 * an addon older than this function).
 */
export const readFd = typeof addon?.read === 'function' ? addon.read : null;

/**
 * `pid`'s exit, once it has exited: `{ code, signal }` as 'exit' reports
 * them, with `signal` a name. null while it runs. If it cannot be waited
 * for (reaped by someone else), `{ code: null, signal: null }`.
 */
export function reapProcess(pid) {
  const status = addon.reap(pid);
  if (status === -1) return null;
  if (status < -1) return { code: null, signal: null };
  const signo = status & 0x7f;
  return signo === 0 ? { code: (status >> 8) & 0xff, signal: null } : { code: null, signal: signalName(signo) ?? null };
}

// process.env is the C environment only on the main thread (a worker's is
// a copy) and only as long as nobody has replaced the object (a test that
// does `process.env = { ...saved }`): then it is a plain object that no
// setenv() follows. The real one refuses accessor properties, which tells
// it apart without changing anything.
let probed = null;
let probedReal = false;

function isRealEnv(env) {
  if (env === probed) return probedReal;
  probed = env;
  probedReal = false;
  if (types.isProxy(env)) return false;
  const key = '__spawnpool_env_probe__';
  try {
    Object.defineProperty(env, key, { get: () => '', configurable: true });
  } catch (err) {
    probedReal = err?.code === 'ERR_INVALID_OBJECT_DEFINE_PROPERTY';
    return probedReal;
  }
  delete env[key];
  return false;
}

/**
 * The strings of the snapshot envSnapshot() last handed out, encoded as a
 * SPAWN carries them (lib/protocol.js), or null when the addon cannot
 * (a string that is not exact UTF-8: JS encodes what its string became).
 */
export function envSnapshotBlock() {
  if (typeof addon?.envBlock !== 'function') return null;
  const block = addon.envBlock();
  return typeof block === 'number' ? null : block;
}

/**
 * What the launch addon knows of `env` (process.env) since the caller's
 * last look, `known` (the stamp it got then, or -1): null when the C
 * environment is unchanged since, else `[stamp, ...entries]`, its "K=V"
 * strings as process.env shows them, read under Node's lock. undefined
 * when that cannot be known cheaply (no addon, a worker thread, a
 * replaced process.env, a Node without the exported lock): then compare
 * the contents.
 */
export function envSnapshot(env, known) {
  if (addon === null || !isMainThread || !isRealEnv(env)) return undefined;
  const state = addon.envState(false);
  if (state === -1) return undefined;
  if (typeof state !== 'number') return state;
  if (state === known) return null;
  const fresh = addon.envState(true);
  return fresh === -1 ? undefined : fresh;
}
