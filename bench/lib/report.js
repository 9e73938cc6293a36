// The report: targets from the design, the markdown tables printed on
// stdout, and the chart's panels. Pure functions over the results object.
import { fmtNum, fmtRatio, ratio } from './stats.js';

const row = (cells) => `| ${cells.join(' | ')} |`;

/** The summary of contender `id` for `workload`, or null. */
export function find(results, workload, id) {
  return results.http.summary[workload]?.find((c) => c.id === id) ?? null;
}

const rpsOf = (results, w, id) => find(results, w, id)?.summary?.rps ?? null;

/** The design's targets, each { name, value, goal, met (true|false|null), why }. */
export function computeTargets(results) {
  const mic = results.micro.summary;
  const spUnavail = find(results, 'echo', 'spawnpool')?.unavailable ?? mic?.spawnpoolUnavailable ?? null;
  const t = [];
  const add = (name, value, fmt, ok, missing) => {
    t.push({ name, value, shown: value == null ? `– (${missing})` : fmt(value), met: value == null ? null : ok(value) });
  };
  const sp = (x) => (spUnavail ? null : x);
  const why = (other) => (spUnavail ? 'spawnpool not built' : other);
  add('echo: spawnpool ≥ 1.1x Go', sp(ratio(rpsOf(results, 'echo', 'spawnpool'), rpsOf(results, 'echo', 'go'))), fmtRatio, (v) => v >= 1.1, why('spawnpool or Go did not run'));
  add('163 KB: spawnpool ≥ 1.0x Rust', sp(ratio(rpsOf(results, 'cat', 'spawnpool'), rpsOf(results, 'cat', 'rust'))), fmtRatio, (v) => v >= 1.0, why('spawnpool or Rust did not run'));
  if (mic) {
    add('raw spawns/s ≥ 0.85 of the C ceiling', sp(ratio(mic.raw.spawnpool, mic.ceiling)), fmtRatio, (v) => v >= 0.85, why('no ceiling or spawnpool run'));
    const e = mic.eld.spawnpool;
    const fl = mic.eld.floor;
    add(`event-loop delay p99 < 5 ms at ${results.config.micro.rate} spawns/s`, sp(e?.eldP99 ?? null),
      (v) => `${v.toFixed(1)} ms (achieved ${fmtNum(e.achieved)}/s${fl ? `; machine floor ${fl.eldP99.toFixed(1)} ms` : ''})`, (v) => v < 5, why('not measured'));
    const small = mic.heaps.find((h) => h.mb === Math.min(...mic.heaps.map((x) => x.mb)));
    const big = mic.heaps.find((h) => h.mb === Math.max(...mic.heaps.map((x) => x.mb)));
    const bigName = big ? (big.mb >= 1024 ? `${big.mb / 1024} GB` : `${big.mb} MB`) : '4 GB';
    add(`${bigName} parent ≥ 0.95 of the small-parent rate`, sp(big && small !== big ? ratio(big.spawnpool, small.spawnpool) : null), fmtRatio, (v) => v >= 0.95, why('not measured'));
    const rss = mic.serverRss.servers.length ? Math.max(...mic.serverRss.servers.map((s) => s.rssKB)) : null;
    add('spawn server RSS < 2 MB', sp(rss), (v) => `${fmtNum(v)} KB (max of ${mic.serverRss.servers.length})`, (v) => v < 2048, why('no server found'));
  }
  // Issue 12's targets ("ahead of Go and Rust").
  add('echo: spawnpool ≥ 1.0x Rust', sp(ratio(rpsOf(results, 'echo', 'spawnpool'), rpsOf(results, 'echo', 'rust'))), fmtRatio, (v) => v >= 1.0, why('spawnpool or Rust did not run'));
  add('163 KB: spawnpool ≥ 1.1x Go', sp(ratio(rpsOf(results, 'cat', 'spawnpool'), rpsOf(results, 'cat', 'go'))), fmtRatio, (v) => v >= 1.1, why('spawnpool or Go did not run'));
  add('163 KB: spawnpool ahead of Bun', sp(ratio(rpsOf(results, 'cat', 'spawnpool'), rpsOf(results, 'cat', 'bun'))), fmtRatio, (v) => v > 1.0, why('spawnpool or Bun did not run'));
  for (const [w, label] of [['echo', 'echo'], ['cat', '163 KB']]) {
    const own = find(results, w, 'spawnpool')?.summary?.budget?.total ?? null;
    const rust = find(results, w, 'rust')?.summary?.budget?.total ?? null;
    add(`${label}: machine CPU per request ≤ Rust's`, sp(own !== null && rust !== null ? own : null),
      (v) => `${fmtNum(v)} µs vs Rust ${fmtNum(rust)} µs`, (v) => v <= rust, why('no budget for spawnpool or Rust'));
  }
  if (mic) {
    const cpu = mic.cpu?.spawnpool ?? null;
    add('Node main-thread CPU per spawn ≤ 35 µs', sp(cpu?.main ?? null), (v) => `${fmtNum(v)} µs (\`true\`, stdio ignored)`, (v) => v <= 35, why('not measured'));
    const echoServers = find(results, 'echo', 'spawnpool')?.summary?.budget?.servers ?? null;
    const servers = echoServers ?? cpu?.servers ?? null;
    add('spawn-server CPU per spawn ≤ 50 µs', sp(servers),
      (v) => `${fmtNum(v)} µs (${echoServers !== null ? 'echo, stdout piped' : '`true`, stdio ignored'})`, (v) => v <= 50, why('not measured'));
    // Each run's own difference (bench/lib/micro.js), not the medians' difference.
    add(`event-loop delay p99 ≤ floor + 0.5 ms at ${results.config.micro.rate} spawns/s`, sp(mic.eld.gap ?? null),
      (v) => `floor ${v < 0 ? '−' : '+'} ${Math.abs(v).toFixed(2)} ms`, (v) => v <= 0.5, why('not measured'));
    const cold = mic.cold?.spawnpool ?? null;
    add('first spawn after import ≤ 10 ms', sp(cold?.toCloseMs ?? null),
      (v) => `${fmtNum(v, 1)} ms to 'close' (node:child_process ${fmtNum(mic.cold?.node?.toCloseMs ?? null, 1)} ms)`, (v) => v <= 10, why('not measured'));
  }
  return t;
}

