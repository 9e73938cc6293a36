// The HTTP part: every available contender, interleaved over rounds (the
// order rotates each round), each run = start server → per workload a verify
// pass (doubles as prewarm) then the timed load → stop server.
import { startServer } from './server.js';
import { LOADGENS } from './loadgen.js';
import { verifyPass } from './verify.js';
import { snapshot, budget } from './budget.js';

export const WORKLOADS = [
  { id: 'echo', title: 'echo hi', path: '/echo' },
  { id: 'cat', title: 'cat of a 163 KB C file', path: '/cat' },
];

/** [a, b, c] rotated left by k. */
export function rotate(list, k) {
  if (list.length === 0) return list;
  const s = ((k % list.length) + list.length) % list.length;
  return [...list.slice(s), ...list.slice(0, s)];
}

async function fetchStats(port) {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/__stats`, { signal: AbortSignal.timeout(3000) });
    return await res.json();
  } catch {
    return null;
  }
}

/** Merge the verify pass into the load result: its failures count as errors of the run. */
function combine(load, verify) {
  const r = { ...load, verify };
  r.bodyErrors += verify.bodyErrors;
  r.non2xx += verify.non2xx;
  r.errors += verify.errors;
  if (!r.firstError && verify.firstError) r.firstError = `verify pass: ${verify.firstError}`;
  return r;
}

/**
 * Run the HTTP benchmark. `contenders`: [{ id, label, command }] (startable);
 * returns { [contenderId]: { unavailable?, runs: { [workload]: [round results] }, stats: [] } }.
 */
export async function runHttp({ contenders, config, loadgen, expected, env, progress }) {
  const out = Object.fromEntries(contenders.map((c) => [c.id, { runs: { echo: [], cat: [] }, stats: [] }]));
  const total = config.rounds * contenders.length;
  let run = 0;
  for (let round = 0; round < config.rounds; round++) {
    const order = rotate(contenders, round).filter((c) => !out[c.id].unavailable);
    run += contenders.length - order.length; // runs of contenders found unavailable earlier
    for (const c of order) {
      run++;
      const where = `run ${run}/${total} (round ${round + 1}/${config.rounds}) ${c.id}`;
      progress.status(`${where} · starting`);
      let server;
      try {
        server = await startServer(c.command, { env });
      } catch (err) {
        for (const w of WORKLOADS) out[c.id].runs[w.id].push({ round, rps: null, errors: 1, non2xx: 0, bodyErrors: 0, firstError: `server: ${err.message}` });
        progress.log(`  ${c.id}: server failed to start: ${err.message}`);
        continue;
      }
      if (server.unavailable) {
        out[c.id].unavailable = server.unavailable;
        progress.log(`  ${c.id}: ${server.unavailable}`);
        continue;
      }
      try {
        for (const w of WORKLOADS) {
          const body = expected[w.id];
          progress.status(`${where} · ${w.id} · verify pass (${config.verifyRequests} req)`);
          const verify = await verifyPass({ port: server.port, path: w.path, expected: body, requests: config.verifyRequests, concurrency: config.connections, timeoutMs: config.verifyTimeoutMs });
          if (verify.ok === 0) {
            // Nothing correct came back: a timed run would only burn its timeout.
            const r = combine({ rps: null, p50: null, p99: null, requests: 0, seconds: 0, errors: 0, non2xx: 0, bodyErrors: 0, firstError: null }, verify);
            r.round = round;
            r.firstError = `no correct response in the verify pass (${verify.firstError}); timed run skipped`;
            out[c.id].runs[w.id].push(r);
            progress.log(`  ${c.id} ${w.id} round ${round + 1}: ${r.firstError}`);
            continue;
          }
          const loadOptions = (requests) => ({
            url: `http://127.0.0.1:${server.port}${w.path}`,
            connections: config.connections,
            requests,
            expected: body,
            expectedFile: expected.files[w.id],
            bodyBytes: body.length,
            minHead: verify.minHead,
            timeoutMs: config.loadTimeoutMs,
            buildDir: config.buildDir,
          });
          // A server runs for hours: its JIT (Node, Bun, Deno) has compiled
          // the hot paths long before. The same load, untimed, first.
          if (config.warmupRequests > 0) {
            progress.status(`${where} · ${w.id} · warm-up ${config.warmupRequests} req × ${config.connections} conn`);
            await LOADGENS[loadgen.name](loadgen, loadOptions(config.warmupRequests));
          }
          progress.status(`${where} · ${w.id} · ${loadgen.name} ${config.requests} req × ${config.connections} conn`);
          const before = snapshot(server.pid);
          const load = await LOADGENS[loadgen.name](loadgen, loadOptions(config.requests));
          const after = snapshot(server.pid);
          const r = combine(load, verify);
          r.round = round;
          r.budget = budget(before, after, server.pid, load.requests || config.requests);
          out[c.id].runs[w.id].push(r);
          if (r.firstError) progress.log(`  ${c.id} ${w.id} round ${round + 1}: ${r.firstError}`);
        }
        if (c.id === 'spawnpool') out[c.id].stats.push(await fetchStats(server.port));
      } finally {
        progress.status(`${where} · stopping`);
        await server.stop();
      }
    }
  }
  return out;
}
