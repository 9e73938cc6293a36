// Micro-benchmark child: event-loop delay (monitorEventLoopDelay) while
// spawning `file` at a fixed `rate` per second for `seconds`, per
// implementation; also the call → 'spawn' latency. Prints one JSON line.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { spawn as nodeSpawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { NOT_NATIVE, errorText, flags, loadImpl, spawnOnce } from './common.js';
import { percentile } from '../lib/stats.js';

const opt = flags({ impls: 'node,spawnpool', seconds: 4, rate: 1000, file: '/bin/true', load: '', 'warmup-seconds': 2 });

function run(spawn, seconds, rate) {
  return new Promise((resolve) => {
    const h = monitorEventLoopDelay({ resolution: 1 });
    const latencies = [];
    let issued = 0;
    let done = 0;
    let lastDone = 0;
    let errors = 0;
    let firstError = null;
    let inflight = 0;
    const start = performance.now();
    const finishAll = (force) => {
      if ((inflight !== 0 && !force) || timer) return;
      clearTimeout(watchdog);
      if (force) {
        errors += inflight;
        firstError ??= `${inflight} spawns never completed`;
      }
      h.disable();
      const ms = (ns) => ns / 1e6;
      const elapsed = (lastDone - start) / 1000;
      resolve({
        rate, seconds: elapsed, issued, completed: done, achieved: done / elapsed, errors, firstError,
        eldP50: ms(h.percentile(50)), eldP99: ms(h.percentile(99)), eldMax: ms(h.max),
        spawnP50: percentile(latencies, 50), spawnP99: percentile(latencies, 99),
      });
    };
    const one = () => {
      const t0 = performance.now();
      inflight++;
      spawnOnce(spawn, opt.file, (err) => {
        inflight--;
        if (err) {
          errors++;
          firstError ??= errorText(err);
        } else done++;
        lastDone = performance.now();
        finishAll();
      }, () => latencies.push(performance.now() - t0));
    };
    const watchdog = setTimeout(() => finishAll(true), (seconds + 20) * 1000); // never hang the benchmark
    h.enable();
    // Fixed batches on a 10 ms interval, no catch-up: a spawn that blocks the
    // loop delays the next batch, which shows as event-loop delay and as an
    // achieved rate under the asked one.
    const perTick = Math.max(1, Math.round(rate / 100));
    let timer = setInterval(() => {
      if (performance.now() - start >= seconds * 1000) {
        clearInterval(timer);
        timer = null;
        return finishAll();
      }
      for (let i = 0; i < perTick; i++) {
        issued++;
        one();
      }
    }, 10);
  });
}

// --load IMPL: only produce the spawn load (for the floor measurement below).
if (opt.load) {
  const { spawn } = await loadImpl(opt.load);
  const perTick = Math.max(1, Math.round(opt.rate / 100));
  setInterval(() => {
    for (let i = 0; i < perTick; i++) spawn(opt.file, [], { stdio: 'ignore' }).on('error', () => {});
  }, 10);
  await new Promise(() => {});
}

/**
 * The machine's floor: the event-loop delay of this process, spawning
 * nothing, while another process produces the same spawn load. On a small
 * machine the children's CPU alone delays every process's wake-ups; no
 * spawn implementation can get below this.
 */
async function floor(seconds, rate, impl) {
  const load = nodeSpawn(process.execPath, [fileURLToPath(import.meta.url), '--load', impl, '--rate', String(rate), '--file', opt.file],
    { stdio: 'ignore' });
  await sleep(500);
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  await sleep(seconds * 1000);
  h.disable();
  load.kill('SIGKILL');
  const ms = (ns) => ns / 1e6;
  return { impl: `floor (${impl} load in another process)`, eldP50: ms(h.percentile(50)), eldP99: ms(h.percentile(99)), eldMax: ms(h.max) };
}

const out = { results: [] };
for (const name of opt.impls.split(',')) {
  const impl = await loadImpl(name);
  if (impl.unavailable) {
    out.results.push({ impl: name, unavailable: impl.unavailable });
    continue;
  }
  // Warm up at the timed load (the pool's start, V8's compiling of the hot paths).
  await run(impl.spawn, opt['warmup-seconds'], opt.rate);
  if (impl.lib?.stats?.().available === false) {
    out.results.push({ impl: name, unavailable: NOT_NATIVE });
    continue;
  }
  out.results.push({ impl: name, ...(await run(impl.spawn, opt.seconds, opt.rate)) });
}
out.floor = await floor(opt.seconds, opt.rate, 'spawnpool');
process.stdout.write(`${JSON.stringify(out)}\n`);
process.exit(0);
