// One spawn server: starts the native binary with a private socketpair on
// its fd 3, speaks the protocol, and hands each frame to the session it
// names, one frame per emulated libuv callback (lib/delivery.js).
import { nodeSpawn } from './node-child-process.js';
import { debuglog } from 'node:util';
import { constants } from 'node:os';
import { isMainThread } from 'node:worker_threads';
import { Decoder, T, encodeHello, encodeSpawn, ProtocolError, VERSION, MAX_FRAME } from './protocol.js';
import { asCallback } from './delivery.js';

const debug = debuglog('spawnpool');
const EMPTY = Buffer.alloc(0);
const { E2BIG } = constants.errno;
const HANDSHAKE_TIMEOUT_MS = 5000;

// The server keeps only what it needs from our environment: sanitizer and
// debug switches. Children get their env in each SPAWN, never the server's.
const passEnv = (env) => Object.fromEntries(Object.entries(env).filter(([k]) =>
  k.startsWith('SPAWND_') || k.endsWith('SAN_OPTIONS')));

// What the server's exit status says (docs/protocol.md, "Lifetime").
const EXIT_MEANING = {
  2: 'it speaks another protocol version (rebuild it: npm rebuild spawnpool)',
  3: 'it reported a protocol error',
  100: 'it is not a spawnd (usage error)',
  111: 'a system call failed at its start',
};

function deliver(session, msg) {
  session.resource.runInAsyncScope(session.onMessage, session, msg);
}

export class Server {
  /**
   * Starts the binary now; frames may be sent at once (the server reads them
   * after the handshake). Tells `pool` when it dies (onServerGone) and when
   * a child is done with it (onRelease). In a worker thread the server
   * detaches (forks once; the process we started exits at once and is
   * reaped while the worker lives), so no zombie outlives the worker.
   */
  constructor(binary, pool) {
    this.sessions = new Map();
    this.nextId = 1;
    this.refs = 0;
    this.ready = false;
    this.gone = false;
    this.pool = pool;
    this.queue = [];
    this.queued = false;
    this.startError = null;
    this.exitStatus = null;
    this.detached = !isMainThread;
    this.exits = [];             // [session, msg, ...] held to the end of a read
    this.exitAt = 0;
    this.decoder = new Decoder((msg) => this.dispatch(msg));
    this.flushNow = () => this.flush();

    const args = this.detached ? ['--detach', String(process.pid)] : [String(process.pid)];
    // Inherited stdio is what 'inherit' and stdio 0-2 give the children.
    this.proc = nodeSpawn(binary, args, {
      stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
      env: passEnv(process.env),
    });
    this.pid = this.detached ? undefined : this.proc.pid;
    this.exited = new Promise((resolve) => {
      this.proc.once('exit', (code, signal) => {
        if (!this.detached) this.exitStatus = signal ?? code;
        resolve();
      });
      // ENOENT/EACCES/EMFILE/EAGAIN: Node reports them asynchronously.
      this.proc.once('error', (err) => {
        this.startError = err;
        resolve();
        this.die(err);
      });
    });
    this.socket = this.proc.stdio?.[3] ?? null;
    this.dead = false;
    if (this.proc.pid === undefined || this.socket === null) {
      // Not started: the 'error' above follows and tells the pool.
      this.gone = true;
      return;
    }
    this.socket.on('data', (chunk) => this.onData(chunk));
    this.socket.on('error', (err) => this.die(err));
    this.socket.on('close', () => this.die());
    if (!this.detached) this.proc.unref();
    this.socket.unref();
    this.handshakeTimer = setTimeout(() => {
      this.die(new Error(`no handshake within ${HANDSHAKE_TIMEOUT_MS} ms`));
      this.proc.kill('SIGKILL');
    }, HANDSHAKE_TIMEOUT_MS).unref();
    this.send(encodeHello());
  }

  get inFlight() {
    return this.sessions.size;
  }

  /** Queues a frame; all frames of one tick leave in one write. */
  send(frame) {
    if (this.gone) return;
    this.queue.push(frame);
    if (!this.queued) {
      this.queued = true;
      process.nextTick(this.flushNow);
    }
  }

  flush() {
    this.queued = false;
    if (this.gone || this.queue.length === 0) return;
    const data = this.queue.length === 1 ? this.queue[0] : Buffer.concat(this.queue);
    this.queue = [];
    this.socket.write(data);
  }

