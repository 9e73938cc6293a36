// The child's stdio as seen from Node: streams backed by a session's frames
// instead of pipe handles. Flow control follows docs/protocol.md: readables
// return credit only as their consumer takes data; stdin keeps at most
// STDIN_WINDOW bytes unacknowledged, and a write that keeps the bytes in
// flight within stdinAtOnce() completes at once, as one the kernel's socket
// buffer takes.
//
// Like net.Socket over a pipe handle, 'close' is not emitted by the stream
// machinery (emitClose: false) but when the "handle" closes: in the close
// phase, with `hadError` (lib/delivery.js).
import { AsyncResource } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
import { Readable, Writable } from 'node:stream';
import { Socket } from 'node:net';
import { STDIN_WINDOW } from './protocol.js';
import { runtime } from './runtime.js';
import { errnoError } from './errors.js';
import { closePhase } from './delivery.js';
import { readPipe } from './launch.js';
import { constants } from 'node:os';

const { EPIPE, ECANCELED } = constants.errno;
// A write still pending when Node's stdin socket is destroyed is cancelled:
// its callback gets no error under Node 20, ECANCELED from Node 22 on.
const CANCELLED_WITH_ERROR = runtime === 'node' && Number(process.versions.node.split('.')[0]) >= 22;

let atOnce = 0;

/**
 * How many stdin bytes may be in flight for a write to complete at once
 * (ChildWritable): what one write of Node's into a child's stdin
 * completes at once, its socket's send buffer, within STDIN_WINDOW. That
 * is the machine's default (net.core.wmem_default, 212,992 bytes unless
 * configured otherwise), except under libuv 1.51 and 1.52 (Node 22 and
 * 24 today), which set 64 KiB on both ends of a child's stdio socket pair
 * (the kernel doubles it: 131,072); later libuv only ever raises the
 * default (libuv #4694, #5230). Read once, at the first write.
 */
export function stdinAtOnce() {
  if (atOnce === 0) {
    let bytes = 212_992;
    try {
      bytes = Number.parseInt(readFileSync('/proc/sys/net/core/wmem_default', 'latin1'), 10) || bytes;
    } catch { /* not Linux's /proc: the usual default */ }
    const [major, minor] = String(process.versions.uv ?? '').split('.').map(Number);
    if (runtime === 'node' && major === 1 && minor >= 51) bytes = minor <= 52 ? 131_072 : Math.max(bytes, 131_072);
    atOnce = Math.max(1, Math.min(bytes, STDIN_WINDOW));
  }
  return atOnce;
}
export const DROP_LINGER_MS = 5;

// A pipe handle's close callback runs in the async context of the child's
// spawn() (its handle was made there), not in that of whatever queued the
// close first: the close phase runs a batch of closes of many children.
function closeLater(stream, err, before) {
  const session = stream._session;
  const emit = () => {
    try {
      if (before !== null) before();
      stream.emit('close', err != null);
    } finally {
      session.streamClosed();
    }
  };
  const emitClose = () => session.resource.runInAsyncScope(emit);
  if (!(stream._eofSeen && stream._session.holdClose(emitClose))) closePhase(emitClose);
}

/**
 * stdout / stderr of a served child. Credit goes back in batches of at least
 * half the window, and only while the consumer keeps up: a frame per chunk
 * cost a socket write (and a wake-up of the server) per 64 KiB. No deadlock:
 * a server out of credit means we owe it the whole window.
 *
 * A busy stream may be handed over (HANDED, docs/protocol.md): from then
 * on its bytes come from the child's pipe itself, read as
 * node:child_process reads it, paused while this stream is full.
 */
export class ChildReadable extends Readable {
  constructor(session, fd, window) {
    super({ emitClose: false });
    this._session = session;
    this._fd = fd;
    this._owed = 0;
    this._batch = Math.max(1, window >>> 1);
    this._eofSeen = false;
    this._direct = null;
    this._directDone = false;
  }

  _read() {
    if (this._direct === null) this._grant();
    else if (!this._directDone) this._direct.resume();
  }

  /** Whether a handed-over pipe is still read (it needs no server). */
  _reading() {
    return this._direct !== null && !this._directDone;
  }

  /**
   * The handed-over pipe is done with: closed (_reading() turns false). When
   * the user destroyed the stream (`linger`), reading stops first and the
   * close comes DROP_LINGER_MS later, as the server closes a dropped
   * stream (docs/protocol.md, CLOSE): a writer that keeps writing is then
   * blocked on the full socket and sees ECONNRESET, Node's usual outcome
   * (under node:child_process the reader leaves while the writer waits),
   * not an EPIPE from a close while the bytes we read ahead were gone.
   */
  _dropDirect(linger = false) {
    if (this._direct === null || this._directDone) return;
    this._directDone = true;
    const pipe = this._direct;
    if (!linger) {
      pipe.destroy();
      return;
    }
    if (pipe instanceof Socket) pipe.removeAllListeners('data');
    pipe.pause();
    setTimeout(() => pipe.destroy(), DROP_LINGER_MS).unref();
  }

