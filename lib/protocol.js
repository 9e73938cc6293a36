// The wire codec of docs/protocol.md: pure functions, no sockets, no timers.
// encode*() return one frame as a Buffer; Decoder turns a byte stream into
// frames, however the stream is split.
import { lastFrozen } from './frozen-memo.js';

export const VERSION = 5;
export const MAX_FRAME = 16 * 1024 * 1024;
// A DATA frame holds one read of a child's pipe: the server reads at most
// 64 KiB at a time (native/platform.h, SPAWND_PIPE_CHUNK).
export const MAX_DATA = 64 * 1024;
export const HEADER = 9;
// stdin bytes a child may have sent but not yet acknowledged (WROTE): as
// much as the kernel's socket buffer takes from Node's write (128 KiB and
// more), so that a write a child exits without reading fails no more
// often than Node's.
export const STDIN_WINDOW = 256 * 1024;

export const T = Object.freeze({
  HELLO: 0x01, SPAWN: 0x02, STDIN: 0x03, STDIN_END: 0x04, KILL: 0x05, CREDIT: 0x06, CLOSE: 0x07, REAP: 0x08,
  S_HELLO: 0x41, SPAWNED: 0x42, SPAWN_ERROR: 0x43, DATA: 0x44, END: 0x45, WROTE: 0x46,
  EXIT: 0x47, KILL_ERROR: 0x48, HANDED: 0x49, REAPED: 0x4a, FATAL: 0x4f,
});

/** On the pid feed (fd 4): a pid with this bit set was parked as a session leader. */
export const FEED_LEADER = 0x80000000;

export const FLAG_DETACHED = 1;
export const FLAG_SET_UID = 2;
export const FLAG_SET_GID = 4;
/** The server may hand a busy stdout/stderr over through fd 5 (docs/protocol.md, "Handover"). */
export const FLAG_HANDOVER = 8;
/** The child's environment is that of the connection's last SPAWN that carried one: none is sent. */
export const FLAG_SAME_ENV = 16;

export const STDIO_PIPE = 0;
export const STDIO_IGNORE = 1;
/** stdio mode for "the server's own fd n" (n = 0..2), i.e. 'inherit' / an integer. */
export const stdioFd = (n) => 2 + n;

export class ProtocolError extends Error {}

// Little-endian integers, by hand: the same stores and loads as Buffer's
// writeUInt32LE/readUInt32LE, without their range checks (every value here
// is made to fit) and without compiling those Node functions inside a
// process's first spawn (they are not in Node's startup snapshot).
/** Writes `v` (0..2 ** 32 - 1) at `off`; returns the offset after it. */
export function putU32(buf, off, v) {
  buf[off] = v;
  buf[off + 1] = v >>> 8;
  buf[off + 2] = v >>> 16;
  buf[off + 3] = v >>> 24;
  return off + 4;
}

/** The unsigned 32-bit integer at `off`. */
export const getU32 = (buf, off) => (buf[off] | (buf[off + 1] << 8) | (buf[off + 2] << 16)) + buf[off + 3] * 0x1000000;

/** The signed 32-bit integer at `off`. */
export const getI32 = (buf, off) => buf[off] | (buf[off + 1] << 8) | (buf[off + 2] << 16) | (buf[off + 3] << 24);

function header(type, id, payloadLength) {
  const buf = Buffer.allocUnsafe(HEADER + payloadLength);
  putU32(buf, 0, 5 + payloadLength);
  buf[4] = type;
  putU32(buf, 5, id);
  return buf;
}

function u32Frame(type, id, ...values) {
  const buf = header(type, id, 4 * values.length);
  values.forEach((v, i) => putU32(buf, HEADER + 4 * i, v >>> 0));
  return buf;
}

function i32Frame(type, id, ...values) {
  const buf = header(type, id, 4 * values.length);
  values.forEach((v, i) => buf.writeInt32LE(v, HEADER + 4 * i));
  return buf;
}

function bytesFrame(type, id, prefix, data) {
  const pre = prefix === undefined ? 0 : 1;
  const buf = header(type, id, pre + data.length);
  if (pre) buf[HEADER] = prefix;
  buf.set(data, HEADER + pre);
  return buf;
}

