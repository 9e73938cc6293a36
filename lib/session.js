// One child's lifecycle on a spawn server, and the only place that decides
// how a child ends.
//
//            SPAWNED                 EXIT
//   spawning ───────▶ running ───────────────▶ exited
//      │                 │  server lost:          ▲
//      │                 └── SIGKILL, ends as ────┘
//      │ SPAWN_ERROR                killed by SIGKILL
//      ▼
//    failed          (server lost while spawning: the pool resubmits
//                     the request to a live server; state stays spawning)
//
// The session keeps its own references to the stream objects it created:
// the public fields (child.stdout, child.stdio[i]) are the user's to
// replace, frames always go to these. `wire[fd]` says whether frames still
// flow for a pipe (or, once the server handed it over, whether its own
// reads still do: see streams.js); with the process's end it decides when
// the request id may be released, and it drives whether the child keeps
// the event loop alive. Until every child spawned with it has its spawn outcome, its
// other frames wait (spawn cohorts, lib/delivery.js). The facade
// (ChildProcess) turns session callbacks into Node's events; the session
// never emits anything itself.
import { AsyncResource } from 'node:async_hooks';
import { closeSync, existsSync, readFileSync } from 'node:fs';
import { constants } from 'node:os';
import {
  T, STDIO_PIPE, encodeCredit, encodeReap, encodeStdin, encodeStdinEnd, encodeClose, encodeKill,
} from './protocol.js';
import { ChildReadable, ChildWritable, DROP_LINGER_MS } from './streams.js';
import { signalName } from './options.js';
import { asCallback, checkPhase, closePhase, joinCohort, leaveCohort } from './delivery.js';
import { now } from './observe.js';

const HOLD_CLOSE_MS = 5;

const { EPIPE, EIO } = constants.errno;
const SIGKILL = constants.signals.SIGKILL;

export const SPAWNING = 'spawning';
export const RUNNING = 'running';
export const EXITED = 'exited';
export const FAILED = 'failed';

/**
 * Whether `pid` is still the process known by `spawnedAt` (now()'s clock).
 * A lost server's children are killed by pid, and the pid of one that
 * exited since (its zombie reaped by init) may be another process's by
 * then: its start (/proc/PID/stat, in the kernel's 10 ms ticks since
 * boot) must not be later than that. A zombie counts as ours: its pid is
 * not free, and it may be a leader whose other threads still run. What
 * cannot be read (no /proc, hidepid) counts as ours unless kill(pid, 0)
 * says there is no such process, as before the check.
 */
export function stillOurs(pid, spawnedAt) {
  let stat;
  let uptime;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    uptime = readFileSync('/proc/uptime', 'latin1');
  } catch (err) {
    // No entry where /proc is there: gone. Else ask the kernel.
    if (err.code === 'ENOENT' && existsSync('/proc/self/stat')) return false;
    try {
      process.kill(pid, 0);
    } catch (e) {
      return e.code !== 'ESRCH';
    }
    return true;
  }
  // After the command's ')': field 3 (the state) on; the start is field 22.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const startMs = Number(fields[19]) * 10;
  const spawnedMs = Number.parseFloat(uptime) * 1000 - (now() - spawnedAt);
  return !(startMs > spawnedMs + 20);
}

/** Hands `msg` to `session` in the child's own async context (ALS, hooks). */
export function deliver(session, msg) {
  session.resource.runInAsyncScope(session.onMessage, session, msg);
}

export class Session {
  /**
   * `child` receives the outcome (_spawned, _exited, _spawnFailed,
   * _killError); `request` is the wire request (protocol encodeSpawn);
   * `spawnArgs` what the user passed to spawn().
   * Sends nothing: the pool hands it to a server (attach()).
   */
  constructor(child, request, spawnArgs) {
    this.child = child;
    this.request = request;
    this.spawnArgs = spawnArgs;   // for node:child_process, if no server can serve it
    this.state = SPAWNING;
    this.link = null;
    this.id = 0;
    this.pid = 0;
    this.streams = [null, null, null];
    this.wire = [false, false, false];
    this.pipeRefed = [true, true, true];
    this.processRefed = true;
    this.writeHeld = false;
    this.held = false;
    this.stdinEnded = false;
    this.killSignal = -1;
    this.doomed = false;         // found to fail before any server saw it (spawn.js)
    this.exitStatus = null;      // [code, signal] of an EXIT whose REAPED is awaited
    this.heldCloses = null;
    this.deferred = null;        // frames waiting for handed-over pipes (defer())
    this.directFresh = false;    // one was handed over in this loop iteration
    this.cohort = null;          // joined when first handed to a server
    this.leftCohort = false;
    this.resource = new AsyncResource('SPAWNPOOL_CHILD', { requireManualDestroy: true });
    this.unclosed = 0;           // stdio streams whose 'close' has not run yet
    this.destroyDue = false;     // the resource's destroy waits for them
    for (let fd = 0; fd < 3; fd++) {
      if (request.stdio[fd] !== STDIO_PIPE) continue;
      this.wire[fd] = true;
      this.streams[fd] = fd === 0 ? new ChildWritable(this) : new ChildReadable(this, fd, request.window);
      this.unclosed++;
    }
  }

