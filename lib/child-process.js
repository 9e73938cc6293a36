// The ChildProcess facade: Node's events, fields and ordering, fed by frames
// from a spawn server instead of a libuv process handle.
import { EventEmitter } from 'node:events';
import { ChildProcess as NodeChildProcess } from 'node:child_process';
import { T, encodeCredit, encodeStdin, encodeStdinEnd, encodeClose, encodeKill, STDIO_PIPE } from './protocol.js';
import { ChildReadable, ChildWritable } from './streams.js';
import { errnoError, poolError } from './errors.js';
import { toSignalNumber, signalName } from './options.js';

/** One child's connection to its server: id, frames out, event-loop refs. */
class Wire {
  constructor(child, server, request) {
    this.server = server;
    this.id = server.spawn(child, request);
    this.open = new Set([-1]);
    this.refs = 0;
  }

  credit(fd, bytes) { this.server.send(encodeCredit(this.id, fd, bytes)); }
  stdin(data) { this.server.send(encodeStdin(this.id, data)); }
  stdinEnd() { this.server.send(encodeStdinEnd(this.id)); }
  closeFd(fd) { this.server.send(encodeClose(this.id, fd)); }
  kill(signal) { this.server.send(encodeKill(this.id, signal)); }

  hold() {
    if (this.refs++ === 0) this.server.ref();
  }

  release() {
    if (--this.refs === 0) this.server.unref();
  }

  /** fd (or -1 for the process) will see no more frames. */
  fdDone(fd) {
    this.open.delete(fd);
    if (this.open.size === 0) this.server.release(this.id);
  }
}

/** A node:child_process-compatible ChildProcess served by a spawn server. */
export class ChildProcess extends EventEmitter {
  constructor() {
    super();
    this._closesNeeded = 1;
    this._closesGot = 0;
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
    this._wire = null;
    this._alive = false;
    this._refed = true;
    this._startedAt = 0;
    this._spawning = false;
  }

  /**
   * Sends the spawn to `server`. `request` is the wire request (protocol
   * encodeSpawn), `stdioLength` the length of the user's stdio array,
   * `onSpawned(ms)` told the call → 'spawn' latency (undefined on failure).
   */
  _spawn(server, request, stdioLength, onSpawned) {
    this.spawnfile = request.file;
    this.spawnargs = request.argv;
    this._onSpawned = onSpawned;
    this._startedAt = performance.now();
    const wire = new Wire(this, server, request);
    this._wire = wire;
    this._alive = true;
    // One hold for the process (dropped by unref() or exit), one until the
    // spawn's outcome is known: Node spawns synchronously, so even an
    // unref()'d child exists, and sees 'spawn', before the parent can exit.
    wire.hold();
    wire.hold();
    this._spawning = true;
    this.stdio = new Array(stdioLength).fill(null);
    for (let fd = 0; fd < 3; fd++) {
      if (request.stdio[fd] !== STDIO_PIPE) continue;
      if (fd === 0) {
        this.stdin = this.stdio[0] = new ChildWritable(wire);
        continue;
      }
      const stream = new ChildReadable(wire, fd, request.window);
      wire.open.add(fd);
      this._closesNeeded++;
      stream.on('close', () => maybeClose(this));
      this.stdio[fd] = stream;
      if (fd === 1) this.stdout = stream;
      else this.stderr = stream;
    }
  }

