// One spawn server: starts the native binary with a private socketpair on
// its fd 3, speaks the protocol, and routes each frame to the child it names.
import { nodeSpawn } from './node-child-process.js';
import { debuglog } from 'node:util';
import { constants } from 'node:os';
import { Decoder, T, encodeHello, encodeSpawn, ProtocolError, VERSION, MAX_FRAME } from './protocol.js';

const debug = debuglog('spawnpool');
const EMPTY = Buffer.alloc(0);
const { E2BIG } = constants.errno;

// The server keeps only what it needs from our environment: sanitizer and
// debug switches. Children get their env in each SPAWN, never the server's.
const passEnv = (env) => Object.fromEntries(Object.entries(env).filter(([k]) =>
  k.startsWith('SPAWND_') || k.endsWith('SAN_OPTIONS')));

export class Server {
  /**
   * Starts the binary now; frames may be sent at once (the server reads them
   * after the handshake). Tells `pool` when it dies (onServerGone) and when
   * a child is done with it (onRelease).
   */
  constructor(binary, pool) {
    this.children = new Map();
    this.nextId = 1;
    this.refs = 0;
    this.ready = false;
    this.gone = false;
    this.pool = pool;
    this.queue = [];
    this.queued = false;
    this.failed = false;
    this.decoder = new Decoder((msg) => this.dispatch(msg));

    // Inherited stdio is what 'inherit' and stdio 0-2 give the children.
    this.proc = nodeSpawn(binary, [String(process.pid)], {
      stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
      env: passEnv(process.env),
    });
    this.proc.on('error', (err) => this.die(err));
    this.exited = new Promise((resolve) => this.proc.once('exit', resolve));
    this.pid = this.proc.pid;
    if (this.pid === undefined) {
      // Node could not start it (EMFILE, EAGAIN...): the pool sees `failed`.
      this.failed = true;
      this.gone = true;
      this.socket = null;
      this.exited = Promise.resolve();
      return;
    }
    this.socket = this.proc.stdio[3];
    this.socket.on('data', (chunk) => this.onData(chunk));
    this.socket.on('error', (err) => this.die(err));
    this.socket.on('close', () => this.die());
    this.proc.unref();
    this.socket.unref();
    this.send(encodeHello());
  }

  get inFlight() {
    return this.children.size;
  }

  /** Queues a frame; all frames of one tick leave in one write. */
  send(frame) {
    if (this.gone) return;
    this.queue.push(frame);
    if (!this.queued) {
      this.queued = true;
      process.nextTick(() => this.flush());
    }
  }

  flush() {
    this.queued = false;
    if (this.gone || this.queue.length === 0) return;
    const data = this.queue.length === 1 ? this.queue[0] : Buffer.concat(this.queue);
    this.queue = [];
    this.socket.write(data);
  }

  /** Sends a SPAWN for `child`; returns the request id. */
  spawn(child, request) {
    // After 2^32-1 spawns ids wrap: skip those still live.
    let id;
    do {
      id = this.nextId;
      this.nextId = id === 0xffffffff ? 1 : id + 1;
    } while (this.children.has(id));
    this.children.set(id, child);
    const frame = encodeSpawn(id, request);
    if (frame.length - 4 > MAX_FRAME) {
      // Far past what execve takes (E2BIG): answer as the server would,
      // rather than send a frame it must reject as a protocol error.
      process.nextTick(() => this.dispatch({ type: T.SPAWN_ERROR, id, errno: E2BIG, syscall: 'spawn' }));
    } else {
      this.send(frame);
    }
    return id;
  }

  /** The child is done on the wire: its id may be forgotten. */
  release(id) {
    if (this.children.delete(id)) this.pool.onRelease();
  }

  /** A running child wants the event loop kept alive (or not any more). */
  ref() {
    if (this.refs++ === 0 && !this.gone) this.socket.ref();
  }

  unref() {
    if (--this.refs === 0 && !this.gone) this.socket.unref();
  }

  onData(chunk) {
    try {
      this.decoder.push(chunk);
    } catch (err) {
      if (!(err instanceof ProtocolError)) {
        // A user's listener threw: it surfaces as it would under Node, and
        // the frames after it are still delivered.
        process.nextTick(() => this.onData(EMPTY));
        throw err;
      }
      this.die(err);
    }
  }

  dispatch(msg) {
    if (msg.id === 0) {
      if (msg.type === T.S_HELLO) {
        if (msg.version !== VERSION) throw new ProtocolError(`server speaks protocol ${msg.version}, not ${VERSION}`);
        this.ready = true;
      } else if (msg.type === T.FATAL) {
        throw new ProtocolError(`server reported: ${msg.message}`);
      }
      return;
    }
    const child = this.children.get(msg.id);
    if (child !== undefined) child._onMessage(msg);
  }

  /** The server is gone (exit, crash or protocol error): fail its children once. */
  die(cause) {
    if (this.gone) return;
    this.gone = true;
    debug('server %s gone: %s', this.pid, cause?.message ?? 'socket closed');
    this.queue = [];
    if (!this.socket.destroyed) this.socket.destroy();
    const orphans = [...this.children.values()];
    this.children.clear();
    this.pool.onServerGone(this, cause, orphans);
  }

  /** Closes the connection; the server exits at EOF. Resolves at its exit. */
  close() {
    this.flush();
    this.socket.end();
    // Whoever awaits close() sees the exit: hold the loop until then.
    this.proc.ref();
    return this.exited;
  }
}