  /**
   * The child's async resource is destroyed once nothing more runs in its
   * scope: its stdio's 'close' events run there (lib/streams.js), and, as
   * a pipe handle's destroy comes after its close callback under Node, the
   * destroy waits for the last of them.
   */
  destroyResource() {
    if (this.unclosed > 0) this.destroyDue = true;
    else this.resource.emitDestroy();
  }

  /** A stdio stream's 'close' has run (lib/streams.js). */
  streamClosed() {
    if (--this.unclosed === 0 && this.destroyDue) {
      this.destroyDue = false;
      this.resource.emitDestroy();
    }
  }

  get running() {
    return this.state === RUNNING;
  }

  get alive() {
    return this.state === SPAWNING || this.state === RUNNING;
  }

  /**
   * Hands the request to a server connection (`link`: send, ref, unref,
   * release) under `id`, whose SPAWN has been sent already (`frame` null)
   * or goes now. With the pid of a parked child the child runs from here
   * on (the pid is the caller's at once); without (pid 0) it is spawning
   * until SPAWNED, and attach() is called again with a new link if the
   * server dies before answering: what the user already did (stdin, end,
   * destroy, kill) is replayed behind the SPAWN.
   */
  attach(link, id, pid = 0, frame = null) {
    if (pid === 0 && this.link === null && !this.leftCohort && this.cohort === null) this.cohort = joinCohort(deliver);
    const held = this.held;
    if (held) this.setHeld(false);
    this.link = link;
    this.id = id;
    if (pid !== 0) {
      this.state = RUNNING;
      this.pid = pid;
    }
    if (frame !== null) link.send(frame);
    const stdin = this.streams[0];
    if (stdin !== null && stdin._pending !== null) stdin._replay();
    if (this.stdinEnded && this.wire[0]) link.send(encodeStdinEnd(id));
    for (let fd = 0; fd < 3; fd++) {
      if (this.streams[fd] !== null && !this.wire[fd]) link.send(encodeClose(id, fd));
    }
    if (this.killSignal !== -1) link.send(encodeKill(id, this.killSignal));
    this.update();
  }

  /**
   * Whether this frame must wait for the check phase: a handed-over pipe
   * is read by libuv directly, and what it holds was written before what
   * the server relays now (the child's other stream, its exit). Under
   * Node one poll phase reads both pipes in the order they became
   * readable; a frame delivered in the check phase comes after the reads
   * of the same iteration, so the handed-over pipe's bytes come first.
   * A pipe handed over in this iteration is first polled in the next one:
   * then the frames wait for that iteration's check phase. Frames also
   * wait behind those a throwing listener left (Server.postpone).
   */
  deferring() {
    return this.deferred !== null || this.streams[1]?._reading() === true || this.streams[2]?._reading() === true;
  }

  defer(msg) {
    if (this.deferred === null) {
      this.deferred = [];
      const flush = checkPhase(() => this.flushDeferred());
      setImmediate(this.directFresh ? () => setImmediate(flush) : flush);
    }
    this.deferred.push(msg);
  }

  /** Delivers the deferred frames now (also when the server is lost: they came before). */
  flushDeferred() {
    const msgs = this.deferred;
    if (msgs === null) return;
    this.deferred = null;
    for (let i = 0; i < msgs.length; i++) {
      try {
        asCallback(deliver, this, msgs[i]);
      } catch (err) {
        // The rest in a later callback, as Server.deliver does.
        this.deferred = msgs.slice(i + 1).concat(this.deferred ?? []);
        if (this.deferred.length === 0) this.deferred = null;
        else setImmediate(checkPhase(() => this.flushDeferred()));
        throw err;
      }
    }
  }