  _onMessage(msg) {
    switch (msg.type) {
      case T.SPAWNED:
        this._settled();
        this.pid = msg.pid;
        this._onSpawned(performance.now() - this._startedAt);
        this.emit('spawn');
        break;
      case T.DATA:
        this.stdio[msg.fd]?._onData(msg.data);
        break;
      case T.END:
        if (msg.fd === 0) this.stdin?._onEnd(msg.errno);
        else this.stdio[msg.fd]?._onEnd(msg.errno);
        break;
      case T.WROTE:
        this.stdin?._onWrote(msg.bytes);
        break;
      case T.EXIT: {
        // A signal Node has no name for reads as a plain exit with code 0,
        // as libuv reports it (exit_status 0, signal name "").
        const name = msg.signal === 0 ? null : signalName(msg.signal) ?? null;
        this._onExit(name === null ? Math.max(msg.code, 0) : null, name);
        break;
      }
      case T.SPAWN_ERROR:
        this._settled();
        this._onSpawned(undefined);
        this._onSpawnError(msg.errno);
        break;
      case T.KILL_ERROR:
        this.emit('error', errnoError(msg.errno, 'kill'));
        break;
      default:
        break;
    }
  }

  _settled() {
    if (!this._spawning) return;
    this._spawning = false;
    this._wire.release();
  }

  _exited() {
    this._alive = false;
    if (this._refed) this._wire.release();
    if (this.stdin !== null) this.stdin._onExit();
  }

  _onExit(exitCode, signalCode) {
    if (!this._alive) return;
    if (signalCode !== null) this.signalCode = signalCode;
    else this.exitCode = exitCode;
    this._exited();
    this._wire.fdDone(-1);
    this.emit('exit', this.exitCode, this.signalCode);
    this._processOver();
  }

  /** Node's tail of onexit: drain untouched streams, then 'close' when all closed. */
  _processOver() {
    process.nextTick(flushStdio, this);
    maybeClose(this);
  }

  /** The program could not be started: Node's onexit with a negative code. */
  _onSpawnError(errno) {
    this.exitCode = -errno;
    this._exited();
    const err = errnoError(errno, `spawn ${this.spawnfile}`);
    err.path = this.spawnfile;
    err.spawnargs = this.spawnargs.slice(1);
    this._endStreams();
    this._wire.fdDone(-1);
    this.emit('error', err);
    this._processOver();
  }

  /** The server died with this child in flight (see docs/behaviour-differences.md). */
  _onServerLost(cause) {
    this._settled();
    const running = this._alive;
    if (running && this.pid !== undefined) {
      // Nobody can reap or signal it any more: don't leave it running unowned.
      try { process.kill(this.pid, 'SIGKILL'); } catch { /* already gone */ }
    }
    // Exited but with output still on its way: that output is lost, which
    // must not pass for a clean end of stream.
    const cutShort = this.stdio.some((s, fd) => fd > 0 && s?._open);
    if (running) this._exited();
    this._endStreams();
    if (running || cutShort) {
      this.emit('error', poolError('ERR_SPAWNPOOL_SERVER_DIED',
        `spawnpool: the spawn server (pid ${this._wire.server.pid}) died while running ${this.spawnfile}`, cause));
    }
    if (running) this._processOver();
  }

  _endStreams() {
    for (let fd = 1; fd < 3; fd++) this.stdio[fd]?._onEnd(0);
  }

  /** Node's kill(): validates the signal, returns whether it was sent. */
  kill(sig) {
    const signal = sig === 0 ? sig : toSignalNumber(sig === undefined ? 'SIGTERM' : sig);
    if (!this._alive) return false;
    this._wire.kill(signal);
    this.killed = true;
    return true;
  }

  ref() {
    if (this._alive && !this._refed) this._wire.hold();
    this._refed = true;
  }

  unref() {
    if (this._alive && this._refed) this._wire.release();
    this._refed = false;
  }

  [Symbol.dispose]() {
    if (!this.killed) this.kill();
  }
}
// `instanceof ChildProcess` from node:child_process holds, as libraries check it.
Object.setPrototypeOf(ChildProcess.prototype, NodeChildProcess.prototype);

function flushStdio(child) {
  for (const stream of child.stdio) {
    if (stream && stream.readable) stream.resume();
  }
}

function maybeClose(child) {
  if (++child._closesGot === child._closesNeeded) {
    child.emit('close', child.exitCode, child.signalCode);
  }
}
