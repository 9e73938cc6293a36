// The ChildProcess facade: Node's fields, events and ordering, mapped from
// the session's outcomes (lib/session.js) the way Node's own ChildProcess
// maps its process handle's callbacks (lib/internal/child_process.js).
import { EventEmitter } from 'node:events';
import { ChildProcess as NodeChildProcess } from 'node:child_process';
import { errnoError } from './errors.js';
import { toSignalNumber } from './options.js';
import { now } from './observe.js';

const kSession = Symbol('spawnpool.session');

// Bun's ChildProcess.prototype (our prototype's prototype) has getters
// without setters for some of Node's fields, and assigning to an inherited
// getter-only property throws in strict mode (an inherited setter would
// run instead): where the prototype has accessors for them (Bun) they are
// defined as own data properties. Node's has none, and plain assignments are far
// cheaper than five defineProperty calls per spawn.
const FIRST_FIELDS = ['connected', 'stdin', 'stdout', 'stderr', 'stdio'];
const GETTER_ONLY = FIRST_FIELDS.some((name) => {
  for (let proto = NodeChildProcess.prototype; proto !== null; proto = Object.getPrototypeOf(proto)) {
    const desc = Object.getOwnPropertyDescriptor(proto, name);
    if (desc !== undefined) return !('value' in desc);
  }
  return false;
});

/** A node:child_process-compatible ChildProcess served by a spawn server. */
export class ChildProcess extends EventEmitter {
  constructor() {
    super();
    this._closesNeeded = 1;
    this._closesGot = 0;
    if (GETTER_ONLY) {
      for (const name of FIRST_FIELDS) {
        Object.defineProperty(this, name, { value: null, writable: true, enumerable: true, configurable: true });
      }
    } else {
      // Created in the same order as under Bun: the same key order either way.
      this.connected = null;
      this.stdin = null;
      this.stdout = null;
      this.stderr = null;
      this.stdio = null;
    }
    this.connected = false;
    this.signalCode = null;
    this.exitCode = null;
    this.killed = false;
    this.spawnfile = null;
    this.spawnargs = [];
    this.pid = undefined;
    this.stdin = null;
    this.stdout = null;
    this.stderr = null;
    this.stdio = [];
    this[kSession] = null;
    this._onSpawned = null;
    this._startedAt = 0;   // spawn() called (now())
    this._spawnedAt = 0;   // its 'spawn': the process existed by then
  }

  /**
   * Publishes the session's streams in Node's fields. `stdioLength` is the
   * length of the user's stdio array; `onSpawned(ms)` learns the call →
   * 'spawn' latency (undefined on failure).
   */
  _init(session, stdioLength, onSpawned) {
    this[kSession] = session;
    this.spawnfile = session.request.file;
    this.spawnargs = session.request.argv;
    this._onSpawned = onSpawned;
    this._startedAt = now();
    const streams = session.streams;
    for (let fd = 1; fd <= 2; fd++) {
      if (streams[fd] === null) continue;
      this._closesNeeded++;
      streams[fd].on('close', () => maybeClose(this));
    }
    this.stdin = streams[0];
    this.stdout = streams[1];
    this.stderr = streams[2];
    // Built by push: a packed array (new Array(n).fill() is a holey one, filled in C++).
    const stdio = [];
    for (let fd = 0; fd < stdioLength; fd++) stdio.push(fd < 3 ? streams[fd] : null);
    this.stdio = stdio;
  }

  _spawned(pid) {
    this.pid = pid;
    this._spawnedAt = now();
    this._onSpawned(this._spawnedAt - this._startedAt);
    this.emit('spawn');
  }

  /** Node's onexit for a process that ran. */
  _exited(exitCode, signalCode) {
    if (signalCode !== null) this.signalCode = signalCode;
    else this.exitCode = exitCode;
    // The public field, as Node: a stream the user put there is destroyed.
    if (this.stdin) this.stdin.destroy();
    this.emit('exit', this.exitCode, this.signalCode);
    this._afterExit();
  }

  /**
   * Node's onexit with a negative code: the program could not be started.
   * `afterSpawn`: a parked child that failed to exec after 'spawn': its
   * 'exit' and 'close' follow later (Session.exitAfterFailure).
   */
  _spawnFailed(errno, afterSpawn = false) {
    if (!afterSpawn) this._onSpawned(undefined);
    this.exitCode = -errno;
    if (this.stdin) this.stdin.destroy();
    const err = errnoError(errno, `spawn ${this.spawnfile}`);
    err.path = this.spawnfile;
    err.spawnargs = this.spawnargs.slice(1);
    if (afterSpawn) this[kSession].exitAfterFailure();
    this.emit('error', err);
    if (!afterSpawn) this._afterExit();
  }

  _afterExit() {
    // Untouched streams are drained on the next tick (the user's last
    // chance to consume them), so that they end and 'close' can follow.
    process.nextTick(flushStdio, this);
    maybeClose(this);
  }

  _killError(errno) {
    this.emit('error', errnoError(errno, 'kill'));
  }

  /** Node's kill(): validates the signal, returns whether it was sent. */
  kill(sig) {
    const signal = sig === 0 ? sig : toSignalNumber(sig === undefined ? 'SIGTERM' : sig);
    const session = this[kSession];
    // A spawn already known to fail (before its 'error'): no process to
    // signal, as Node 22's kill() finds (Node 20's signals its own group).
    if (session === null || !session.alive || session.doomed) return false;
    session.kill(signal);
    this.killed = true;
    return true;
  }

  ref() {
    this[kSession]?.refProcess(true);
  }

  unref() {
    this[kSession]?.refProcess(false);
  }

  [Symbol.dispose]() {
    if (!this.killed) this.kill();
  }
}
// `instanceof ChildProcess` from node:child_process holds, as libraries check it.
Object.setPrototypeOf(ChildProcess.prototype, NodeChildProcess.prototype);

/** Marks a stream given as another spawn's stdio: no flush takes its bytes (Node's kIsUsedAsStdio). */
export const kUsedAsStdio = Symbol('spawnpool.usedAsStdio');

// Node's flushStdio: the public stdio array, whatever the user put there.
function flushStdio(child) {
  const stdio = child.stdio;
  if (stdio == null) return;
  for (let i = 0; i < stdio.length; i++) {
    const stream = stdio[i];
    if (!stream || !stream.readable || typeof stream.resume !== 'function' || stream[kUsedAsStdio]) continue;
    stream.resume();
  }
}

function maybeClose(child) {
  if (++child._closesGot === child._closesNeeded) {
    child.emit('close', child.exitCode, child.signalCode);
  }
}