  /** One frame from the server, for this child. */
  onMessage(msg) {
    const cohort = this.cohort;
    if (cohort !== null && msg.type !== T.SPAWNED && msg.type !== T.SPAWN_ERROR) {
      if (cohort.holding) {
        cohort.parked.push(this, msg);
        return;
      }
      this.cohort = null;
    }
    switch (msg.type) {
      case T.SPAWNED:
        if (this.state !== SPAWNING) return;
        this.state = RUNNING;
        this.pid = msg.pid;
        this.update();
        this.leaveCohort();
        this.child._spawned(msg.pid);
        break;
      case T.DATA:
        if (this.wire[msg.fd]) this.streams[msg.fd]._deliver(msg.data);
        break;
      case T.END:
        this.onEnd(msg.fd, msg.errno);
        break;
      case T.HANDED:
        this.handedOver(msg);
        break;
      case T.WROTE:
        this.streams[0]?._acked(msg.bytes);
        break;
      case T.EXIT: {
        // A signal Node has no name for reads as a plain exit with code 0,
        // as libuv reports it (exit_status 0, signal name "").
        const name = msg.signal === 0 ? null : signalName(msg.signal) ?? null;
        const code = name === null ? Math.max(msg.code, 0) : null;
        if (this.link?.reaps !== true) {
          this.exit(code, name);
          break;
        }
        // Node reaps the child right before 'exit': until then its pid
        // names the zombie (a kill(pid) never reaches another process),
        // and from 'exit' on nothing. The server reaps on REAP and answers
        // REAPED, which brings 'exit'.
        if (this.exitStatus !== null || !this.alive) break;
        this.exitStatus = [code, name];
        this.link.sendLazy(encodeReap(this.id));
        // Node has the exit in hand here: it holds the loop for it, and the
        // closes of pipes that ended with it wait for it (holdClose).
        this.update();
        break;
      }
      case T.REAPED:
        if (this.exitStatus !== null) this.exit(this.exitStatus[0], this.exitStatus[1]);
        break;
      case T.SPAWN_ERROR:
        if (this.state === RUNNING) this.execFailed(msg.errno);
        else this.spawnFailed(msg.errno);
        break;
      case T.KILL_ERROR:
        if (this.alive) this.child._killError(msg.errno);
        break;
      default:
        break;
    }
  }

  /**
   * HANDED: the server's end of the pipe is ours now (`msg.handle`), read
   * as Node reads one; or it could not be had here (`msg.error`, EMFILE):
   * then the stream ends with that read error, its bytes lost.
   */
  handedOver(msg) {
    const { fd, handle } = msg;
    if (!this.wire[fd]) {
      // Destroyed by the user meanwhile: closed as a dropped stream is
      // (lib/streams.js, _dropDirect), once the writer had time to block.
      if (handle !== undefined) setTimeout(() => closeSync(handle), DROP_LINGER_MS).unref();
      return;
    }
    if (handle === undefined) {
      this.onEnd(fd, msg.error);
      return;
    }
    try {
      this.streams[fd]._handover(handle);
    } catch (err) {
      closeSync(handle);
      this.onEnd(fd, -err.errno || EIO);
      return;
    }
    if (!this.directFresh) {
      this.directFresh = true;
      setImmediate(() => { this.directFresh = false; });
    }
  }

  onEnd(fd, errno) {
    if (!this.wire[fd]) return;
    this.wire[fd] = false;
    if (fd === 0) {
      // After the child's EXIT (its REAPED awaited), stdin bytes the server
      // could not write are lost with the child: under Node the exit's
      // destroy() cancels a write still pending, without an error.
      this.streams[0]._failed(errno, this.exitStatus !== null);
    } else {
      this.streams[fd]._eof(errno);
    }
    this.update();
  }

  /**
   * A pipe that reached EOF closes while the child still runs. Under Node
   * its handle's close callback and the child's exit are usually seen in
   * the same loop iteration (the child closes its pipes as it exits), and
   * the exit runs first (poll phase before close phase). The server's EXIT
   * may come in a later read: hold the close for it, briefly.
   */
  holdClose(close) {
    if (this.state !== RUNNING) return false;
    if (this.heldCloses === null) {
      this.heldCloses = [];
      // Released by the exit: at once if it comes within HOLD_CLOSE_MS,
      // else (the child runs on) by the timer, unless the exit was read
      // by then and only its REAPED is awaited.
      setTimeout(() => { if (this.exitStatus === null) this.releaseCloses(); }, HOLD_CLOSE_MS).unref();
    }
    this.heldCloses.push(close);
    return true;
  }