function httpTable(results, w) {
  const lines = [];
  lines.push(row(['contender', 'req/s', 'p50 ms', 'p99 ms', 'vs Node', 'vs Go', 'vs Rust', 'errors']));
  lines.push(row(['---', '---:', '---:', '---:', '---:', '---:', '---:', '---:']));
  const node = rpsOf(results, w, 'node');
  const go = rpsOf(results, w, 'go');
  const rust = rpsOf(results, w, 'rust');
  const notes = [];
  for (const c of results.http.summary[w]) {
    const name = c.id === 'spawnpool' ? `**${c.label}**` : c.label;
    if (c.skip || c.unavailable) {
      lines.push(row([name, '–', '–', '–', '–', '–', '–', c.skip ? 'skipped' : 'not run']));
      continue;
    }
    const s = c.summary;
    const errs = s.errors + s.non2xx + s.bodyErrors;
    if (errs) notes.push(`${c.label}: ${errs} error(s) — ${c.firstError}`);
    const spread = s.okRounds > 1 ? ` <sub>${fmtNum(s.rpsMin)}–${fmtNum(s.rpsMax)}</sub>` : '';
    // A reference spawns nothing: its rate is no contender's.
    const vs = (base) => (c.reference ? '–' : fmtRatio(ratio(s.rps, base)));
    lines.push(row([name, `${fmtNum(s.rps)}${spread}`, fmtNum(s.p50, 1), fmtNum(s.p99, 1), vs(node), vs(go), vs(rust), errs ? `**${errs}**` : '0']));
  }
  return { lines, notes };
}

/**
 * CPU µs per request by process class (bench/lib/budget.js), with the
 * single-thread ceiling 1 / main-thread CPU where the main thread is one.
 */
