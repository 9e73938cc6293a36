// Spawn throughput and latency inside whatever runtime runs this file (Node,
// Bun, Deno): the runtime's own node:child_process against spawnpool's pool,
// interleaved, medians of the rounds. Decides lib/runtime.js's serve/delegate
// default; numbers are in docs/runtimes.md.
//
//   bun bench/runtimes.js [spawns-per-round] [rounds]
//   deno run -A bench/runtimes.js ...
//   node bench/runtimes.js ...
// Prints one JSON line.
// The pool must serve here, whatever lib/runtime.js decided from the last measurement.
process.env.SPAWNPOOL_RUNTIME_MODE = 'serve';
const nodeCp = await import('node:child_process');
const { createPool } = await import('../lib/index.js');

const N = Number(process.argv[2] ?? 2000);
const ROUNDS = Number(process.argv[3] ?? 3);
const IN_FLIGHT = 64;
const SERIAL = 200;           // spawns one at a time: latency without queueing

const runtimeName = globalThis.Deno ? `deno ${Deno.version.deno}`
  : globalThis.Bun ? `bun ${Bun.version}` : `node ${process.version}`;

/** n spawns of `true`, `inFlight` at a time: spawns/s and call → 'spawn' p50 (ms). */
function run(spawn, n, inFlight = IN_FLIGHT) {
  return new Promise((resolve, reject) => {
    const latencies = [];
    let started = 0;
    let done = 0;
    const t0 = performance.now();
    const one = () => {
      started++;
      const at = performance.now();
      const child = spawn('true', [], { stdio: 'ignore' });
      child.once('spawn', () => latencies.push(performance.now() - at));
      child.once('error', reject);
      child.once('close', () => {
        if (++done === n) {
          const seconds = (performance.now() - t0) / 1000;
          latencies.sort((a, b) => a - b);
          resolve({ perSecond: n / seconds, p50: latencies[latencies.length >> 1] });
        } else if (started < n) {
          one();
        }
      });
    };
    for (let i = 0; i < Math.min(inFlight, n); i++) one();
  });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

const pool = createPool();
const contenders = { own: nodeCp.spawn, spawnpool: pool.spawn };
// Warm up: the pool starts its servers, the runtime its spawn path.
for (const spawn of Object.values(contenders)) await run(spawn, 200);

const rounds = { own: [], spawnpool: [] };
const serial = { own: [], spawnpool: [] };
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? ['own', 'spawnpool'] : ['spawnpool', 'own'];
  for (const name of order) rounds[name].push(await run(contenders[name], N));
  for (const name of order) serial[name].push(await run(contenders[name], SERIAL, 1));
}
const summary = {};
for (const [name, results] of Object.entries(rounds)) {
  summary[name] = {
    perSecond: Math.round(median(results.map((x) => x.perSecond))),
    p50ms: Number(median(results.map((x) => x.p50)).toFixed(3)),
    serialP50ms: Number(median(serial[name].map((x) => x.p50)).toFixed(3)),
    rounds: results.map((x) => Math.round(x.perSecond)),
  };
}
const served = pool.stats();
await pool.close();
console.log(JSON.stringify({
  runtime: runtimeName, spawns: N, rounds: ROUNDS, inFlight: IN_FLIGHT, ...summary,
  ratio: Number((summary.spawnpool.perSecond / summary.own.perSecond).toFixed(2)),
  servedByPool: served.spawned, poolFallbacks: served.fallbacks,
}));
