// The micro-benchmarks, each in a child process of its own so the harness's
// memory and timers stay out of them: the C ceiling, raw spawn throughput,
// event-loop delay at a fixed spawn rate, big-parent spawn rates, server RSS.
import { join } from 'node:path';
import { availableParallelism } from 'node:os';
import { runCapture } from './loadgen.js';
import { fieldMedians, median } from './stats.js';

function lastJson(r) {
  const line = r.stdout.trim().split('\n').filter((l) => l.startsWith('{')).pop();
  if (!line) throw new Error(`${r.timedOut ? 'timed out' : `exit ${r.code}`}: ${r.stderr.trim().split('\n').slice(-3).join(' | ')}`);
  return JSON.parse(line);
}

async function nodeScript(benchDir, script, args, env, timeoutMs, runtime = process.execPath) {
  return lastJson(await runCapture(runtime, [join(benchDir, 'micro', script), ...args], { env, timeoutMs }));
}

const byImpl = (results, impl) => results.find((r) => r.impl === impl) ?? null;

/** Run every micro-benchmark; failures are recorded, never thrown. */
export async function runMicro({ benchDir, config, builds, env, progress, trueBin, bun = null }) {
  const m = config.micro;
  const out = { trueBin, ceiling: [], raw: [], bun: [], eld: [], heaps: [], cold: [], errors: [] };
  const attempt = async (what, fn) => {
    try {
      return await fn();
    } catch (err) {
      out.errors.push(`${what}: ${err.message}`);
      progress.log(`  micro ${what}: ${err.message}`);
      return null;
    }
  };
  const cores = availableParallelism();
  for (let round = 0; round < m.rounds; round++) {
    const tag = `micro round ${round + 1}/${m.rounds}`;
    if (builds['spawn-ceiling']?.ok) {
      progress.status(`${tag} · C posix_spawn ceiling (${cores} threads, ${m.seconds}s)`);
      const c = await attempt('ceiling', async () => lastJson(await runCapture(builds['spawn-ceiling'].path, [String(m.seconds), String(cores), trueBin], { timeoutMs: 60_000 })));
      if (c) out.ceiling.push(c);
    } else if (round === 0) out.errors.push(`ceiling: ${builds['spawn-ceiling']?.error ?? 'not built'}`);
    progress.status(`${tag} · raw spawn throughput (true, ${m.concurrency} in flight)`);
    // One process per implementation: sharing one, the second would run
    // with the first's heap and with call sites the first made polymorphic.
    let raw = null;
    for (const impl of ['node', 'spawnpool']) {
      const r = await attempt(`raw ${impl}`, () => nodeScript(benchDir, 'spawn-rate.js', ['--impls', impl, '--warmup', String(m.warmup ?? 16), '--seconds', String(m.seconds), '--concurrency', String(m.concurrency), '--file', trueBin], env, 90_000));
      if (r) raw = raw === null ? r : { ...raw, results: [...raw.results, ...r.results] };
    }
    if (raw) out.raw.push(raw);
    if (bun) {
      progress.status(`${tag} · Bun.spawn under Bun, for reference`);
      const b = await attempt('bun', () => nodeScript(benchDir, 'spawn-rate.js', ['--impls', 'bun', '--warmup', String(m.warmup ?? 16), '--seconds', String(m.seconds), '--concurrency', String(m.concurrency), '--file', trueBin], env, 90_000, bun));
      if (b) out.bun.push(b);
    }
  }
  for (let i = 0; i < (m.coldStarts ?? 0); i++) {
    progress.status(`micro · first spawn of a fresh process ${i + 1}/${m.coldStarts}`);
    for (const impl of ['node', 'spawnpool']) {
      const c = await attempt(`cold start ${impl}`, () => nodeScript(benchDir, 'cold-start.js', ['--impl', impl, '--file', trueBin], env, 30_000));
      if (c) out.cold.push(c);
    }
  }
  // One run's p99 moves by a millisecond on a loaded machine: a run per
  // round, each measuring node:child_process, spawnpool and the floor in turn.
  for (let round = 0; round < m.rounds; round++) {
    progress.status(`micro · event-loop delay at ${m.rate} spawns/s (${m.eldSeconds}s each) ${round + 1}/${m.rounds}`);
    const e = await attempt('event-loop', () => nodeScript(benchDir, 'event-loop.js', ['--seconds', String(m.eldSeconds), '--warmup-seconds', String(m.eldWarmupSeconds ?? 2), '--rate', String(m.rate), '--file', trueBin], env, 90_000));
    if (e) out.eld.push(e);
  }
  // The heap sizes in turn, once per round: a single 3 s run moved the
  // 4 GB parent's ratio by 0.1 between reports.
  for (let round = 0; round < m.rounds; round++) {
    for (const mb of m.heaps) {
      progress.status(`micro · parent holds ${mb} MB of Buffers (allocating, then ${m.seconds}s per impl) ${round + 1}/${m.rounds}`);
      const h = await attempt(`heap ${mb} MB`, () => nodeScript(benchDir, 'spawn-rate.js', ['--heap-mb', String(mb), '--seconds', String(m.seconds), '--concurrency', String(m.concurrency), '--file', trueBin], env, 180_000));
      if (h) out.heaps.push(h);
    }
  }
  return out;
}