export function budgetTable(results, w) {
  const lines = [
    row(['contender', 'main thread', 'other threads', 'helpers', 'spawn servers', 'children', 'server side total', 'load generator', 'machine idle', 'steal', 'ctx switches', 'main-thread ceiling']),
    row(['---', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:']),
  ];
  const us = (v) => (v == null ? '–' : fmtNum(v));
  let any = false;
  for (const c of results.http.summary[w]) {
    const b = c.summary?.budget;
    if (!b) continue;
    any = true;
    const name = c.id === 'spawnpool' ? `**${c.label}**` : c.label;
    // One thread's ceiling where one thread does the serving: not for a
    // cluster (its workers are helpers) nor where other threads carry it.
    const ceiling = b.main && b.main >= b.helpers && b.main >= b.threads ? `${fmtNum(1e6 / b.main)} req/s` : '–';
    lines.push(row([name, us(b.main), us(b.threads), us(b.helpers), us(b.servers), us(b.children), us(b.total), us(b.loadgen), us(b.idle), us(b.steal), fmtNum(b.switches, 1), ceiling]));
  }
  return any ? lines : [];
}

function microTable(results) {
  const m = results.micro.summary;
  const lines = [row(['measure', 'node:child_process', 'spawnpool', 'reference']), row(['---', '---:', '---:', '---'])];
  const na = m.spawnpoolUnavailable ? 'not built' : '–';
  const sp = (v, f) => (v == null ? na : f(v));
  const n = (v, f) => (v == null ? '–' : f(v));
  const rate = (v) => `${fmtNum(v)}/s`;
  const cfg = results.config.micro;
  lines.push(row([`raw spawns/s (\`true\`, ${cfg.concurrency} in flight)`, n(m.raw.node, rate), sp(m.raw.spawnpool, rate),
    m.ceiling ? `C posix_spawn loop, ${m.ceilingThreads} threads: ${rate(m.ceiling)} (node ${fmtRatio(ratio(m.raw.node, m.ceiling))}, spawnpool ${fmtRatio(ratio(m.raw.spawnpool, m.ceiling))})` : 'C ceiling not built']));
  const c = m.cpu ?? {};
  const us = (v) => (v == null ? '–' : `${v.toFixed(0)} µs`);
  const cpuCell = (x) => (x == null ? '–' : `${us(x.main)} main · ${us(x.threads)} other threads · ${us(x.servers)} servers · ${us(x.children)} children`);
  if (c.node || c.spawnpool) {
    lines.push(row(['CPU per spawn (same runs)', cpuCell(c.node), m.spawnpoolUnavailable ? na : cpuCell(c.spawnpool),
      c.bun ? `Bun.spawn under Bun: ${cpuCell(c.bun)} (${rate(m.bunRate)})` : 'main = the event-loop thread']));
  }
  const cold = m.cold ?? {};
  const coldCell = (x) => (x == null ? '–' : `${fmtNum(x.toCloseMs, 1)} ms (import ${fmtNum(x.importMs, 1)}, spawn() ${fmtNum(x.callMs, 1)}, 'spawn' at ${fmtNum(x.toSpawnMs, 1)})`);
  if (cold.node || cold.spawnpool) {
    lines.push(row(["first spawn of a fresh process: call → 'close'", coldCell(cold.node), m.spawnpoolUnavailable ? na : coldCell(cold.spawnpool), 'median of fresh processes, interleaved; import not included']));
  }
  const e = m.eld;
  const eld = (x) => `${x.eldP99.toFixed(1)} ms (max ${x.eldMax.toFixed(0)}; ${fmtNum(x.achieved)}/s achieved)`;
  const floorText = e.floor ? `; this machine's floor (same load from another process): ${e.floor.eldP99.toFixed(1)} ms` : '';
  const runsText = e.runs > 1 ? `; medians of ${e.runs} runs` : '';
  lines.push(row([`event-loop delay p99, spawning ${fmtNum(cfg.rate)}/s`, n(e.node, eld), sp(e.spawnpool, eld), `target < 5 ms${floorText}${runsText}`]));
  const lat = (x) => `${x.spawnP50?.toFixed(2) ?? '–'} ms (p99 ${x.spawnP99?.toFixed(1) ?? '–'})`;
  lines.push(row([`spawn latency p50, call → 'spawn' (same run)`, n(e.node, lat), sp(e.spawnpool, lat), 'design: spawnpool below Node']));
  const small = m.heaps[0];
  for (const h of m.heaps) {
    const size = h.mb >= 1024 ? `${h.mb / 1024} GB` : `${h.mb} MB`;
    const rel = (v, base) => (h === small || v == null || base == null ? '' : ` (${fmtRatio(ratio(v, base))})`);
    lines.push(row([`spawns/s, parent holds ${size} of Buffers (RSS ${fmtNum(h.rssMB)} MB)`,
      h.node == null ? '–' : `${rate(h.node)}${rel(h.node, small.node)}`,
      h.spawnpool == null ? na : `${rate(h.spawnpool)}${rel(h.spawnpool, small.spawnpool)}`,
      `${h === small ? 'the small parent' : 'vs the small parent'}${h.runs > 1 ? `; medians of ${h.runs} runs` : ''}`]));
  }
  const srv = m.serverRss.servers;
  lines.push(row(['spawn server RSS (VmRSS)', 'n/a', srv.length ? srv.map((s) => `${fmtNum(s.rssKB)} KB`).join(', ') : na, 'target < 2 MB each']));
  return lines;
}

/** The whole markdown report. */
export function renderMarkdown(results) {
  const { meta, config } = results;
  const out = [];
  out.push(`## spawnpool benchmark — ${meta.cpus} cores, ${meta.cpuModel}`);
  out.push('');
  out.push(`${meta.date} · Linux ${meta.kernel} · Node ${meta.node} · ${config.quick ? 'quick mode · ' : ''}${config.rounds} round(s), contenders interleaved, medians`);
  if (results.loadgen.name) {
    out.push(`Load: **${results.loadgen.label}**, ${config.connections} connections, ${fmtNum(config.requests)} requests per run after a ${config.verifyRequests}-request verify pass${config.warmupRequests ? ` and ${fmtNum(config.warmupRequests)} untimed warm-up requests` : ''}; bodies checked: ${results.loadgen.verified}.`);
    out.push('The load generator and the server share the same cores: compare ratios, not absolute numbers.');
  }
  for (const w of results.http.workloads.filter((x) => results.http.summary[x.id])) {
    out.push('', `### ${w.title} per request`, '');
    const { lines, notes } = httpTable(results, w.id);
    out.push(...lines);
    if (notes.length) out.push('', ...notes.map((n) => `- ⚠ ${n}`));
    const budget = budgetTable(results, w.id);
    if (budget.length) {
      out.push('', `CPU per request, µs (medians; from /proc over the timed run: the server process's main thread and other threads, its helper processes, spawn servers, the spawned programs, the load generator; the whole machine's idle and steal time, all CPUs; context switches of the server's processes):`, '', ...budget);
    }
  }
  const skipped = results.contenders.filter((c) => c.skip || c.unavailable);
  if (skipped.length) {
    out.push('', 'Not run:');
    for (const c of skipped) out.push(`- ${c.label}: ${c.skip ?? c.unavailable}`);
  }
  if (results.micro.summary) {
    out.push('', '### Micro-benchmarks (no HTTP)', '', ...microTable(results));
    if (results.micro.summary.spawnpoolUnavailable) out.push('', `spawnpool: ${results.micro.summary.spawnpoolUnavailable}`);
    for (const e of results.micro.summary.errors) out.push(`- ⚠ ${e}`);
  }
  out.push('', '### Targets', '', row(['target', 'measured', '']), row(['---', '---:', '---']));
  for (const t of results.targets) out.push(row([t.name, t.shown, t.met == null ? 'n/a' : t.met ? 'met' : 'missed']));
  out.push('', `Wall time ${fmtNum(meta.wallSeconds)} s (builds ${fmtNum(meta.buildSeconds, 1)} s). Results: ${results.files.json}, chart: ${results.files.svg}`);
  return out.join('\n');
}

/** The chart's panels: one per HTTP workload, one for spawns without HTTP. */
export function chartPanels(results) {
  const panels = httpPanels(results);
  const m = results.micro.summary;
  if (m && (m.raw.node != null || m.ceiling != null)) {
    const na = m.spawnpoolUnavailable ? 'not built' : 'n/a';
    const big = m.heaps.length > 1 ? m.heaps[m.heaps.length - 1] : null;
    const size = big && (big.mb >= 1024 ? `${big.mb / 1024} GB` : `${big.mb} MB`);
    const bars = [
      { id: 'node', label: 'node:child_process', value: m.raw.node },
      { id: 'spawnpool', label: 'spawnpool', value: m.raw.spawnpool, note: m.raw.spawnpool == null ? na : '' },
    ];
    if (big) {
      bars.push({ id: 'node', label: `node:child_process, ${size} parent`, value: big.node });
      bars.push({ id: 'spawnpool', label: `spawnpool, ${size} parent`, value: big.spawnpool, note: big.spawnpool == null ? na : '' });
    }
    bars.push({ id: 'go', label: `C posix_spawn loop, ${m.ceilingThreads ?? '?'} threads`, value: m.ceiling, note: m.ceiling == null ? 'not built' : 'ceiling' });
    panels.push({ title: `spawns of true, no HTTP, ${results.config.micro.concurrency} in flight`, unit: 'spawns/s', bars });
  }
  return panels;
}

function httpPanels(results) {
  return results.http.workloads.filter((w) => results.http.summary[w.id]).map((w) => ({
    title: `${w.title} per request · req/s (median of ${results.config.rounds})`,
    unit: 'req/s',
    bars: results.http.summary[w.id].filter((c) => !c.reference).map((c) => ({
      id: c.id,
      label: c.label,
      value: c.summary?.rps ?? null,
      note: c.skip ? 'skipped' : c.unavailable ? 'not built' : c.summary && c.summary.errors + c.summary.non2xx + c.summary.bodyErrors ? 'errors!' : (c.id === 'node' ? '' : fmtRatio(ratio(c.summary?.rps, rpsOf(results, w.id, 'node'))) + ' Node'),
    })),
  }));
}
