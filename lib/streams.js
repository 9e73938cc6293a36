// The child's stdio as seen from Node: streams backed by frames instead of
// pipe handles. Flow control follows docs/protocol.md: readables return
// credit only as their consumer takes data; stdin keeps at most
// STDIN_WINDOW bytes unacknowledged.
import { Readable, Writable } from 'node:stream';
import { STDIN_WINDOW } from './protocol.js';
import { errnoError } from './errors.js';

/**
 * stdout / stderr of a served child. Credit goes back in batches of at least
 * half the window, and only while the consumer keeps up: a frame per chunk
 * cost a socket write (and a wake-up of the server) per 64 KiB. No deadlock:
 * a server out of credit means we owe it the whole window.
 */
export class ChildReadable extends Readable {
  constructor(wire, fd, window) {
    super();
    this._wire = wire;
    this._fd = fd;
    this._owed = 0;
    this._batch = Math.max(1, window >>> 1);
    this._open = true;
    this._refed = true;
    wire.hold();
  }

  _read() {
    this._grant();
  }

  _grant() {
    if (this._owed >= this._batch && this._open) {
      this._wire.credit(this._fd, this._owed);
      this._owed = 0;
    }
  }

  _onData(data) {
    if (!this._open) return;
    this._owed += data.length;
    if (this.push(data)) this._grant();
  }

  /** END from the server: EOF (errno 0) or a read error. */
  _onEnd(errno) {
    if (!this._open) return;
    this._finish();
    if (errno !== 0) this.destroy(errnoError(errno, 'read'));
    else this.push(null);
  }

  _finish() {
    this._open = false;
    if (this._refed) this._wire.release();
    this._wire.fdDone(this._fd);
  }

  _destroy(err, callback) {
    if (this._open) {
      this._wire.closeFd(this._fd);
      this._finish();
    }
    callback(err);
  }

  /** Like a pipe handle: an open stream keeps the event loop alive unless unref'd. */
  ref() {
    if (!this._refed && this._open) this._wire.hold();
    this._refed = true;
    return this;
  }

  unref() {
    if (this._refed && this._open) this._wire.release();
    this._refed = false;
    return this;
  }
}

/**
 * stdin of a served child. As with Node's pipe, a write's callback reports
 * the outcome of writing into the child's pipe: it runs when the server
 * acknowledges the bytes (WROTE), or with EPIPE when the child closed it.
 * Writes queued meanwhile are sent together (_writev).
 */
export class ChildWritable extends Writable {
  constructor(wire) {
    super();
    this._wire = wire;
    this._inflight = 0;
    this._pending = null;
    this._open = true;
  }

  _write(chunk, encoding, callback) {
    this._start(chunk, callback);
  }

  _writev(entries, callback) {
    this._start(entries.length === 1 ? entries[0].chunk : Buffer.concat(entries.map((e) => e.chunk)), callback);
  }

  _start(data, callback) {
    if (data.length === 0) {
      callback();
      return;
    }
    this._pending = { data, offset: 0, unacked: data.length, callback };
    this._pump();
  }

  _pump() {
    const p = this._pending;
    while (p !== null && p.offset < p.data.length && this._inflight < STDIN_WINDOW && this._open) {
      const n = Math.min(p.data.length - p.offset, STDIN_WINDOW - this._inflight);
      this._wire.stdin(p.data.subarray(p.offset, p.offset + n));
      p.offset += n;
      this._inflight += n;
    }
  }

  /** WROTE: bytes reached the child's pipe. */
  _onWrote(bytes) {
    this._inflight -= bytes;
    const p = this._pending;
    if (p === null) return;
    p.unacked -= bytes;
    if (p.unacked === 0) {
      this._pending = null;
      p.callback();
    } else {
      this._pump();
    }
  }

  _final(callback) {
    if (this._open) {
      this._open = false;
      this._wire.stdinEnd();
    }
    callback();
  }

  /** END for fd 0: writing failed (EPIPE when the child closed its stdin). */
  _onEnd(errno) {
    this._open = false;
    const err = errnoError(errno, 'write');
    const p = this._pending;
    this._pending = null;
    if (p !== null) p.callback(err);
    else this.destroy(err);
  }

  /** The child exited: the server has closed the pipe already. */
  _onExit() {
    this._open = false;
    this.destroy();
  }

  _destroy(err, callback) {
    if (this._open) {
      this._open = false;
      this._wire.closeFd(0);
    }
    this._pending = null;
    callback(err);
  }
}
