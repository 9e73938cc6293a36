// Golden frames shared with the C unit test (docs/protocol.md, "Test vectors"):
// each is decoded, checked field by field, re-encoded and compared byte for byte.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as P from '../../lib/protocol.js';

const dir = fileURLToPath(new URL('../fixtures/frames/', import.meta.url));
const names = readdirSync(dir).filter((f) => f.endsWith('.hex')).map((f) => f.slice(0, -4)).sort();

const typeNames = { ...P.T, HELLO: undefined, S_HELLO: undefined };
const hexBytes = (text) => Buffer.from(text.split('\n').filter((l) => !l.trim().startsWith('#')).join('').replace(/\s+/g, ''), 'hex');

function unquote(text) {
  assert.match(text, /^".*"$/s, `not a quoted string: ${text}`);
  const bytes = [];
  const body = text.slice(1, -1);
  for (let i = 0; i < body.length; i++) {
    if (body[i] === '\\' && body[i + 1] === 'x') {
      bytes.push(parseInt(body.slice(i + 2, i + 4), 16));
      i += 3;
    } else {
      bytes.push(body.charCodeAt(i));
    }
  }
  return Buffer.from(bytes);
}

const LISTS = new Set(['argv', 'env']);
const BYTES = new Set(['data']);

function parseFields(text) {
  const fields = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const space = line.indexOf(' ');
    const key = space === -1 ? line : line.slice(0, space);
    const value = space === -1 ? '' : line.slice(space + 1).trim();
    let parsed;
    if (key === 'type' || key === 'error') parsed = value;
    else if (value.startsWith('"')) parsed = BYTES.has(key) ? unquote(value) : unquote(value).toString();
    else if (key === 'stdio') parsed = value.split(/\s+/).map(Number);
    else parsed = Number(value);
    if (LISTS.has(key)) (fields[key] ??= []).push(parsed);
    else fields[key] = parsed;
  }
  return fields;
}

function typeCode(fields) {
  if (fields.type === 'HELLO') return 'pid' in fields ? P.T.S_HELLO : P.T.HELLO;
  const code = typeNames[fields.type];
  assert.notEqual(code, undefined, `unknown type name ${fields.type}`);
  return code;
}

function encode(f) {
  const id = f.id;
  switch (typeCode(f)) {
    case P.T.HELLO: return P.encodeHello(f.parked, f.version);
    case P.T.SPAWN: return P.encodeSpawn(id, { ...f, argv: f.argv ?? [], env: f.env ?? [] }, f.pid);
    case P.T.STDIN: return P.encodeStdin(id, f.data);
    case P.T.STDIN_END: return P.encodeStdinEnd(id);
    case P.T.REAP: return P.encodeReap(id);
    case P.T.KILL: return P.encodeKill(id, f.signal);
    case P.T.CREDIT: return P.encodeCredit(id, f.fd, f.bytes);
    case P.T.CLOSE: return P.encodeClose(id, f.fd);
    case P.T.HANDED: return P.encodeHanded(id, f.fd);
    case P.T.REAPED: return P.encodeReaped(id);
    case P.T.S_HELLO: return P.encodeServerHello(f.version, f.pid, f.parked);
    case P.T.SPAWNED: return P.encodeSpawned(id, f.pid);
    case P.T.SPAWN_ERROR: return P.encodeSpawnError(id, f.errno, f.syscall);
    case P.T.DATA: return P.encodeData(id, f.fd, f.data);
    case P.T.END: return P.encodeEnd(id, f.fd, f.errno);
    case P.T.WROTE: return P.encodeWrote(id, f.bytes);
    case P.T.EXIT: return P.encodeExit(id, f.code, f.signal);
    case P.T.KILL_ERROR: return P.encodeKillError(id, f.errno);
    case P.T.FATAL: return P.encodeFatal(f.message);
    default: throw new Error(`no encoder for ${f.type}`);
  }
}

function decodeAll(bytes) {
  const out = [];
  new P.Decoder((m) => out.push(m)).push(bytes);
  return out;
}

test('golden frames exist for every message type', () => {
  const seen = new Set(names.filter((n) => !n.startsWith('bad-'))
    .map((n) => typeCode(parseFields(readFileSync(`${dir}${n}.fields`, 'utf8')))));
  for (const [name, code] of Object.entries(P.T)) assert.ok(seen.has(code), `no vector for ${name}`);
});

