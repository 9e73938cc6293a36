#!/usr/bin/env node
// npm run bench:ab -- <checkout> [<checkout>...]: spawnpool of several
// checkouts (this one and others: a worktree of an earlier commit, say),
// each serving the HTTP benchmark's spawnpool contender under its own load
// AT THE SAME TIME, and the CPU each spends per request, by process class.
//
// Why at the same time: on a shared, noisy machine the CPU a request costs
// moves by 20% and more between runs a minute apart (the children's own
// cost moves with it: frequency, steal, neighbours); two servers measured
// side by side see the same machine, so the ratio of their costs holds
// where runs taken one after another do not. Each checkout needs its
// native build (npm install there, or node scripts/build-native.js); one
// that bundles lib/ (scripts/bundle.js) gets its bundle made again first.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { dirname, join, basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { budget, snapshot } from './lib/budget.js';
import { ensureCatFile } from './lib/fixture.js';
import { killAll, startServer } from './lib/server.js';
import { fmtRatio, medianBudget } from './lib/stats.js';
import { buildAll, detectTools, recipes } from './lib/tools.js';

const HELP = `usage: npm run bench:ab -- [options] <checkout> [<checkout>...]
  --workload echo|cat   the request (default echo)
  --requests N          timed requests per checkout and round (default 4000)
  --rounds N            rounds (default 4); medians are reported
  --connections N       connections in all, shared among the checkouts (default 30)`;

const benchDir = dirname(fileURLToPath(import.meta.url));
const buildDir = join(benchDir, 'build');
const CLASSES = [['main', 'main thread'], ['threads', 'other threads'], ['servers', 'spawn servers'], ['children', 'children']];
/** spawnpool's own CPU in a budget: the Node process and the spawn servers, not the children. */
const own = (b) => b.main + b.threads + b.servers;

/** Sends exactly `requests` GETs with bombardier; resolves when it is done. */
function load(bombardier, port, path, requests, connections) {
  return new Promise((resolve, reject) => {
    const p = spawn(bombardier, ['-c', String(connections), '-n', String(requests), '-p', 'r', '-o', 'json', `http://127.0.0.1:${port}${path}`],
      { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.on('error', reject);
    p.on('close', (code) => {
      const ok2xx = /"req2xx":\s*(\d+)/.exec(out);
      if (code === 0 && !/"errors":\s*\[\s*\{/.test(out) && Number(ok2xx?.[1]) === requests) resolve();
      else reject(new Error(`bombardier against :${port}: exit ${code}, not every response was a 2xx`));
    });
  });
}

async function main() {
  const { values: opt, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      workload: { type: 'string', default: 'echo' }, requests: { type: 'string', default: '4000' },
      rounds: { type: 'string', default: '4' }, connections: { type: 'string', default: '30' }, help: { type: 'boolean' },
    },
  });
  if (opt.help || positionals.length === 0 || !['echo', 'cat'].includes(opt.workload)) {
    process.stdout.write(`${HELP}\n`);
    return opt.help ? 0 : 2;
  }
  const checkouts = positionals.map((p) => realpathSync(p));
  for (const co of checkouts) {
    if (!existsSync(join(co, 'native/build/spawnd'))) throw new Error(`${co}: no native/build/spawnd (run node scripts/build-native.js there)`);
    // A checkout with a bundle (scripts/bundle.js) serves from it: made again from its lib/ as it is.
    if (existsSync(join(co, 'scripts/bundle.js'))) {
      const r = spawnSync(process.execPath, [join(co, 'scripts/bundle.js')], { cwd: co, encoding: 'utf8' });
      const check = spawnSync(process.execPath, [join(co, 'scripts/bundle.js'), '--check'], { cwd: co, encoding: 'utf8' });
      if (r.status !== 0 || check.status !== 0) throw new Error(`${co}: no bundle of its lib/: ${r.stdout}${r.stderr}${check.stdout}`);
    }
  }
  const requests = Number(opt.requests);
  const connections = Math.max(1, Math.round(Number(opt.connections) / checkouts.length));
  const tools = await detectTools();
  const built = await buildAll([['bombardier', recipes(benchDir, buildDir, tools).bombardier]]);
  const bombardier = built.bombardier.ok ? built.bombardier.path : tools.bombardier?.path;
  if (!bombardier) throw new Error('needs bombardier: go on PATH (to build the pinned one) or bombardier itself');
  const env = { ...process.env, BENCH_CAT_FILE: join(buildDir, 'main.c') };
  ensureCatFile(env.BENCH_CAT_FILE);
  const path = `/${opt.workload}`;
  const rows = checkouts.map(() => []);
  for (let round = 0; round < Number(opt.rounds); round++) {
    const servers = [];
    for (const co of checkouts) {
      const s = await startServer({ cmd: process.execPath, args: [join(co, 'bench/servers/spawnpool.js')] }, { env });
      if (!s.port) throw new Error(`${co}: ${s.unavailable ?? s.fail}`);
      servers.push(s);
    }
    // Warm-up (JIT, parked children), then the timed loads, all at once.
    await Promise.all(servers.map((s) => load(bombardier, s.port, path, 3000, connections)));
    const before = servers.map((s) => snapshot(s.pid));
    await Promise.all(servers.map((s) => load(bombardier, s.port, path, requests, connections)));
    const after = servers.map((s) => snapshot(s.pid));
    servers.forEach((s, i) => rows[i].push(budget(before[i], after[i], s.pid, requests)));
    await Promise.all(servers.map((s) => s.stop()));
    process.stderr.write(`round ${round + 1}: ${checkouts.map((co, i) => `${basename(co)} ${Math.round(own(rows[i][round]))} µs`).join(', ')} of their own per request\n`);
  }
  const medians = rows.map(medianBudget);
  process.stdout.write(`\nCPU per ${opt.workload} request, µs (medians of ${opt.rounds} rounds, ${requests} requests each, the checkouts side by side)\n\n`);
  process.stdout.write(`| checkout | ${CLASSES.map(([, t]) => t).join(' | ')} | spawnpool's own | vs ${basename(checkouts[0])} |\n`);
  process.stdout.write(`| --- |${' ---: |'.repeat(CLASSES.length + 2)}\n`);
  checkouts.forEach((co, i) => {
    const b = medians[i];
    process.stdout.write(`| ${basename(co)} | ${CLASSES.map(([k]) => Math.round(b[k])).join(' | ')} | ${Math.round(own(b))} | ${fmtRatio(own(b) / own(medians[0]))} |\n`);
  });
  return 0;
}

process.on('SIGINT', () => {
  killAll();
  process.exit(130);
});
main().then((code) => process.exit(code), (err) => {
  killAll();
  process.stderr.write(`bench:ab failed: ${err.message}\n`);
  process.exit(1);
});
