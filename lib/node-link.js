// A session served by node:child_process instead of a spawn server: the
// same frames, answered in JS. Used for requests already handed to the
// pool when it finds it cannot serve them (the binary turned out broken,
// no server could be started): their ChildProcess exists already, so it
// is fed from a Node child rather than failed.
import { nodeSpawn } from './node-child-process.js';
import { constants } from 'node:os';
import { decodeFrame, T } from './protocol.js';
import { asCallback } from './delivery.js';
import { deliver } from './session.js';
import { toSignalNumber } from './options.js';
import { unpublished } from './observe.js';

const errnoOf = (err) => constants.errno[err.code] ?? constants.errno.EIO;

export class NodeLink {
  /** `spawnArgs`: the (file, args, options) the user passed to spawn(). */
  constructor(session, spawnArgs) {
    this.spawnArgs = spawnArgs;
    this.session = session;
    this.child = null;
    this.spawned = false;
    this.credit = [0, 0, 0];
  }

  receive(msg) {
    if (this.session !== null) asCallback(deliver, this.session, { id: this.session.id, ...msg });
  }

  sendLazy(frame) {
    this.send(frame);
  }

  sendNow(frame) {
    this.send(frame);
  }

  send(frame) {
    const msg = decodeFrame(frame, 0, frame.length);
    const streams = this.child?.stdio ?? [];
    switch (msg.type) {
      case T.SPAWN: this.start(msg); break;
      case T.STDIN: this.write(msg.data); break;
      case T.STDIN_END: streams[0]?.end(); break;
      case T.KILL: this.child?.kill(msg.signal); break;
      case T.CREDIT: this.grant(msg.fd, msg.bytes); break;
      case T.CLOSE: streams[msg.fd]?.destroy(); break;
      default: break;
    }
  }

  start(msg) {
    const [file, args, options = {}] = this.spawnArgs;
    // Timeout and abort are handled by the spawnpool ChildProcess already.
    const { timeout, signal, killSignal, ...rest } = options ?? {};
    // The user's ChildProcess was published when spawn() made it: this
    // one is how it is served, not another child to report.
    const child = unpublished(() => nodeSpawn(file, args, rest));
    this.child = child;
    this.credit = [0, msg.window, msg.window];
    child.on('spawn', () => {
      this.spawned = true;
      this.receive({ type: T.SPAWNED, pid: child.pid });
    });
    child.on('error', (err) => {
      if (!this.spawned) this.receive({ type: T.SPAWN_ERROR, errno: errnoOf(err), syscall: 'spawn' });
      else if (err.syscall === 'kill') this.receive({ type: T.KILL_ERROR, errno: errnoOf(err) });
    });
    child.on('exit', (code, sig) => {
      this.receive({ type: T.EXIT, code: sig === null ? code : -1, signal: sig === null ? 0 : toSignalNumber(sig) });
    });
    for (const fd of [1, 2]) {
      const stream = child.stdio[fd];
      if (!stream) continue;
      stream.on('data', (data) => {
        this.credit[fd] -= data.length;
        if (this.credit[fd] <= 0) stream.pause();
        this.receive({ type: T.DATA, fd, data });
      });
      stream.on('end', () => this.receive({ type: T.END, fd, errno: 0 }));
      stream.on('error', (err) => this.receive({ type: T.END, fd, errno: errnoOf(err) }));
    }
    child.stdin?.on('error', () => { /* reported through the write callback */ });
  }

  write(data) {
    const stdin = this.child?.stdin;
    if (!stdin || stdin.destroyed) {
      this.receive({ type: T.END, fd: 0, errno: constants.errno.EPIPE });
      return;
    }
    stdin.write(data, (err) => {
      if (err) this.receive({ type: T.END, fd: 0, errno: errnoOf(err) });
      else this.receive({ type: T.WROTE, bytes: data.length });
    });
  }

  grant(fd, bytes) {
    this.credit[fd] += bytes;
    if (this.credit[fd] > 0) this.child?.stdio[fd]?.resume();
  }

  ref() { this.child?.ref(); }

  unref() { this.child?.unref(); }

  release() {}
}
