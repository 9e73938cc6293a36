// Micro-benchmark child: spawn throughput of `file` with `concurrency`
// children in flight for `seconds`, per implementation, while this process
// holds `heap-mb` MiB of Buffers. Prints one JSON line.
import { basename } from 'node:path';
import { NOT_NATIVE, cpuSnapshot, cpuPerSpawn, errorText, flags, holdMemory, loadImpl, selfRssMB, serverRss, spawnOnce } from './common.js';

const opt = flags({ impls: 'node,spawnpool', seconds: 3, warmup: 16, concurrency: 64, 'heap-mb': 0, file: '/bin/true' });

/**
 * Keep `concurrency` spawns in flight, launching new ones for `seconds` (or
 * until `count` were launched), then wait for the last. Rate = completed /
 * elapsed, drain included: a spawn that blocks the event loop for 100 ms
 * (a fork of a big parent) still counts, and so does the wait for it.
 */
function measure(spawn, seconds, concurrency, count = Infinity) {
  return new Promise((resolve) => {
    const start = performance.now();
    const end = start + seconds * 1000;
    let launched = 0;
    let inflight = 0;
    let done = 0;
    let errors = 0;
    let firstError = null;
    const settle = (force) => {
      if (inflight !== 0 && !force) return;
      clearTimeout(watchdog);
      const elapsed = (performance.now() - start) / 1000;
      if (force) firstError ??= `${inflight} spawns never completed`;
      resolve({ spawns: done, seconds: elapsed, rate: force ? null : done / elapsed, errors: errors + inflight, firstError });
    };
    // A hung implementation must not hang the benchmark.
    const watchdog = setTimeout(() => settle(true), (Math.min(seconds, 60) + 20) * 1000);
    const launch = () => {
      if (performance.now() >= end || launched >= count) return settle();
      launched++;
      inflight++;
      spawnOnce(spawn, opt.file, (err) => {
        inflight--;
        if (err) {
          errors++;
          firstError ??= errorText(err);
        } else done++;
        if (errors > 1000) return settle(); // a broken implementation: stop early
        launch();
      });
    };
    for (let i = 0; i < concurrency; i++) launch();
  });
}

const held = holdMemory(opt['heap-mb']);
const out = { heapMB: opt['heap-mb'], rssMB: selfRssMB(), concurrency: opt.concurrency, file: opt.file, results: [] };
for (const name of opt.impls.split(',')) {
  const impl = await loadImpl(name);
  if (impl.unavailable) {
    out.results.push({ impl: name, unavailable: impl.unavailable });
    continue;
  }
  // The warm-up: `warmup` spawns at the timed run's concurrency (the same code paths).
  await measure(impl.spawn, 60, opt.concurrency, opt.warmup);
  if (impl.lib?.stats?.().available === false) {
    out.results.push({ impl: name, unavailable: NOT_NATIVE });
    continue;
  }
  const servers = () => (impl.lib?.stats?.().servers ?? []).map((x) => x.pid).filter(Boolean);
  const before = cpuSnapshot(servers());
  const r = await measure(impl.spawn, opt.seconds, opt.concurrency);
  const res = { impl: name, ...r, cpu: cpuPerSpawn(before, cpuSnapshot(servers()), r.spawns) };
  if (impl.lib) {
    const stats = typeof impl.lib.stats === 'function' ? impl.lib.stats() : null;
    res.stats = stats;
    res.rss = serverRss(stats, basename(opt.file));
  }
  out.results.push(res);
}
out.rssMBAfter = selfRssMB();
process.stdout.write(`${JSON.stringify(out)}\n`);
held.length = 0;
process.exit(0);