  releaseCloses() {
    const held = this.heldCloses;
    this.heldCloses = null;
    if (held !== null) for (const close of held) closePhase(close);
  }

  /** The child exited (or was lost with its server: code null, 'SIGKILL'). */
  exit(code, signal) {
    if (!this.alive) return;
    this.exitStatus = null;
    this.state = EXITED;
    // The server closed stdin at reap: bytes still in flight never arrive.
    if (this.wire[0]) {
      this.wire[0] = false;
      this.streams[0]._failed(EPIPE, true);
    }
    this.update();
    // The held closes were queued by libuv before the exit's stdin close.
    this.releaseCloses();
    this.child._exited(code, signal);
    // _exited destroys child.stdin, as Node's exit does, which cancels a
    // write still pending; ours too where the user replaced that field.
    const stdin = this.streams[0];
    if (stdin?._pending && !stdin.destroyed) stdin.destroy();
  }

  /** Frames held for the cohort go on once every member spawned or failed. */
  leaveCohort() {
    if (this.cohort === null || this.leftCohort) return;
    this.leftCohort = true;
    leaveCohort(this.cohort);
  }

  spawnFailed(errno) {
    if (this.state !== SPAWNING) return;
    this.state = FAILED;
    this.leaveCohort();
    this.wire.fill(false);
    // Node's pipes of a failed spawn are real ones whose other end is
    // closed: they read their EOF in a later poll phase and close in the
    // close phase, so that a 'close' listener added after an await (of the
    // 'error', say) still hears it. The EOF comes in the check phase here.
    if (this.streams[1] !== null || this.streams[2] !== null) {
      setImmediate(checkPhase(() => {
        this.streams[1]?._eof(0);
        this.streams[2]?._eof(0);
      }));
    }
    this.update();
    this.reportFailure(errno, false);
    // Found out before any server saw it (lib/precheck.js): nothing to release.
    if (this.link === null) this.destroyResource();
  }

  /**
   * A parked child could not exec (the program vanished after spawn()
   * found it, say): it never ran. Nothing more comes for it; its pipes end.
   * stdin ends as a failed spawn's (spawnFailed): destroyed without an
   * error, a pending write's callback hearing EPIPE, no 'error' event
   * (tinyexec pipes into it from spawn() on, listening on nothing).
   */
  execFailed(errno) {
    this.state = FAILED;
    for (let fd = 1; fd < 3; fd++) {
      if (!this.wire[fd]) continue;
      this.wire[fd] = false;
      this.streams[fd]._eof(0);
    }
    this.wire[0] = false;
    this.update();
    this.releaseCloses();
    this.reportFailure(errno, true);
  }

  /**
   * The child's 'error' for a spawn that failed (`afterSpawn`: its exec),
   * stdin ending as Node's does then: destroyed without an error (by the
   * child, as child.stdin, or here if the user replaced that), a pending
   * write's callback hearing EPIPE.
   */
  reportFailure(errno, afterSpawn) {
    const stdin = this.streams[0];
    stdin?._failAtDestroy(EPIPE);
    this.child._spawnFailed(errno, afterSpawn);
    if (stdin !== null && !stdin.destroyed) stdin.destroy();
  }

  /**
   * After the 'error' of an exec that failed after 'spawn': 'exit' (code
   * -errno as child.exitCode, signal null), then 'close'. Node never emits
   * 'exit' for a failed spawn, but code written for Node waits for one
   * after a 'spawn' (execa listens for it again once the 'error' has
   * settled its promises: in the close phase it has), and a wrapper doing
   * process.exit(code) in 'exit' must not exit 0. The child's 'close'
   * comes in the next close phase, after the immediates an 'exit' listener
   * queued, as Node's 'close' follows a poll-phase 'exit'. The async
   * resource waits for both.
   */
  exitAfterFailure() {
    const child = this.child;
    const inScope = (fn) => () => this.resource.runInAsyncScope(fn);
    this.unclosed++;
    closePhase(inScope(() => {
      try {
        child.emit('exit', child.exitCode, child.signalCode);
      } finally {
        closePhase(inScope(() => {
          try {
            child._afterExit();
          } finally {
            this.streamClosed();
          }
        }));
      }
    }));
  }