for (const name of names) {
  const bytes = hexBytes(readFileSync(`${dir}${name}.hex`, 'utf8'));
  const fields = parseFields(readFileSync(`${dir}${name}.fields`, 'utf8'));
  if (name.startsWith('bad-')) {
    test(`rejects ${name} (${fields.error})`, () => {
      assert.throws(() => decodeAll(bytes), P.ProtocolError);
    });
    continue;
  }
  test(`decodes and re-encodes ${name}`, () => {
    const msgs = decodeAll(bytes);
    assert.equal(msgs.length, 1);
    const msg = msgs[0];
    assert.equal(msg.type, typeCode(fields));
    for (const [key, value] of Object.entries(fields)) {
      if (key === 'type') continue;
      const got = msg[key];
      if (Buffer.isBuffer(value)) assert.ok(value.equals(got), `${key}: ${got?.toString('hex')}`);
      else assert.deepEqual(got, value, key);
    }
    assert.deepEqual(encode(fields), bytes);
  });
}

// Field by field, without `owned` (whether a DATA payload is a view of the
// chunk or a buffer of its own depends on where the chunks were cut).
const shapes = (messages) => messages.map(({ owned, ...m }) => m);

test('a stream split at every byte decodes to the same frames', () => {
  const frames = names.filter((n) => !n.startsWith('bad-')).map((n) => hexBytes(readFileSync(`${dir}${n}.hex`, 'utf8')));
  const stream = Buffer.concat(frames);
  const whole = decodeAll(stream);
  for (const borrowed of [false, true]) {
    const pieces = [];
    const decoder = new P.Decoder((m) => pieces.push(m));
    const scratch = Buffer.alloc(1);
    for (let i = 0; i < stream.length; i++) {
      // A borrowed chunk is overwritten once push() returns: what the
      // decoder kept must be its own copy. Views it delivered are copied
      // by the caller (joinData) before that.
      scratch[0] = stream[i];
      decoder.push(borrowed ? scratch : stream.subarray(i, i + 1), borrowed);
      if (borrowed) {
        pieces.splice(0, pieces.length, ...P.joinData(pieces, true));
        scratch[0] = 0xee;
      }
    }
    assert.equal(whole.length, frames.length);
    assert.deepEqual(shapes(pieces), shapes(whole), borrowed ? 'borrowed chunks' : 'owned chunks');
  }
});

test('a split DATA frame is delivered whole, once its last byte arrives', () => {
  const payload = Buffer.alloc(P.MAX_DATA, 7);
  payload[0] = 1;
  payload[P.MAX_DATA - 1] = 2;
  const stream = Buffer.concat([P.encodeData(5, 2, payload), P.encodeExit(5, 0, 0)]);
  const seen = [];
  const decoder = new P.Decoder((m) => seen.push(m));
  decoder.push(stream.subarray(0, 40000));
  decoder.push(stream.subarray(40000, 40004));
  assert.equal(seen.length, 0, 'nothing before the frame is complete');
  decoder.push(stream.subarray(40004));
  assert.deepEqual(seen.map((m) => [m.type, m.id, m.fd, m.data?.length, m.owned]),
    [[P.T.DATA, 5, 2, P.MAX_DATA, true], [P.T.EXIT, 5, undefined, undefined, undefined]]);
  assert.ok(seen[0].data.equals(payload));
});

test('a whole DATA frame in a chunk is a view of it, not a copy', () => {
  const stream = Buffer.concat([P.encodeData(3, 1, Buffer.from('hello')), P.encodeExit(3, 0, 0)]);
  const seen = [];
  new P.Decoder((m) => seen.push(m)).push(stream);
  assert.equal(seen[0].data.toString(), 'hello');
  assert.equal(seen[0].owned, false);
  assert.equal(seen[0].data.buffer, stream.buffer);
});

test('a borrowed chunk may be overwritten after push(): split frames keep their bytes', () => {
  const payload = Buffer.from('x'.repeat(300));
  const stream = Buffer.concat([P.encodeSpawned(1, 10), P.encodeData(1, 1, payload), P.encodeEnd(1, 1, 0)]);
  const seen = [];
  const decoder = new P.Decoder((m) => seen.push(m));
  const reused = Buffer.alloc(200);
  for (let at = 0; at < stream.length; at += reused.length) {
    const n = stream.copy(reused, 0, at);
    decoder.push(reused.subarray(0, n), true);
    seen.splice(0, seen.length, ...P.joinData(seen, true));
    reused.fill(0xee);
  }
  assert.deepEqual(seen.map((m) => m.type), [P.T.SPAWNED, P.T.DATA, P.T.END]);
  assert.ok(seen[1].data.equals(payload));
  assert.equal(seen[2].errno, 0);
});