function strFrame(type, id, i32s, str) {
  const len = Buffer.byteLength(str);
  const buf = header(type, id, 4 * i32s.length + 4 + len);
  let off = HEADER;
  for (const v of i32s) off = buf.writeInt32LE(v, off);
  off = putU32(buf, off, len);
  buf.write(str, off);
  return buf;
}

/** HELLO asking for `parked` parked children (docs/protocol.md, "Parked children"). */
export const encodeHello = (parked = 0, version = VERSION) => u32Frame(T.HELLO, 0, version, parked);
export const encodeStdin = (id, data) => bytesFrame(T.STDIN, id, undefined, data);
export const encodeStdinEnd = (id) => header(T.STDIN_END, id, 0);
export const encodeReap = (id) => header(T.REAP, id, 0);
export const encodeKill = (id, signal) => u32Frame(T.KILL, id, signal);
export const encodeCredit = (id, fd, bytes) => {
  const buf = header(T.CREDIT, id, 5);
  buf[HEADER] = fd;
  putU32(buf, HEADER + 1, bytes);
  return buf;
};
export const encodeClose = (id, fd) => bytesFrame(T.CLOSE, id, fd, Buffer.alloc(0));

export const encodeServerHello = (version, pid, parked = 0) => u32Frame(T.S_HELLO, 0, version, pid, parked);
export const encodeSpawned = (id, pid) => u32Frame(T.SPAWNED, id, pid);
export const encodeSpawnError = (id, errno, syscall) => strFrame(T.SPAWN_ERROR, id, [errno], syscall);
export const encodeData = (id, fd, data) => bytesFrame(T.DATA, id, fd, data);
export const encodeEnd = (id, fd, errno) => {
  const buf = header(T.END, id, 5);
  buf[HEADER] = fd;
  buf.writeInt32LE(errno, HEADER + 1);
  return buf;
};
export const encodeWrote = (id, bytes) => u32Frame(T.WROTE, id, bytes);
export const encodeExit = (id, code, signal) => i32Frame(T.EXIT, id, code, signal);
export const encodeKillError = (id, errno) => i32Frame(T.KILL_ERROR, id, errno);
export const encodeHanded = (id, fd) => bytesFrame(T.HANDED, id, fd, Buffer.alloc(0));
export const encodeReaped = (id) => header(T.REAPED, id, 0);
export const encodeFatal = (message) => strFrame(T.FATAL, 0, [], message);

/**
 * SPAWN frame. `req` is the normalized request: { flags, uid, gid, window,
 * stdio: [m0, m1, m2], file, cwd, argv: string[], env: string[] }; `pid`
 * the parked child that runs it, or 0 for one started on receipt; `flags`
 * added to the request's own (the connection's to give: FLAG_HANDOVER, and
 * FLAG_SAME_ENV, which leaves req.env out).
 */
export function encodeSpawn(id, req, pid = 0, flags = 0) {
  const strings = [req.file, req.cwd, ...req.argv];
  const sameEnv = (flags & FLAG_SAME_ENV) !== 0;
  const env = sameEnv ? NO_ENV : envBlock(req.env);
  let size = 20 + 3 + 8 + env.length;
  const lengths = new Array(strings.length);
  for (let i = 0; i < strings.length; i++) {
    lengths[i] = Buffer.byteLength(strings[i]);
    size += 4 + lengths[i];
  }
  const buf = header(T.SPAWN, id, size);
  let off = HEADER;
  off = putU32(buf, off, pid >>> 0);
  off = putU32(buf, off, (req.flags | flags) >>> 0);
  off = putU32(buf, off, req.uid >>> 0);
  off = putU32(buf, off, req.gid >>> 0);
  off = putU32(buf, off, req.window >>> 0);
  buf[off++] = req.stdio[0];
  buf[off++] = req.stdio[1];
  buf[off++] = req.stdio[2];
  off = putString(buf, off, strings[0], lengths[0]);
  off = putString(buf, off, strings[1], lengths[1]);
  off = putU32(buf, off, req.argv.length);
  for (let i = 0; i < req.argv.length; i++) off = putString(buf, off, strings[2 + i], lengths[2 + i]);
  off = putU32(buf, off, sameEnv ? 0 : req.env.length);
  buf.set(env, off);
  return buf;
}

const NO_ENV = Buffer.alloc(0);
/** Up to this many characters, an ASCII string is copied by putString's own loop. */
const SHORT_STRING = 64;

