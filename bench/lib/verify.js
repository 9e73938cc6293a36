// Body verification. A tiny HTTP/1.1 client with an incremental response
// parser: it keeps each response's exact wire size (head + framing), which the
// bombardier check needs, and the body bytes, which are compared in full.
import net from 'node:net';

const CRLF2 = Buffer.from('\r\n\r\n');

/** Incremental HTTP/1.1 response parser: feed() chunks, get whole responses. */
export class ResponseParser {
  constructor() {
    this.buf = Buffer.alloc(0);
    this.cur = null; // { status, headers, headBytes, framing, body[], bodyLen, raw, left, chunked }
  }

  /** Feed bytes; returns the responses completed by them. Throws on malformed input. */
  feed(chunk) {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    const done = [];
    for (;;) {
      const r = this.cur ? this.#body() : this.#head();
      if (r === null) break;
      if (r !== true) done.push(r);
    }
    return done;
  }

  #take(n) {
    const out = this.buf.subarray(0, n);
    this.buf = this.buf.subarray(n);
    this.cur.raw += n;
    return out;
  }

  #head() {
    const end = this.buf.indexOf(CRLF2);
    if (end < 0) {
      if (this.buf.length > 64 * 1024) throw new Error('response head over 64 KiB');
      return null;
    }
    const lines = this.buf.subarray(0, end).toString('latin1').split('\r\n');
    const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0]);
    if (!m) throw new Error(`bad status line: ${JSON.stringify(lines[0].slice(0, 80))}`);
    const headers = {};
    for (const l of lines.slice(1)) {
      const i = l.indexOf(':');
      if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    const status = Number(m[1]);
    this.cur = { status, headers, headBytes: end + 4, body: [], bodyLen: 0, raw: 0, left: 0, state: 'data' };
    this.#take(end + 4);
    if (/chunked/i.test(headers['transfer-encoding'] ?? '')) this.cur.state = 'size';
    else if (headers['content-length'] !== undefined) this.cur.left = Number(headers['content-length']);
    else if (status === 204 || status === 304) this.cur.left = 0;
    else throw new Error('response without length (close-delimited) is not supported');
    return true;
  }

  #body() {
    const c = this.cur;
    if (c.state === 'data') {
      if (c.left > 0) {
        if (this.buf.length === 0) return null;
        const part = this.#take(Math.min(c.left, this.buf.length));
        c.body.push(part);
        c.bodyLen += part.length;
        c.left -= part.length;
        if (c.left > 0) return null;
      }
      if (c.headers['transfer-encoding'] === undefined || !/chunked/i.test(c.headers['transfer-encoding'])) return this.#finish();
      c.state = 'crlf';
    }
    if (c.state === 'crlf') {
      if (this.buf.length < 2) return null;
      if (this.buf[0] !== 13 || this.buf[1] !== 10) throw new Error('missing CRLF after chunk');
      this.#take(2);
      c.state = 'size';
    }
    if (c.state === 'size') {
      const eol = this.buf.indexOf('\r\n');
      if (eol < 0) return null;
      const size = parseInt(this.buf.subarray(0, eol).toString('latin1'), 16);
      if (!Number.isFinite(size)) throw new Error('bad chunk size');
      this.#take(eol + 2);
      if (size === 0) c.state = 'trailer';
      else {
        c.left = size;
        c.state = 'data';
      }
      return true;
    }
    if (c.state === 'trailer') {
      const eol = this.buf.indexOf('\r\n');
      if (eol < 0) return null;
      this.#take(eol + 2);
      if (eol === 0) return this.#finish();
      return true;
    }
    throw new Error(`parser state ${c.state}`);
  }

  #finish() {
    const c = this.cur;
    this.cur = null;
    return { status: c.status, headers: c.headers, body: Buffer.concat(c.body, c.bodyLen), headBytes: c.headBytes, rawBytes: c.raw };
  }
}

/** Why `got` is not `want`, in a few words; null when they are equal. */
export function describeMismatch(got, want) {
  if (got.equals(want)) return null;
  const n = Math.min(got.length, want.length);
  let i = 0;
  while (i < n && got[i] === want[i]) i++;
  const show = (b) => JSON.stringify(b.subarray(0, 24).toString('latin1'));
  if (i === n) return `body is ${got.length} bytes, want ${want.length} (${got.length < want.length ? 'truncated' : 'extra bytes'})`;
  return `body differs at byte ${i}: got ${show(got.subarray(i))}, want ${show(want.subarray(i))}`;
}

/**
 * Send `requests` GETs for `path` over `concurrency` keep-alive connections
 * and check every response: status 200 and body equal to `expected`.
 * Bounded by `timeoutMs`. Resolves to counts plus the wire sizes seen.
 */
export function verifyPass({ port, path, expected, requests, concurrency = 30, timeoutMs = 60_000 }) {
  const out = { requests: 0, ok: 0, bodyErrors: 0, non2xx: 0, errors: 0, firstError: null, minHead: Infinity, minRaw: Infinity, maxRaw: 0 };
  const note = (msg) => { out.firstError ??= msg; };
  let issued = 0;
  const req = Buffer.from(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: keep-alive\r\n\r\n`);
  return new Promise((resolve) => {
    const sockets = new Set();
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      for (const s of sockets) s.destroy();
      if (out.minRaw === Infinity) out.minRaw = out.minHead = 0;
      resolve(out);
    };
    const timer = setTimeout(() => {
      out.errors += requests - out.requests;
      note(`verify pass timed out after ${timeoutMs} ms (${out.requests}/${requests} answered)`);
      finish();
    }, timeoutMs);
    const open = () => {
      if (issued >= requests) return;
      issued++;
      const parser = new ResponseParser();
      const s = net.connect(port, '127.0.0.1');
      s.setNoDelay(true);
      sockets.add(s);
      let waiting = true;
      s.on('connect', () => s.write(req));
      s.on('data', (chunk) => {
        let got;
        try {
          got = parser.feed(chunk);
        } catch (err) {
          out.errors++;
          note(`malformed response: ${err.message}`);
          s.destroy();
          return;
        }
        for (const r of got) {
          waiting = false;
          out.requests++;
          out.minHead = Math.min(out.minHead, r.headBytes);
          out.minRaw = Math.min(out.minRaw, r.rawBytes);
          out.maxRaw = Math.max(out.maxRaw, r.rawBytes);
          if (r.status !== 200) {
            out.non2xx++;
            note(`status ${r.status}: ${JSON.stringify(r.body.subarray(0, 80).toString('latin1'))}`);
          } else {
            const why = describeMismatch(r.body, expected);
            if (why) {
              out.bodyErrors++;
              note(why);
            } else out.ok++;
          }
          if (out.requests + out.errors >= requests) return finish();
          if (issued < requests && !/close/i.test(r.headers.connection ?? '')) {
            issued++;
            waiting = true;
            s.write(req);
          } else {
            sockets.delete(s);
            s.end();
            open(); // server closed keep-alive (or we are done): next request, new connection
          }
        }
      });
      s.on('error', (err) => note(`socket: ${err.code ?? err.message}`));
      s.on('close', () => {
        sockets.delete(s);
        if (finished) return;
        if (waiting) {
          out.errors++;
          note('connection closed before the response completed');
          if (out.requests + out.errors >= requests) return finish();
          open(); // keep the concurrency: the next request goes on a new connection
        } else if (sockets.size === 0 && out.requests + out.errors >= requests) finish();
      });
    };
    for (let i = 0; i < Math.min(concurrency, requests); i++) open();
  });
}
