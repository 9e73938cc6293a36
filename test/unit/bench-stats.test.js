// The bench's numbers: medians of rounds, ratios, the round rotation, flag
// parsing, and the bombardier byte-count check.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { median, percentile, ratio, summarize } from '../../bench/lib/stats.js';
import { rotate } from '../../bench/lib/http.js';
import { fromBombardier } from '../../bench/lib/loadgen.js';
import { parseConfig } from '../../bench/lib/config.js';

test('median and percentile ignore missing values', () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(median([null, 5, undefined, NaN]), 5);
  assert.equal(median([]), null);
  assert.equal(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 99), 10);
  assert.equal(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 50), 5);
  assert.equal(percentile([], 50), null);
});

test('ratio is null when either side is missing or zero', () => {
  assert.equal(ratio(10, 4), 2.5);
  assert.equal(ratio(null, 4), null);
  assert.equal(ratio(10, 0), null);
});

test('summarize takes medians of good rounds and sums every error', () => {
  const s = summarize([
    { rps: 100, p50: 10, p99: 50, errors: 0, non2xx: 0, bodyErrors: 0 },
    { rps: null, errors: 3, non2xx: 0, bodyErrors: 0 },
    { rps: 300, p50: 30, p99: 70, errors: 0, non2xx: 1, bodyErrors: 2 },
  ]);
  assert.equal(s.rps, 200);
  assert.equal(s.p50, 20);
  assert.equal(s.okRounds, 2);
  assert.equal(s.errors, 3);
  assert.equal(s.non2xx, 1);
  assert.equal(s.bodyErrors, 2);
  assert.deepEqual([s.rpsMin, s.rpsMax], [100, 300]);
});

test('rotate moves the first contender of each round to the back', () => {
  assert.deepEqual(rotate(['a', 'b', 'c'], 0), ['a', 'b', 'c']);
  assert.deepEqual(rotate(['a', 'b', 'c'], 1), ['b', 'c', 'a']);
  assert.deepEqual(rotate(['a', 'b', 'c'], 4), ['b', 'c', 'a']);
  assert.deepEqual(rotate([], 2), []);
});

const bomb = (over) => ({
  result: {
    bytesRead: 1000 * 97, timeTakenSeconds: 2, req1xx: 0, req2xx: 1000, req3xx: 0, req4xx: 0, req5xx: 0, others: 0,
    latency: { percentiles: { 50: 15000, 99: 40000 } }, ...over,
  },
});

test('fromBombardier: rate, latency in ms, and the bytes-read floor', () => {
  const ok = fromBombardier(bomb(), { requests: 1000, bodyBytes: 3, minHead: 80 });
  assert.equal(ok.rps, 500);
  assert.equal(ok.p50, 15);
  assert.equal(ok.p99, 40);
  assert.equal(ok.errors + ok.non2xx + ok.bodyErrors, 0);
  // Empty bodies: every response 3 bytes short of head 95 + body 3.
  const short = fromBombardier(bomb({ bytesRead: 1000 * 95 }), { requests: 1000, bodyBytes: 3, minHead: 95 });
  assert.ok(short.bodyErrors > 0);
  assert.match(short.firstError, /bodies short/);
  const failed = fromBombardier(bomb({ req2xx: 990, req5xx: 5, others: 5 }), { requests: 1000, bodyBytes: 3, minHead: 80 });
  assert.equal(failed.errors, 5);
  assert.equal(failed.non2xx, 5);
});

test('parseConfig: defaults, quick, --only sections and contenders, bad flags', () => {
  const d = parseConfig([]);
  assert.equal(d.rounds, 3);
  assert.equal(d.connections, 30);
  assert.deepEqual(d.sections, { http: true, micro: true });
  const q = parseConfig(['--quick']);
  assert.equal(q.rounds, 1);
  assert.ok(q.requests < d.requests);
  assert.ok(Math.max(...q.micro.heaps) < Math.max(...d.micro.heaps));
  const o = parseConfig(['--only', 'go,rust', '--rounds', '5', '--requests', '100']);
  assert.deepEqual([...o.only], ['go', 'rust']);
  assert.deepEqual(o.sections, { http: true, micro: false });
  assert.equal(o.rounds, 5);
  assert.equal(o.requests, 100);
  assert.deepEqual(parseConfig(['--only', 'micro']).sections, { http: false, micro: true });
  assert.throws(() => parseConfig(['--only', 'nope']), /unknown nope/);
  assert.throws(() => parseConfig(['--rounds', '0']), /integer ≥ 1/);
  assert.throws(() => parseConfig(['--loadgen', 'ab']), /one of/);
  assert.throws(() => parseConfig(['--frobnicate']));
});