/** Writes `str` (`n` bytes in UTF-8) at `off` as [u32 length][bytes]; returns the offset after it. */
function putString(buf, off, str, n) {
  off = putU32(buf, off, n);
  // A short ASCII string (its UTF-8 length is its length) is copied here:
  // cheaper than a call into C++ for the few bytes of most names.
  if (n === str.length && n <= SHORT_STRING) {
    for (let k = 0; k < n; k++) buf[off + k] = str.charCodeAt(k);
    return off + n;
  }
  return off + buf.write(str, off, n);
}

/**
 * The encoded strings of `env` ([u32 length][bytes] each), without the
 * count. `presetEnvBlock(env, block)`: the block of a frozen `env` is
 * known already (the launch addon encodes the C environment's strings).
 */
const envBlock = lastFrozen((env) => {
  let size = 0;
  for (let i = 0; i < env.length; i++) size += 4 + Buffer.byteLength(env[i]);
  const block = Buffer.allocUnsafe(size);
  let off = 0;
  for (let i = 0; i < env.length; i++) {
    const n = block.write(env[i], off + 4);
    putU32(block, off, n);
    off += 4 + n;
  }
  return block;
});

export const presetEnvBlock = envBlock.preset;

/** Reads a frame's payload field by field; any misfit throws ProtocolError. */
class Reader {
  constructor(buf, start, end) {
    this.buf = buf;
    this.off = start;
    this.end = end;
  }
  need(n) {
    if (this.end - this.off < n) throw new ProtocolError('truncated payload');
  }
  u8() { this.need(1); return this.buf[this.off++]; }
  u32() { this.need(4); const v = getU32(this.buf, this.off); this.off += 4; return v; }
  i32() { this.need(4); const v = getI32(this.buf, this.off); this.off += 4; return v; }
  bytes(n) { this.need(n); const v = this.buf.subarray(this.off, this.off + n); this.off += n; return v; }
  rest() { return this.bytes(this.end - this.off); }
  str() {
    const b = this.bytes(this.u32());
    if (b.includes(0)) throw new ProtocolError('NUL byte in string');
    return b.toString();
  }
  done() {
    if (this.off !== this.end) throw new ProtocolError('trailing bytes in payload');
  }
}

function fdField(r, allowed) {
  const fd = r.u8();
  if (!allowed.includes(fd)) throw new ProtocolError(`bad fd ${fd}`);
  return fd;
}

function nonEmpty(r) {
  const data = r.rest();
  if (data.length === 0) throw new ProtocolError('empty data');
  return data;
}

function decodeSpawn(r, msg) {
  msg.pid = r.u32();
  msg.flags = r.u32();
  msg.uid = r.u32();
  msg.gid = r.u32();
  msg.window = r.u32();
  msg.stdio = [r.u8(), r.u8(), r.u8()];
  msg.file = r.str();
  msg.cwd = r.str();
  const argc = r.u32();
  if (argc < 1) throw new ProtocolError('argc must be at least 1');
  msg.argv = [];
  for (let i = 0; i < argc; i++) msg.argv.push(r.str());
  const envc = r.u32();
  if ((msg.flags & FLAG_SAME_ENV) !== 0 && envc !== 0) throw new ProtocolError('SPAWN with SAME_ENV carries environment strings');
  msg.env = [];
  for (let i = 0; i < envc; i++) msg.env.push(r.str());
}

const payloadDecoders = {
  [T.HELLO]: (r, m) => {
    m.version = r.u32();
    if (m.version === VERSION) m.parked = r.u32();
    else r.rest();    // another version's HELLO: its version is all we read
  },
  [T.SPAWN]: decodeSpawn,
  [T.STDIN]: (r, m) => { m.data = nonEmpty(r); },
  [T.STDIN_END]: () => {},
  [T.REAP]: () => {},
  [T.KILL]: (r, m) => { m.signal = r.u32(); },
  [T.CREDIT]: (r, m) => {
    m.fd = fdField(r, [1, 2]);
    m.bytes = r.u32();
    if (m.bytes === 0) throw new ProtocolError('zero credit');
  },
  [T.CLOSE]: (r, m) => { m.fd = fdField(r, [0, 1, 2]); },
  [T.S_HELLO]: (r, m) => {
    m.version = r.u32();
    m.pid = r.u32();
    if (m.version === VERSION) m.parked = r.u32();
    else r.rest();
  },
  [T.SPAWNED]: (r, m) => { m.pid = r.u32(); },
  [T.SPAWN_ERROR]: (r, m) => { m.errno = r.i32(); m.syscall = r.str(); },
  [T.END]: (r, m) => { m.fd = fdField(r, [0, 1, 2]); m.errno = r.i32(); },
  [T.WROTE]: (r, m) => { m.bytes = r.u32(); },
  [T.EXIT]: (r, m) => { m.code = r.i32(); m.signal = r.i32(); },
  [T.KILL_ERROR]: (r, m) => { m.errno = r.i32(); },
  [T.HANDED]: (r, m) => { m.fd = fdField(r, [1, 2]); },
  [T.REAPED]: () => {},
  [T.FATAL]: (r, m) => { m.message = r.str(); },
};