test('joinData: a stream\'s DATA in a row become reads of at most 64 KiB, as a pipe gives them', () => {
  const data = (id, fd, n, byte) => ({ type: P.T.DATA, id, fd, data: Buffer.alloc(n, byte), owned: false });
  const end = { type: P.T.END, id: 1, fd: 1, errno: 0 };
  const msgs = [data(1, 1, 40000, 1), data(1, 1, 20000, 2), data(1, 1, 10000, 3), data(1, 2, 5, 4), data(2, 1, 7, 5), end];
  const out = P.joinData(msgs, false);
  assert.deepEqual(out.map((m) => [m.type, m.id, m.fd, m.data?.length]), [
    [P.T.DATA, 1, 1, 60000], [P.T.DATA, 1, 1, 10000], [P.T.DATA, 1, 2, 5], [P.T.DATA, 2, 1, 7], [P.T.END, 1, 1, undefined],
  ]);
  assert.ok(out[0].data.equals(Buffer.concat([msgs[0].data, msgs[1].data])));
  assert.equal(out[1], msgs[2], 'a DATA alone stays as it was');
  assert.equal(P.joinData([msgs[0], end], false)[0], msgs[0]);
  // Borrowed: every view is copied, alone or not; owned buffers stay.
  const owned = { ...data(1, 1, 3, 9), owned: true };
  const copied = P.joinData([msgs[4], end, owned], true);
  assert.notEqual(copied[0], msgs[4]);
  assert.ok(copied[0].data.equals(msgs[4].data));
  assert.notEqual(copied[0].data.buffer, msgs[4].data.buffer);
  assert.equal(copied[2], owned);
  assert.equal(P.joinData(msgs, false).length, 5);
  assert.equal(P.joinData([end], true)[0], end);
});

test('a listener throwing on a split DATA frame loses and repeats nothing', () => {
  const payload = Buffer.alloc(100, 9);
  const stream = Buffer.concat([P.encodeData(1, 1, payload), P.encodeExit(1, 0, 0), P.encodeExit(2, 0, 0)]);
  const got = [];
  let thrown = 0;
  const decoder = new P.Decoder((m) => {
    got.push(m);
    if (thrown++ < 2) throw new Error('listener failed');
  });
  decoder.push(stream.subarray(0, 50));
  assert.throws(() => decoder.push(stream.subarray(50)), /listener failed/);
  assert.throws(() => decoder.push(Buffer.alloc(0)), /listener failed/);
  decoder.push(Buffer.alloc(0));
  assert.ok(got[0].data.equals(payload));
  assert.deepEqual(got.map((m) => [m.type, m.id]), [[P.T.DATA, 1], [P.T.EXIT, 1], [P.T.EXIT, 2]]);
});

test('a frame larger than MAX_FRAME is refused before it is buffered', () => {
  const header = Buffer.alloc(9);
  header.writeUInt32LE(P.MAX_FRAME + 1, 0);
  assert.throws(() => decodeAll(header), /bad frame length/);
});

test('a DATA frame over MAX_DATA is refused before its payload is buffered, whole or split', () => {
  const over = P.encodeData(1, 1, Buffer.alloc(P.MAX_DATA + 1));
  assert.throws(() => decodeAll(over), /DATA of 65537 bytes \(at most 65536\)/);
  // A corrupt length (16 MiB, within MAX_FRAME) with only its header here:
  // no 16 MiB buffer is allocated for the bytes to come.
  const header = over.subarray(0, 12);
  header.writeUInt32LE(P.MAX_FRAME, 0);
  assert.throws(() => decodeAll(header), /DATA of 16777210 bytes/);
  assert.equal(decodeAll(P.encodeData(1, 1, Buffer.alloc(P.MAX_DATA)))[0].data.length, P.MAX_DATA);
  // Cut before its fd (10 bytes, then 4, then the rest of 64 KiB frames):
  // refused at its first piece, nothing gathered behind it.
  const decoder = new P.Decoder(() => assert.fail('no frame may be delivered'));
  assert.throws(() => decoder.push(header.subarray(0, 10)), /DATA of 16777210 bytes/);
  // Cut inside the length or before the type: refused once the type is here.
  for (const cut of [3, 4]) {
    const d = new P.Decoder(() => assert.fail('no frame may be delivered'));
    d.push(header.subarray(0, cut));
    assert.throws(() => d.push(header.subarray(cut, 6)), /DATA of 16777210 bytes/, `cut at ${cut}`);
  }
});