/**
 * The big-parent runs by heap size, in the order first run: medians of the
 * rounds' rates (null where an implementation never gave one), `runs` each.
 */
function heapSizes(runs) {
  const sizes = [...new Set(runs.map((h) => h.heapMB))];
  return sizes.map((mb) => {
    const these = runs.filter((h) => h.heapMB === mb);
    const rateOf = (impl) => median(these.map((h) => byImpl(h.results, impl)?.rate));
    return { mb, rssMB: median(these.map((h) => h.rssMB)), node: rateOf('node'), spawnpool: rateOf('spawnpool'), runs: these.length };
  });
}

/** Collapse micro results into the numbers the report shows. */
export function summarizeMicro(micro) {
  const rate = (runs, impl) => median(runs.map((r) => byImpl(r.results, impl)?.rate));
  // Results of runs before 11-27 hold one event-loop run, not a list.
  const eldRuns = Array.isArray(micro.eld) ? micro.eld : micro.eld ? [micro.eld] : [];
  const unavailable = (impl) => [...micro.raw, ...eldRuns, ...micro.heaps]
    .map((r) => byImpl(r.results, impl)?.unavailable).find(Boolean) ?? null;
  const sp = micro.raw.map((r) => byImpl(r.results, 'spawnpool')).filter((r) => r?.rss);
  const servers = sp.length ? sp[sp.length - 1].rss.servers : [];
  // Event-loop delay: field by field medians of the runs, over the fields
  // any run has as a number (a run may lack one: no latencies measured).
  const numericKeys = (rs) => [...new Set(rs.flatMap((r) => Object.keys(r).filter((k) => Number.isFinite(r[k]))))];
  const numericMedians = (rs) => fieldMedians(rs, numericKeys(rs));
  const eldOf = (run, impl) => {
    const r = byImpl(run.results, impl);
    return r && !r.unavailable && Number.isFinite(r.eldP99) ? r : null;
  };
  const eld = (impl) => numericMedians(eldRuns.map((run) => eldOf(run, impl)).filter(Boolean));
  const floors = eldRuns.map((run) => run.floor).filter((f) => Number.isFinite(f?.eldP99));
  // spawnpool over the floor: the median of each run's own difference.
  const gaps = eldRuns.filter((run) => eldOf(run, 'spawnpool') && Number.isFinite(run.floor?.eldP99))
    .map((run) => eldOf(run, 'spawnpool').eldP99 - run.floor.eldP99);
  // CPU µs per spawn by where it runs, medians over the rounds.
  const cpu = (runs, impl) => fieldMedians(runs.map((r) => byImpl(r.results, impl)?.cpu).filter(Boolean),
    ['main', 'threads', 'servers', 'children']);
  const bunRuns = micro.bun ?? [];
  const cold = (impl) => {
    const runs = (micro.cold ?? []).filter((c) => c.impl === impl && c.toCloseMs != null);
    return fieldMedians(runs, ['importMs', 'callMs', 'toSpawnMs', 'toCloseMs']);
  };
  return {
    cold: { node: cold('node'), spawnpool: cold('spawnpool') },
    cpu: { node: cpu(micro.raw, 'node'), spawnpool: cpu(micro.raw, 'spawnpool'), bun: cpu(bunRuns, 'bun') },
    bunRate: bunRuns.length ? rate(bunRuns, 'bun') : null,
    ceiling: median(micro.ceiling.map((c) => c.rate)),
    ceilingThreads: micro.ceiling[0]?.threads ?? null,
    raw: { node: rate(micro.raw, 'node'), spawnpool: rate(micro.raw, 'spawnpool') },
    eld: { node: eld('node'), spawnpool: eld('spawnpool'), floor: numericMedians(floors), gap: median(gaps), runs: eldRuns.length },
    heaps: heapSizes(micro.heaps),
    serverRss: { source: sp.length ? sp[sp.length - 1].rss.source : null, servers },
    spawnpoolUnavailable: unavailable('spawnpool'),
    errors: micro.errors,
  };
}