/**
 * The fd of a DATA frame of length `len` starting at buf[start] (1 or 2:
 * stdout, stderr); a payload over MAX_DATA is refused before any of it is
 * buffered.
 */
function dataFd(buf, start, len) {
  const fd = buf[start + HEADER];
  if (fd !== 1 && fd !== 2) throw new ProtocolError(`bad fd ${fd}`);
  checkDataLength(len);
  return fd;
}

/** The payload size of a DATA frame of length `len` (the u32 in front): less type, id and fd. */
const dataBytes = (len) => len - (HEADER - 4) - 1;

/** A DATA frame's length `len` carries at most MAX_DATA bytes. */
function checkDataLength(len) {
  const bytes = dataBytes(len);
  if (bytes > MAX_DATA) throw new ProtocolError(`DATA of ${bytes} bytes (at most ${MAX_DATA})`);
}

/** A DATA frame at buf[start..end): its payload as a view of `buf`. */
function decodeData(buf, start, end) {
  if (end - start < HEADER + 2) throw new ProtocolError(end - start < HEADER + 1 ? 'truncated payload' : 'empty data');
  const fd = dataFd(buf, start, end - start - 4);
  return { type: T.DATA, id: getU32(buf, start + 5), fd, data: buf.subarray(start + HEADER + 1, end), owned: false };
}

/** Decodes one frame at buf[start..end) (header included) into a message object. */
export function decodeFrame(buf, start, end) {
  const type = buf[start + 4];
  if (type === T.DATA) return decodeData(buf, start, end);
  const decode = payloadDecoders[type];
  if (decode === undefined) throw new ProtocolError(`unknown frame type 0x${type.toString(16)}`);
  const msg = { type, id: getU32(buf, start + 5) };
  const r = new Reader(buf, start + HEADER, end);
  decode(r, msg);
  r.done();
  return msg;
}

/**
 * Incremental decoder: push() chunks as they arrive, get complete messages
 * through `onMessage`. A malformed stream throws ProtocolError from push().
 *
 * A DATA message's `data` is a view of the pushed chunk (`owned` false),
 * except for a frame split across chunks: that one is gathered into a
 * buffer of its own (`owned` true) and delivered whole, as a pipe read
 * delivers its bytes in one piece (handing on each piece doubled the
 * reads a consumer saw). push(chunk, true) says the chunk is borrowed: it
 * is overwritten once push() returns (a socket's reusable read buffer), so
 * what the decoder keeps for later is copied; the views it delivered are
 * the caller's to copy before then (joinData).
 */
export class Decoder {
  constructor(onMessage) {
    this.onMessage = onMessage;
    this.parts = [];
    this.size = 0;
    this.need = 4;
    this.data = null;
  }

