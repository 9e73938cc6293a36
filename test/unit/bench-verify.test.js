// The bench's body verifier: the incremental HTTP parser, the mismatch text,
// and a verify pass against a real local server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { ResponseParser, describeMismatch, verifyPass } from '../../bench/lib/verify.js';

const chunked = Buffer.from(
  'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n' +
  '3\r\nhi\n\r\n' + 'a\r\n0123456789\r\n' + '0\r\n\r\n',
);
const sized = Buffer.from('HTTP/1.1 404 Not Found\r\nContent-Length: 10\r\n\r\nnot found\n');

test('parses chunked and sized responses fed one byte at a time', () => {
  const p = new ResponseParser();
  const all = Buffer.concat([chunked, sized]);
  const got = [];
  for (let i = 0; i < all.length; i++) got.push(...p.feed(all.subarray(i, i + 1)));
  assert.equal(got.length, 2);
  assert.equal(got[0].status, 200);
  assert.equal(got[0].body.toString(), 'hi\n0123456789');
  assert.equal(got[0].rawBytes, chunked.length);
  assert.equal(got[0].headBytes, chunked.indexOf('\r\n\r\n') + 4);
  assert.equal(got[1].status, 404);
  assert.equal(got[1].body.toString(), 'not found\n');
  assert.equal(got[1].rawBytes, sized.length);
});

test('rejects a malformed status line and a bad chunk size', () => {
  assert.throws(() => new ResponseParser().feed(Buffer.from('HTTP/9 what\r\n\r\n')), /bad status line/);
  assert.throws(() => new ResponseParser().feed(Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n')), /bad chunk size/);
});

test('describeMismatch names truncation and the first differing byte', () => {
  const want = Buffer.from('hello world');
  assert.equal(describeMismatch(Buffer.from('hello world'), want), null);
  assert.match(describeMismatch(Buffer.from('hello'), want), /5 bytes, want 11 \(truncated\)/);
  assert.match(describeMismatch(Buffer.from(''), want), /0 bytes/);
  assert.match(describeMismatch(Buffer.from('hello World'), want), /differs at byte 6/);
});

test('verifyPass counts good bodies, wrong bodies and non-200s from a live server', async () => {
  let n = 0;
  const server = http.createServer((req, res) => {
    n++;
    if (n % 10 === 3) res.end('ho\n'); // wrong body
    else if (n % 10 === 7) res.writeHead(500).end('boom');
    else res.end('hi\n');
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  try {
    const v = await verifyPass({ port: server.address().port, path: '/echo', expected: Buffer.from('hi\n'), requests: 40, concurrency: 5, timeoutMs: 5000 });
    assert.equal(v.requests, 40);
    assert.equal(v.bodyErrors, 4);
    assert.equal(v.non2xx, 4);
    assert.equal(v.ok, 32);
    assert.equal(v.errors, 0);
    assert.ok(v.minHead > 0 && v.minRaw > v.minHead);
  } finally {
    server.close();
  }
});

test('verifyPass bounds a server that never answers', async () => {
  const server = http.createServer(() => {});
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  try {
    const v = await verifyPass({ port: server.address().port, path: '/echo', expected: Buffer.from('hi\n'), requests: 5, concurrency: 5, timeoutMs: 200 });
    assert.equal(v.ok, 0);
    assert.equal(v.errors, 5);
    assert.match(v.firstError, /timed out/);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