  /**
   * The server died after answering the SPAWN. Nothing can reap or signal
   * the child any more: it is killed (by pid: see docs) and ends as a child
   * killed by SIGKILL, its output delivered up to the loss, then EOF. No
   * 'error': code written for Node has no listener for one on a running
   * child.
   */
  lost() {
    this.leaveCohort();
    // What the server sent before it died (an EXIT, say) counts. A
    // listener that throws must not keep the child from its end: the
    // first error surfaces once the rest is done, later ones on ticks.
    let thrown = null;
    while (this.deferred !== null) {
      try {
        this.flushDeferred();
      } catch (err) {
        if (thrown === null) thrown = { err };
        else process.nextTick(() => { throw err; });
      }
    }
    // An exit the server reported stands (its zombie is init's to reap now).
    if (this.state === RUNNING && this.pid > 0 && this.exitStatus === null &&
        stillOurs(this.pid, this.child._spawnedAt || now())) {
      try { process.kill(this.pid, SIGKILL); } catch { /* gone already */ }
    }
    // Handed-over pipes too: a grandchild may hold one open for ever.
    for (const fd of [1, 2]) this.onEnd(fd, 0);
    if (this.state === RUNNING) {
      if (this.exitStatus !== null) this.exit(this.exitStatus[0], this.exitStatus[1]);
      else this.exit(null, 'SIGKILL');
    }
    this.release();
    if (thrown !== null) throw thrown.err;
  }

  /** Releases the id once the server sends nothing more for it. */
  release() {
    if (this.alive || this.wire[1] || this.wire[2] || this.link === null) return;
    this.setHeld(false);
    const link = this.link;
    this.link = null;
    link.release(this.id);
    this.destroyResource();
  }

  // The event loop is held, as Node's handles hold it: until the spawn's
  // outcome (Node spawns synchronously), by the running process unless
  // unref()'d, by each open readable pipe and by a pending stdin write
  // unless that stream was unref()'d.
  wantsLoop() {
    if (this.state === SPAWNING || this.exitStatus !== null) return true;
    if (this.state === RUNNING && this.processRefed) return true;
    if (this.wire[1] && this.pipeRefed[1]) return true;
    if (this.wire[2] && this.pipeRefed[2]) return true;
    return this.wire[0] && this.writeHeld && this.pipeRefed[0];
  }

  setHeld(held) {
    if (held === this.held || this.link === null) return;
    this.held = held;
    if (held) this.link.ref();
    else this.link.unref();
  }

  update() {
    this.setHeld(this.wantsLoop());
    this.release();
  }

  // Called by the facade and the streams.

  pipeOpen(fd) {
    return this.wire[fd];
  }

  send(frame) {
    if (this.link !== null) this.link.send(frame);
  }

  credit(fd, bytes) {
    if (this.state !== SPAWNING) this.send(encodeCredit(this.id, fd, bytes));
  }

  stdin(data) {
    if (this.link !== null) this.link.send(encodeStdin(this.id, data));
  }

  /**
   * end() of stdin. Node's shutdown(2) waits for the loop's next turn
   * (libuv performs it once the writes before it are done), so a kill()
   * made in the same tick as end() signals a child that has not seen its
   * EOF yet: the STDIN_END goes in the check phase, after such a KILL.
   */
  stdinEnd() {
    if (!this.wire[0] || this.stdinEnded) return;
    this.stdinEnded = true;
    setImmediate(() => {
      if (this.wire[0]) this.send(encodeStdinEnd(this.id));
    });
  }

  /**
   * The user destroyed a stream: the server closes its end, no END
   * follows (a handed-over one is closed by its stream, here).
   */
  closePipe(fd, handedOver = false) {
    if (!this.wire[fd]) return;
    this.wire[fd] = false;
    if (!handedOver) this.send(encodeClose(this.id, fd));
    this.update();
  }

  refPipe(fd, refed) {
    this.pipeRefed[fd] = refed;
    this.update();
  }

  refProcess(refed) {
    this.processRefed = refed;
    this.update();
  }

  holdWrite(held) {
    this.writeHeld = held;
    this.update();
  }

  kill(signal) {
    if (this.state === SPAWNING) this.killSignal = signal;
    // In the kernel before kill() returns, as Node's kill(2) (signal-exit,
    // execa's cleanup, kills its children and re-raises the signal at once).
    this.link?.sendNow(encodeKill(this.id, signal));
  }
}
