// The bench's outputs: the fixture is deterministic, the SVG is well formed
// and escaped, the markdown and targets read a results object correctly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CAT_FILE_SIZE, generateCSource, sha256 } from '../../bench/lib/fixture.js';
import { renderSvg } from '../../bench/lib/svg.js';
import { computeTargets, renderMarkdown, chartPanels } from '../../bench/lib/report.js';
import { summarizeMicro } from '../../bench/lib/micro.js';

test('the cat fixture is 163 KB and the same bytes every time', () => {
  const a = generateCSource();
  assert.equal(a.length, CAT_FILE_SIZE);
  assert.equal(CAT_FILE_SIZE, 163 * 1024);
  assert.equal(sha256(a), 'dfd3a13ef8ff6ef639ef93780df1ef8e9bae79719e5538ef1152fb6e099f4ce2');
  assert.match(a.toString('latin1'), /^\/\* Generated[^]*int main\(void\)[^]*\}\n$/);
});

test('renderSvg: balanced tags, escaped labels, one rect per value', () => {
  const svg = renderSvg({
    title: 'T <&>',
    panels: [{ title: 'p', unit: 'req/s', bars: [
      { id: 'node', label: "Node 'fork' <IPC>", value: 100 },
      { id: 'spawnpool', label: 'spawnpool', value: 250, note: '2.50x Node' },
      { id: 'bun', label: 'Bun', value: null, note: 'skipped' },
    ] }],
  });
  assert.match(svg, /^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.ok(svg.trim().endsWith('</svg>'));
  assert.ok(svg.includes('T &lt;&amp;&gt;'));
  assert.ok(svg.includes('Node &#39;fork&#39; &lt;IPC&gt;'));
  assert.equal((svg.match(/<rect /g) ?? []).length, 3); // background + 2 bars
  assert.equal((svg.match(/<text/g) ?? []).length, (svg.match(/<\/text>/g) ?? []).length);
  assert.ok(!/[<>&](?![a-z#/!?])/.test(svg.replace(/<[^>]+>/g, '')), 'stray markup characters in text');
});

function fakeResults({ spawnpool = true } = {}) {
  const s = (rps, total) => ({ rounds: 3, okRounds: 3, rps, p50: 10, p99: 20, errors: 0, non2xx: 0, bodyErrors: 0, rpsMin: rps, rpsMax: rps,
    budget: { main: 100, threads: 10, helpers: 0, servers: 40, children: total - 150, total, loadgen: 50, switches: 2 } });
  const list = (sp, go, rust) => [
    { id: 'node', label: 'Node', summary: s(400, 2000) },
    spawnpool ? { id: 'spawnpool', label: 'spawnpool', summary: s(sp, sp === 1800 ? 900 : 1200) } : { id: 'spawnpool', label: 'spawnpool', unavailable: 'spawnpool not built (x)', summary: null },
    { id: 'go', label: 'Go', summary: s(go, 1000) },
    { id: 'rust', label: 'Rust', summary: s(rust, 1000) },
    { id: 'bun', label: 'Bun', skip: 'bun not found', summary: null },
  ];
  return {
    meta: { cpus: 2, cpuModel: 'X', date: 'D', kernel: 'K', node: 'v20', wallSeconds: 1, buildSeconds: 0 },
    config: { rounds: 3, connections: 30, requests: 100, verifyRequests: 10, quick: false, micro: { rate: 1000, concurrency: 64 } },
    loadgen: { name: 'autocannon', label: 'autocannon', verified: 'every body' },
    contenders: [{ id: 'bun', label: 'Bun', skip: 'bun not found' }],
    http: { workloads: [{ id: 'echo', title: 'echo hi' }, { id: 'cat', title: 'cat' }], summary: { echo: list(1800, 1500, 1600), cat: list(1000, 900, 1100) } },
    micro: { summary: {
      ceiling: 3000, ceilingThreads: 2, raw: { node: 900, spawnpool: spawnpool ? 2700 : null },
      eld: { node: { eldP99: 20, eldMax: 30, achieved: 800, spawnP50: 5, spawnP99: 9 }, spawnpool: spawnpool ? { eldP99: 3, eldMax: 4, achieved: 1000, spawnP50: 1, spawnP99: 2 } : null, floor: { eldP99: 2.7 }, gap: spawnpool ? 0.3 : null, runs: 3 },
      cpu: { node: { main: 400, threads: 30, servers: 0, children: 800 }, spawnpool: spawnpool ? { main: 30, threads: 20, servers: 30, children: 500 } : null, bun: null },
      cold: { node: { importMs: 1, callMs: 2, toSpawnMs: 2, toCloseMs: 3 }, spawnpool: spawnpool ? { importMs: 15, callMs: 8, toSpawnMs: 9, toCloseMs: 11 } : null },
      heaps: [{ mb: 50, rssMB: 90, node: 400, spawnpool: spawnpool ? 2600 : null }, { mb: 4096, rssMB: 4140, node: 9, spawnpool: spawnpool ? 2500 : null }],
      serverRss: { source: 'pool.stats()', servers: spawnpool ? [{ pid: 1, rssKB: 700 }, { pid: 2, rssKB: 3000 }] : [] },
      spawnpoolUnavailable: spawnpool ? null : 'spawnpool not built (x)', errors: [],
    } },
    targets: [], files: { json: 'a.json', svg: 'a.svg' },
  };
}

test('computeTargets: ratios against Go, Rust, the ceiling and the small parent; issue 12\'s budget targets', () => {
  const t = Object.fromEntries(computeTargets(fakeResults()).map((x) => [x.name, x]));
  assert.equal(t['echo: spawnpool ≥ 1.1x Go'].value, 1.2);
  assert.equal(t['echo: spawnpool ≥ 1.1x Go'].met, true);
  assert.ok(Math.abs(t['163 KB: spawnpool ≥ 1.0x Rust'].value - 1000 / 1100) < 1e-9);
  assert.equal(t['163 KB: spawnpool ≥ 1.0x Rust'].met, false);
  assert.equal(t['raw spawns/s ≥ 0.85 of the C ceiling'].value, 0.9);
  assert.equal(t['event-loop delay p99 < 5 ms at 1000 spawns/s'].met, true);
  assert.ok(Math.abs(t['4 GB parent ≥ 0.95 of the small-parent rate'].value - 2500 / 2600) < 1e-9);
  assert.equal(t['spawn server RSS < 2 MB'].value, 3000);
  assert.equal(t['spawn server RSS < 2 MB'].met, false);
  assert.equal(t['echo: spawnpool ≥ 1.0x Rust'].value, 1800 / 1600);
  assert.equal(t['163 KB: spawnpool ≥ 1.1x Go'].value, 1000 / 900);
  assert.equal(t['163 KB: spawnpool ≥ 1.1x Go'].met, true);
  assert.equal(t['163 KB: spawnpool ahead of Bun'].met, null, 'Bun was skipped');
  assert.deepEqual([t['echo: machine CPU per request ≤ Rust\'s'].value, t['echo: machine CPU per request ≤ Rust\'s'].met], [900, true]);
  assert.deepEqual([t['163 KB: machine CPU per request ≤ Rust\'s'].value, t['163 KB: machine CPU per request ≤ Rust\'s'].met], [1200, false]);
  assert.deepEqual([t['Node main-thread CPU per spawn ≤ 35 µs'].value, t['Node main-thread CPU per spawn ≤ 35 µs'].met], [30, true]);
  assert.equal(t['spawn-server CPU per spawn ≤ 50 µs'].value, 40, 'the echo budget, stdout piped');
  assert.ok(Math.abs(t['event-loop delay p99 ≤ floor + 0.5 ms at 1000 spawns/s'].value - 0.3) < 1e-9);
  assert.deepEqual([t['first spawn after import ≤ 10 ms'].value, t['first spawn after import ≤ 10 ms'].met], [11, false]);
});

test('without spawnpool every target says why instead of a number', () => {
  const r = fakeResults({ spawnpool: false });
  for (const t of computeTargets(r)) {
    assert.equal(t.met, null);
    assert.match(t.shown, /spawnpool not built/);
  }
  r.targets = computeTargets(r);
  const md = renderMarkdown(r);
  assert.match(md, /\| \*\*spawnpool\*\* \| – \|/);
  assert.match(md, /Bun: bun not found/);
  const bars = chartPanels(r)[0].bars;
  assert.equal(bars.find((b) => b.id === 'spawnpool').note, 'not built');
});

test('renderMarkdown: one table per workload with ratios vs Node, Go and Rust', () => {
  const r = fakeResults();
  r.targets = computeTargets(r);
  const md = renderMarkdown(r);
  assert.match(md, /### echo hi per request/);
  assert.match(md, /\| \*\*spawnpool\*\* \| 1,800 <sub>1,800–1,800<\/sub> \| 10\.0 \| 20\.0 \| 4\.50x \| 1\.20x \| 1\.13x \| 0 \|/);
  assert.match(md, /### Micro-benchmarks/);
  assert.match(md, /\| echo: spawnpool ≥ 1\.1x Go \| 1\.20x \| met \|/);
});

test('a reference (Node http alone) gets no ratios and no bar, but its CPU budget row', () => {
  const r = fakeResults();
  for (const w of ['echo', 'cat']) {
    r.http.summary[w].push({ id: 'node-floor', label: 'Node http alone', reference: true,
      summary: { ...r.http.summary[w][0].summary, rps: 9000, rpsMin: 9000, rpsMax: 9000, budget: { main: 40, threads: 25, helpers: 0, servers: 0, children: 0, total: 65, loadgen: 30, switches: 0.3 } } });
  }
  r.targets = computeTargets(r);
  const md = renderMarkdown(r);
  assert.match(md, /\| Node http alone \| 9,000 <sub>9,000–9,000<\/sub> \| 10\.0 \| 20\.0 \| – \| – \| – \| 0 \|/);
  assert.match(md, /\| Node http alone \| 40 \| 25 \| 0 \| 0 \| 0 \| 65 \| 30 \| – \| – \| 0\.3 \| 25,000 req\/s \|/);
  for (const panel of chartPanels(r).slice(0, 2)) assert.ok(!panel.bars.some((b) => b.id === 'node-floor'), panel.title);
  assert.deepEqual(computeTargets(r).map((t) => t.value), computeTargets(fakeResults()).map((t) => t.value));
});

test('summarizeMicro: an unavailable spawnpool yields nulls and its reason, never a crash', () => {
  const why = 'spawnpool not built (x)';
  const m = summarizeMicro({
    ceiling: [{ rate: 3000, threads: 2 }, { rate: 3200, threads: 2 }],
    raw: [{ results: [{ impl: 'node', rate: 900 }, { impl: 'spawnpool', unavailable: why }] }],
    eld: { results: [{ impl: 'node', eldP99: 20, eldMax: 30, achieved: 800 }, { impl: 'spawnpool', unavailable: why }] },
    heaps: [{ heapMB: 50, rssMB: 90, results: [{ impl: 'node', rate: 400 }, { impl: 'spawnpool', unavailable: why }] }],
    errors: [],
  });
  assert.equal(m.ceiling, 3100);
  assert.equal(m.raw.node, 900);
  assert.equal(m.raw.spawnpool, null);
  assert.equal(m.eld.spawnpool, null);
  assert.equal(m.heaps[0].spawnpool, null);
  assert.equal(m.spawnpoolUnavailable, why);
  const r = fakeResults({ spawnpool: false });
  r.micro.summary = m;
  r.targets = computeTargets(r);
  assert.match(renderMarkdown(r), /\| raw spawns\/s .* \| 900\/s \| not built \|/);
});

test('summarizeMicro: event-loop delay is the median of the runs, and the gap over the floor the median of each run\'s own', () => {
  const run = (node, sp, floor) => ({
    results: [{ impl: 'node', eldP99: node, eldMax: 2 * node, achieved: 700 }, { impl: 'spawnpool', eldP99: sp, eldMax: 2 * sp, achieved: 990 }],
    floor: { impl: 'floor', eldP99: floor, eldMax: floor },
  });
  const m = summarizeMicro({
    ceiling: [], raw: [], heaps: [], errors: [],
    eld: [run(18, 4.0, 3.0), run(20, 3.5, 3.4), run(25, 6.0, 3.2)],
  });
  assert.equal(m.eld.runs, 3);
  assert.equal(m.eld.node.eldP99, 20);
  assert.equal(m.eld.spawnpool.eldP99, 4.0);
  assert.equal(m.eld.spawnpool.eldMax, 8);
  assert.equal(m.eld.floor.eldP99, 3.2);
  // Each run's own difference: 1.0, 0.1, 2.8; not 4.0 - 3.2.
  assert.ok(Math.abs(m.eld.gap - 1.0) < 1e-9, String(m.eld.gap));
  const r = fakeResults();
  r.micro.summary = m;
  const gap = computeTargets(r).find((t) => t.name.startsWith('event-loop delay p99 ≤ floor'));
  assert.ok(Math.abs(gap.value - 1.0) < 1e-9);
  assert.equal(gap.met, false);
  assert.match(renderMarkdown({ ...r, targets: computeTargets(r) }), /medians of 3 runs/);
});

test('summarizeMicro: big-parent rates are medians per heap size over the rounds, in the order run', () => {
  const h = (mb, node, sp) => ({ heapMB: mb, rssMB: mb + 40, results: [{ impl: 'node', rate: node }, { impl: 'spawnpool', rate: sp }] });
  const m = summarizeMicro({
    ceiling: [], raw: [], eld: [], errors: [],
    heaps: [h(50, 300, 3000), h(4096, 10, 2500), h(50, 320, 3400), h(4096, 11, 3300), h(50, 310, 3200), h(4096, 9, 3100)],
  });
  assert.deepEqual(m.heaps, [
    { mb: 50, rssMB: 90, node: 310, spawnpool: 3200, runs: 3 },
    { mb: 4096, rssMB: 4136, node: 10, spawnpool: 3100, runs: 3 },
  ]);
  const r = fakeResults();
  r.micro.summary = { ...r.micro.summary, heaps: m.heaps };
  const big = computeTargets(r).find((t) => t.name.includes('parent ≥ 0.95'));
  assert.ok(Math.abs(big.value - 3100 / 3200) < 1e-9);
  assert.match(renderMarkdown({ ...r, targets: computeTargets(r) }), /vs the small parent; medians of 3 runs/);
});

test('summarizeMicro: a field one event-loop run lacks is the median of the runs that have it', () => {
  const run = (sp) => ({ results: [{ impl: 'spawnpool', eldP99: 4, eldMax: 8, achieved: 990, ...sp }], floor: { eldP99: 3, eldMax: 5 } });
  const m = summarizeMicro({
    ceiling: [], raw: [], heaps: [], errors: [],
    eld: [run({ spawnP50: null, spawnP99: null }), run({ spawnP50: 0.2, spawnP99: 3 }), run({ spawnP50: 0.1, spawnP99: 5 })],
  });
  assert.ok(Math.abs(m.eld.spawnpool.spawnP50 - 0.15) < 1e-12, String(m.eld.spawnpool.spawnP50));
  assert.equal(m.eld.spawnpool.spawnP99, 4);
  assert.equal(m.eld.spawnpool.eldP99, 4);
});

test('computeTargets: no gap over the floor measured (no run with both), no value', () => {
  const r = fakeResults();
  r.micro.summary = { ...r.micro.summary, eld: { ...r.micro.summary.eld, gap: null } };
  const gap = computeTargets(r).find((t) => t.name.startsWith('event-loop delay p99 ≤ floor'));
  assert.equal(gap.value, null);
});