  /**
   * HANDED: `fd` is the pipe's end; its reads are this stream's from now
   * on, paused while it is full. Read by the addon where it can
   * (lib/launch.js, readPipe), else by a net.Socket. Throws (the fd not
   * taken) if it cannot be opened.
   */
  _handover(fd) {
    const onData = (chunk) => {
      if (!this.push(chunk)) pipe.pause();
    };
    const onEnd = (errno) => this._session.onEnd(this._fd, errno);
    let pipe = readPipe(fd, onData, onEnd);
    if (pipe === null) {
      pipe = new Socket({ fd, readable: true, writable: false });
      pipe.on('data', onData);
      pipe.on('end', () => onEnd(0));
      pipe.on('error', (err) => onEnd(-err.errno || constants.errno.EIO));
    }
    this._direct = pipe;
    if (!this._session.pipeRefed[this._fd]) pipe.unref();
    // Full already (a consumer that stopped reading): no read ahead.
    if (this.readableLength >= this.readableHighWaterMark) pipe.pause();
  }

  _grant() {
    if (this._owed >= this._batch && this._session.pipeOpen(this._fd)) {
      this._session.credit(this._fd, this._owed);
      this._owed = 0;
    }
  }

  /** DATA from the server. */
  _deliver(data) {
    this._owed += data.length;
    if (this.push(data)) this._grant();
  }

  /** END from the server (or the handed-over pipe): EOF (errno 0) or a read error. */
  _eof(errno) {
    this._eofSeen = true;
    this._dropDirect();
    if (errno !== 0) {
      this.destroy(errnoError(errno, 'read'));
      return;
    }
    this.push(null);
    // As net's onStreamRead at EOF: a stream nobody reads, with nothing
    // buffered, emits 'end' now, not when something reads it.
    this.read(0);
  }

  _destroy(err, callback) {
    this._session.closePipe(this._fd, this._direct !== null);
    this._dropDirect(true);
    callback(err);
    closeLater(this, err, null);
  }

  /** Like a pipe handle: an open stream keeps the event loop alive unless unref'd. */
  ref() {
    this._session.refPipe(this._fd, true);
    if (this._reading()) this._direct.ref();
    return this;
  }

  unref() {
    this._session.refPipe(this._fd, false);
    if (this._reading()) this._direct.unref();
    return this;
  }
}

/**
 * stdin of a served child. As with Node's pipe, a write completes at once
 * when the kernel's socket buffer takes it (its callback on the next tick,
 * the stream's length back to 0, write() true below the highWaterMark,
 * so that `write(); end()` calls _final at once), else when its last byte
 * reaches the child's pipe.
 *
 * Here, with the child running: a write that keeps the bytes in flight
 * (sent, not yet acknowledged by WROTE) within stdinAtOnce() (what one
 * Node write completes at once) completes at once, and the server holds
 * those bytes for the child; until it acknowledges them the loop stays
 * alive and end() does not finish. Should they meet a stdin the child
 * has closed meanwhile (Node's write would have failed), the stream fails
 * with the error (_failed); a stdin the child closed before the write is
 * known here already (END fd 0: the server watches for the hang-up), and
 * the write fails at once with EPIPE, as Node's does. A larger write (or
 * one while the child is spawning) completes when the server acknowledges
 * its last byte (WROTE), with EPIPE when the bytes can never reach the
 * child, or (destroyed meanwhile, the child's exit included) cancelled as
 * Node's write request is: no error under Node 20, ECANCELED from 22.
 * Every callback runs exactly once.
 */
export class ChildWritable extends Writable {
  constructor(session) {
    super({ emitClose: false });
    this._session = session;
    this._inflight = 0;      // bytes sent, not acknowledged
    this._earlyBytes = 0;    // of those, bytes of writes that completed at once
    this._pending = null;    // the write that completes at its acknowledgement
    this._finalCallback = null;
    this._destroyErrno = 0;
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
    if (!this._session.pipeOpen(0)) {
      callback(errnoError(EPIPE, 'write'));
      return;
    }
    if (this._session.running && this._inflight + data.length <= stdinAtOnce()) {
      this._session.stdin(data);
      this._inflight += data.length;
      if (this._earlyBytes === 0) this._session.holdWrite(true);
      this._earlyBytes += data.length;
      callback();
      return;
    }
    // Its callback (and so 'drain', a write error) runs in the async
    // context of the write() call, as Node's write request's does.
    this._pending = { data, offset: 0, unacked: data.length, callback: AsyncResource.bind(callback) };
    this._session.holdWrite(true);
    this._pump();
  }