test('a DATA frame without a byte, cut before its end, is refused once it is whole (no wait for an 11th byte)', () => {
  const empty = Buffer.alloc(10);
  empty.writeUInt32LE(6, 0);
  empty[4] = P.T.DATA;
  empty.writeUInt32LE(1, 5);
  empty[9] = 1;
  const d = new P.Decoder(() => assert.fail('no frame may be delivered'));
  d.push(empty.subarray(0, 7));
  assert.throws(() => d.push(empty.subarray(7)), /empty data/);
});

test('frames cut at every byte, before and after their fd, are decoded as when whole', () => {
  const frames = Buffer.concat([P.encodeData(1, 1, Buffer.from('abc')), P.encodeSpawned(2, 77),
    P.encodeData(3, 2, Buffer.alloc(5000, 1)), P.encodeExit(1, 0, 0)]);
  const whole = decodeAll(frames).map((m) => JSON.stringify({ ...m, data: m.data?.toString('hex'), owned: undefined }));
  for (let cut = 1; cut < frames.length; cut++) {
    const got = [];
    const d = new P.Decoder((m) => got.push(JSON.stringify({ ...m, data: m.data?.toString('hex'), owned: undefined })));
    d.push(frames.subarray(0, cut));
    d.push(frames.subarray(cut));
    assert.deepEqual(got, whole, `cut at ${cut}`);
  }
});

test('a throwing listener loses no frame: the rest is delivered on the next push', () => {
  const frames = [P.encodeSpawned(1, 10), P.encodeExit(1, 0, 0), P.encodeSpawned(2, 11), P.encodeExit(2, 3, 0)];
  const seen = [];
  const decoder = new P.Decoder((m) => {
    seen.push(`${m.type}/${m.id}`);
    if (m.type === P.T.EXIT && m.id === 1) throw new Error('listener failed');
  });
  const stream = Buffer.concat(frames);
  assert.throws(() => decoder.push(stream.subarray(0, stream.length - 3)), /listener failed/);
  decoder.push(Buffer.alloc(0));
  decoder.push(stream.subarray(stream.length - 3));
  assert.deepEqual(seen, [`${P.T.SPAWNED}/1`, `${P.T.EXIT}/1`, `${P.T.SPAWNED}/2`, `${P.T.EXIT}/2`]);
});

test("SPAWN's strings are their UTF-8 bytes whichever way they are copied (short ASCII by hand, the rest by Buffer)", () => {
  const strings = ['', 'echo', 'a'.repeat(64), 'a'.repeat(65), 'é', 'aé', '\u{1F600}', '\uD800', 'x\uDC00y', '/tmp/ü/ß', 'tab\there', '~'.repeat(200)];
  // The frame as docs/protocol.md lays it out, built independently.
  const u32 = (v) => { const b = Buffer.alloc(4); b.writeUInt32LE(v >>> 0); return b; };
  const str = (s) => { const b = Buffer.from(s); return Buffer.concat([u32(b.length), b]); };
  for (const s of strings) {
    const req = { flags: 0, uid: 0, gid: 0, window: 65536, stdio: [1, 0, 1], file: s, cwd: `${s}/`, argv: [s, `${s}x`, 'ok'], env: [`K=${s}`] };
    const payload = Buffer.concat([u32(7), u32(0), u32(0), u32(0), u32(65536), Buffer.from([1, 0, 1]),
      str(req.file), str(req.cwd), u32(3), ...req.argv.map(str), u32(1), str(req.env[0])]);
    const expected = Buffer.concat([u32(5 + payload.length), Buffer.from([P.T.SPAWN]), u32(42), payload]);
    assert.deepEqual(P.encodeSpawn(42, req, 7), expected, JSON.stringify(s));
  }
});

test('putU32/getU32/getI32 store and load as Buffer\'s little-endian methods do, at the edges of their range', () => {
  for (const v of [0, 1, 0xff, 0x100, 0x7fff, 0x8000, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff, 0x12345678]) {
    const ours = Buffer.alloc(6, 0xaa);
    const node = Buffer.alloc(6, 0xaa);
    assert.equal(P.putU32(ours, 1, v), 5);
    node.writeUInt32LE(v, 1);
    assert.deepEqual(ours, node, `store of ${v}`);
    assert.equal(P.getU32(node, 1), node.readUInt32LE(1), `load of ${v}`);
    assert.equal(P.getI32(node, 1), node.readInt32LE(1), `signed load of ${v}`);
  }
  for (const v of [-1, -(2 ** 31), -7]) {
    const buf = Buffer.alloc(4);
    buf.writeInt32LE(v, 0);
    assert.equal(P.getI32(buf, 0), v);
  }
});