  /** Takes `session` on: gives it an id and sends its SPAWN. */
  submit(session) {
    // After 2^32-1 spawns ids wrap: skip those still live.
    let id;
    do {
      id = this.nextId;
      this.nextId = id === 0xffffffff ? 1 : id + 1;
    } while (this.sessions.has(id));
    this.sessions.set(id, session);
    const frame = encodeSpawn(id, session.request);
    if (frame.length - 4 > MAX_FRAME) {
      // Far past what execve takes (E2BIG): answer as the server would,
      // rather than send a frame it must reject as a protocol error.
      session.attach(this, id, EMPTY);
      setImmediate(() => this.dispatch({ type: T.SPAWN_ERROR, id, errno: E2BIG, syscall: 'spawn' }));
      return;
    }
    session.attach(this, id, frame);
  }

  /** The session is done on the wire: its id may be forgotten. */
  release(id) {
    if (this.sessions.delete(id)) this.pool.onRelease(this);
  }

  /** A session wants the event loop kept alive (or not any more). */
  ref() {
    if (this.refs++ === 0 && !this.gone) this.socket.ref();
  }

  unref() {
    if (--this.refs === 0 && !this.gone) this.socket.unref();
  }

  onData(chunk) {
    try {
      this.decoder.push(chunk);
      this.deliverExits();
    } catch (err) {
      if (!(err instanceof ProtocolError)) {
        // A user's listener threw: it surfaces as it would under Node, and
        // the frames after it are still delivered, in a later callback.
        setImmediate(() => this.onData(EMPTY));
        throw err;
      }
      this.die(err);
    }
  }

  dispatch(msg) {
    if (msg.id === 0) {
      this.connectionFrame(msg);
      return;
    }
    const session = this.sessions.get(msg.id);
    if (session === undefined) return;
    // A child's last output and its EOF were written before it exited: as
    // libuv, which finds the pipes readable before the SIGCHLD, deliver the
    // exits of one read after the read's other frames.
    if (msg.type === T.EXIT) this.exits.push(session, msg);
    else asCallback(deliver, session, msg);
  }

  deliverExits() {
    const exits = this.exits;
    while (this.exitAt < exits.length) {
      const session = exits[this.exitAt];
      const msg = exits[this.exitAt + 1];
      this.exitAt += 2;
      asCallback(deliver, session, msg);
    }
    this.exits = [];
    this.exitAt = 0;
  }

  connectionFrame(msg) {
    if (msg.type === T.S_HELLO) {
      if (msg.version !== VERSION) throw new ProtocolError(`server speaks protocol ${msg.version}, not ${VERSION}`);
      this.ready = true;
      this.pid = msg.pid;
      clearTimeout(this.handshakeTimer);
      this.pool.onServerReady(this);
    } else if (msg.type === T.FATAL) {
      throw new ProtocolError(`server reported: ${msg.message}`);
    }
  }

  /** Why the server could not serve, in words, for warnings and logs. */
  describeFailure(cause) {
    if (this.startError) return `it could not be started: ${this.startError.message}`;
    const meaning = EXIT_MEANING[this.exitStatus];
    if (meaning) return `${meaning} (exit status ${this.exitStatus})`;
    if (cause?.message) return cause.message;
    return this.exitStatus === null ? 'its connection closed' : `it exited (${this.exitStatus})`;
  }

  /** The server is gone (exit, crash or protocol error): tell the pool once. */
  die(cause) {
    if (this.dead) return;
    this.dead = true;
    this.gone = true;
    clearTimeout(this.handshakeTimer);
    this.queue = [];
    if (this.socket && !this.socket.destroyed) this.socket.destroy();
    const sessions = [...this.sessions.values()];
    this.sessions.clear();
    let reported = false;
    const report = () => {
      if (reported) return;
      reported = true;
      clearTimeout(timer);
      debug('server %s gone (%s), %d children in flight', this.pid, this.describeFailure(cause), sessions.length);
      this.pool.onServerGone(this, cause, sessions);
    };
    // The exit status, when it comes, says more than the socket's close;
    // the timer (ref'd while children depend on the report) bounds the wait.
    const timer = setTimeout(report, 500);
    if (sessions.length === 0) timer.unref();
    if (this.detached || this.exitStatus !== null || this.startError) report();
    else this.exited.then(report);
  }

  /** Closes the connection; the server exits at EOF. Resolves at its exit. */
  close() {
    this.flush();
    if (this.gone) return this.exited;
    this.socket.end();
    if (this.detached) return new Promise((resolve) => this.socket.once('close', resolve));
    // Whoever awaits close() sees the exit: hold the loop until then.
    this.proc.ref();
    return this.exited;
  }
}