  _pump() {
    const p = this._pending;
    while (p !== null && p.offset < p.data.length && this._inflight < STDIN_WINDOW) {
      const n = Math.min(p.data.length - p.offset, STDIN_WINDOW - this._inflight);
      this._session.stdin(p.data.subarray(p.offset, p.offset + n));
      p.offset += n;
      this._inflight += n;
    }
  }

  /**
   * The server died before answering the SPAWN: send the write again.
   * (Writes complete at once only once the child runs, after the last
   * attach: those never need sending again.)
   */
  _replay() {
    const p = this._pending;
    p.offset = p.data.length - p.unacked;
    this._inflight = 0;
    this._pump();
  }

  /** Takes the pending write; its callback is the caller's to run once. */
  _take() {
    const p = this._pending;
    this._pending = null;
    if (p !== null && this._earlyBytes === 0) this._session.holdWrite(false);
    return p;
  }

  /** WROTE: bytes reached the child's pipe (those of early writes first). */
  _acked(bytes) {
    this._inflight -= bytes;
    if (this._earlyBytes > 0) {
      const early = Math.min(bytes, this._earlyBytes);
      bytes -= early;
      if ((this._earlyBytes -= early) === 0) this._earlyDone();
    }
    const p = this._pending;
    if (p === null) return;
    p.unacked -= bytes;
    if (p.unacked === 0) this._take().callback();
    else this._pump();
  }

  /**
   * No bytes of early writes are unacknowledged any more: end() may
   * finish (with `err`). Whether it was waiting.
   */
  _earlyDone(err = null) {
    this._earlyBytes = 0;
    if (this._pending === null) this._session.holdWrite(false);
    const final = this._finalCallback;
    this._finalCallback = null;
    if (final !== null) final(err);
    return final !== null;
  }

  /**
   * The bytes in flight will never be written: END fd 0, or the child is
   * gone (`childGone`: exit, or lost with its server). A pending
   * write fails with `errno`, unless the child is gone: then stdin's
   * destroy at the exit cancels it (below). Early bytes the server could not write to a
   * live child met a stdin it had closed, or a child exited but not yet
   * reaped: under Node that write failed too, so the stream fails with
   * the error ('error', and end()'s callback if it waits). With the child
   * gone they are lost without an error, as those in a dead child's pipe.
   */
  _failed(errno, childGone = false) {
    this._inflight = 0;
    if (childGone && this._pending !== null) {
      // The child is gone with a write its pipe never took (a grandchild
      // holds the pipe and does not read, say: nobody closed it). Under
      // Node the exit's destroy() of stdin cancels that write: its
      // callback without an error (ECANCELED from Node 22), end()'s with
      // ERR_STREAM_DESTROYED, no 'error'. Left for that destroy
      // (Session.exit); early bytes are lost without an error.
      this._earlyBytes = 0;
      return;
    }
    const p = this._take();
    if (p !== null) {
      if (this._earlyBytes > 0) this._earlyDone();
      p.callback(errnoError(errno, 'write'));
      return;
    }
    if (this._earlyBytes === 0) return;
    const err = childGone ? null : errnoError(errno, 'write');
    const ended = this._earlyDone(err);
    if (err !== null && !ended && !this.destroyed) this.destroy(err);
  }

  /**
   * The spawn failed: as Node's stdin socket, the stream is destroyed
   * (without an error) when the child's 'error' is emitted, and only then
   * does a pending write fail, with `errno`: its callback hears it, no
   * 'error' event is emitted (code that writes to the stdin of a program
   * that may be missing listens on the child only).
   */
  _failAtDestroy(errno) {
    this._destroyErrno = errno;
  }

  _final(callback) {
    this._session.stdinEnd();
    if (this._earlyBytes === 0) callback();
    else this._finalCallback = AsyncResource.bind(callback); // 'finish' in end()'s context
  }

  _destroy(err, callback) {
    this._session.closePipe(0);
    // Early writes are done, as Node's that the kernel took; 'finish'
    // never comes.
    this._earlyBytes = 0;
    this._finalCallback = null;
    const p = this._take();
    if (p === null) this._session.holdWrite(false);
    callback(err);
    if (p !== null && this._destroyErrno !== 0) {
      // A failed spawn's: the write fails right after the child's 'error'.
      process.nextTick(p.callback, errnoError(this._destroyErrno, 'write'));
      closeLater(this, err, null);
      return;
    }
    closeLater(this, err, p === null ? null
      : () => p.callback(CANCELLED_WITH_ERROR ? errnoError(ECANCELED, 'write') : undefined));
  }

  ref() {
    this._session.refPipe(0, true);
    return this;
  }

  unref() {
    this._session.refPipe(0, false);
    return this;
  }
}
