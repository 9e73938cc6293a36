// Command-line flags → the run's configuration.
import { parseArgs } from 'node:util';
import { CONTENDERS } from './contenders.js';

export const HELP = `npm run bench -- [flags]

Spawn-per-request HTTP benchmark (echo hi, cat of a 163 KB file) of spawnpool
against Node's approaches, Go and Rust, plus spawn micro-benchmarks.

  --quick          1 round, fewer requests, short micro-benchmarks, heaps
                   50 MB and 1 GB only (about 1-2 minutes)
  --rounds N       rounds, contenders interleaved in each (default 3)
  --requests N     requests per timed run and workload (default 2000; quick 500)
  --warmup N       untimed requests before each timed run, the same load, so
                   that JIT runtimes are measured warm (default 3000; quick 200)
  --only a,b       run only these contenders (${CONTENDERS.map((c) => c.id).join(', ')})
                   and/or sections (http, micro)
  --loadgen NAME   force bombardier, wrk or autocannon (default: the first found)
  --json           print the results JSON on stdout instead of the tables
  --help           this text

Env: BUN, DENO (runtimes for the bun/deno contenders, else PATH).
Writes bench/results/<time>.json and .svg, and latest.json / latest.svg.`;

/** Parse argv into the configuration; throws with a message on bad flags. */
export function parseConfig(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      rounds: { type: 'string' },
      requests: { type: 'string' },
      warmup: { type: 'string' },
      only: { type: 'string' },
      loadgen: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  const int = (name, v, min) => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} wants an integer ≥ ${min}, got ${JSON.stringify(v)}`);
    return n;
  };
  const quick = values.quick;
  const ids = new Set(CONTENDERS.map((c) => c.id));
  let only = null;
  let sections = { http: true, micro: true };
  if (values.only !== undefined) {
    only = values.only.split(',').map((s) => s.trim()).filter(Boolean);
    const bad = only.filter((x) => !ids.has(x) && x !== 'http' && x !== 'micro');
    if (bad.length) throw new Error(`--only: unknown ${bad.join(', ')} (known: ${[...ids, 'http', 'micro'].join(', ')})`);
    const picked = only.filter((x) => ids.has(x));
    sections = { http: picked.length > 0 || only.includes('http'), micro: only.includes('micro') };
    only = picked.length ? new Set(picked) : null;
  }
  if (values.loadgen !== undefined && !['bombardier', 'wrk', 'autocannon'].includes(values.loadgen)) {
    throw new Error(`--loadgen: one of bombardier, wrk, autocannon (got ${values.loadgen})`);
  }
  const rounds = int('rounds', values.rounds, 1) ?? (quick ? 1 : 3);
  const requests = int('requests', values.requests, 30) ?? (quick ? 500 : 2000);
  // Node, Bun and Deno servers settle after about 3,000 requests (their
  // CPU per request, in chunks of 1,000: docs/benchmarks.md, "Warm-up").
  const warmupRequests = int('warmup', values.warmup, 0) ?? (quick ? 200 : 3000);
  return {
    help: values.help,
    quick,
    json: values.json,
    only,
    sections,
    loadgen: values.loadgen ?? null,
    rounds,
    requests,
    connections: 30,
    verifyRequests: quick ? 60 : 150,
    warmupRequests,
    verifyTimeoutMs: 20_000,
    // A contender slower than ~50 req/s is broken, not slow: bound its run.
    loadTimeoutMs: 20_000 + requests * 20,
    micro: {
      rounds: quick ? 1 : rounds,
      seconds: quick ? 1.5 : 3,
      eldSeconds: quick ? 2 : 4,
      rate: 1000,
      concurrency: 64,
      // Untimed spawns before each raw-throughput run, at its concurrency,
      // and seconds of the event-loop run's own load before it is timed:
      // as the HTTP runs' warm-up, so that V8 has settled (docs/benchmarks.md,
      // "Eleventh pass": with 500 at 8 in flight, TurboFan was still
      // compiling spawnpool's hot paths through the timed 3 s).
      warmup: quick ? 100 : 3000,
      eldWarmupSeconds: quick ? 0.5 : 2,
      heaps: quick ? [50, 1024] : [50, 2048, 4096],
      coldStarts: quick ? 3 : 7,
    },
  };
}