  push(chunk, borrowed = false) {
    if (this.data !== null) {
      chunk = this.continueData(chunk, borrowed);
      if (chunk === null) return;
    }
    // Other frames split over many chunks are joined once, when complete,
    // so that decoding stays linear in the bytes received.
    if (this.parts.length > 0) {
      this.parts.push(chunk);
      this.size += chunk.length;
      if (this.size < this.need) {
        if (borrowed) this.parts[this.parts.length - 1] = Buffer.from(chunk);
        return;
      }
      chunk = Buffer.concat(this.parts, this.size);
      this.parts = [];
      this.size = 0;
      borrowed = false;
    }
    let off = 0;
    let complete = false;
    this.need = 4;
    try {
      while (chunk.length - off >= 4) {
        const len = getU32(chunk, off);
        if (len < 5 || len > MAX_FRAME) throw new ProtocolError(`bad frame length ${len}`);
        if (chunk.length - off - 4 < len) {
          if (this.startData(chunk, off, len)) off = chunk.length;
          else this.need = this.partialNeed(chunk, off, len);
          break;
        }
        const end = off + 4 + len;
        const msg = decodeFrame(chunk, off, end);
        off = end;
        this.onMessage(msg);
      }
      complete = true;
    } finally {
      // A throwing onMessage must not lose the frames after it: keep them,
      // and let the next push() (even an empty one) go on.
      if (off < chunk.length) {
        const rest = chunk.subarray(off);
        this.parts.push(borrowed ? Buffer.from(rest) : rest);
        this.size = rest.length;
        if (!complete) this.need = 0;
      }
    }
  }

  /**
   * An incomplete frame at chunk[off]: when it is a DATA frame whose fd
   * has arrived, its bytes so far are copied into a buffer for the whole
   * payload (true); otherwise false, and the caller keeps the bytes.
   */
  startData(chunk, off, len) {
    if (chunk[off + 4] !== T.DATA || chunk.length - off < HEADER + 2) return false;
    const fd = dataFd(chunk, off, len);
    const start = off + HEADER + 1;
    const data = Buffer.allocUnsafe(dataBytes(len));
    const filled = chunk.copy(data, 0, start);
    this.data = { id: getU32(chunk, off + 5), fd, data, filled };
    return true;
  }

  /**
   * How many bytes an incomplete frame at chunk[off] (of length `len`) must
   * have before it is decoded again: all of it; for DATA only up to its fd,
   * when startData takes it over. A DATA frame too long is refused here, as
   * soon as its type is known, not once its bytes have been gathered.
   */
  partialNeed(chunk, off, len) {
    if (chunk.length - off < 5) return 5;      // its type decides
    if (chunk[off + 4] !== T.DATA) return 4 + len;
    checkDataLength(len);
    return Math.min(HEADER + 2, 4 + len);       // a frame too short to have a byte is whole sooner
  }

  /** The next bytes of a split DATA frame; returns what follows it, or null. */
  continueData(chunk, borrowed) {
    const d = this.data;
    const n = Math.min(d.data.length - d.filled, chunk.length);
    chunk.copy(d.data, d.filled, 0, n);
    d.filled += n;
    if (d.filled < d.data.length) return null;
    this.data = null;
    const rest = n < chunk.length ? chunk.subarray(n) : null;
    try {
      this.onMessage({ type: T.DATA, id: d.id, fd: d.fd, data: d.data, owned: true });
    } catch (err) {
      if (rest !== null) {
        this.parts.push(borrowed ? Buffer.from(rest) : rest);
        this.size = rest.length;
        this.need = 0;
      }
      throw err;
    }
    return rest;
  }
}

/** The most one read of a pipe gives Node (libuv's 64 KiB). */
export const PIPE_READ_MAX = 64 * 1024;

/**
 * Joins the DATA messages of one stream that follow each other in `msgs`
 * into chunks of at most PIPE_READ_MAX bytes, as one read of a pipe that
 * held them all would have given them to Node. With `borrowed`, every DATA
 * view of the read buffer is copied out (joined or not). Returns `msgs`
 * itself when nothing changes.
 */
export function joinData(msgs, borrowed) {
  let out = null;
  for (let i = 0; i < msgs.length; i++) {
    const msg = msgs[i];
    if (msg.type !== T.DATA) {
      out?.push(msg);
      continue;
    }
    let j = i + 1;
    let size = msg.data.length;
    while (j < msgs.length && msgs[j].type === T.DATA && msgs[j].id === msg.id && msgs[j].fd === msg.fd &&
           size + msgs[j].data.length <= PIPE_READ_MAX) {
      size += msgs[j].data.length;
      j++;
    }
    if (j === i + 1 && (msg.owned || !borrowed)) {
      out?.push(msg);
      continue;
    }
    out ??= msgs.slice(0, i);
    const data = Buffer.allocUnsafe(size);
    let at = 0;
    for (let k = i; k < j; k++) at += msgs[k].data.copy(data, at);
    out.push({ type: T.DATA, id: msg.id, fd: msg.fd, data, owned: true });
    i = j - 1;
  }
  return out ?? msgs;
}
