#!/usr/bin/env node
// npm run bench: spawnpool against Node's approaches, Go and Rust. See
// docs/benchmarks.md. Progress goes to stderr, the report to stdout.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync, copyFileSync, realpathSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HELP, parseConfig } from './lib/config.js';
import { CONTENDERS, commandFor } from './lib/contenders.js';
import { ensureCatFile } from './lib/fixture.js';
import { WORKLOADS, runHttp } from './lib/http.js';
import { runMicro, summarizeMicro } from './lib/micro.js';
import { createProgress } from './lib/progress.js';
import { chartPanels, computeTargets, renderMarkdown } from './lib/report.js';
import { killAll } from './lib/server.js';
import { summarize } from './lib/stats.js';
import { renderSvg } from './lib/svg.js';
import { buildAll, detectTools, recipes, which } from './lib/tools.js';

const benchDir = dirname(fileURLToPath(import.meta.url));
const buildDir = join(benchDir, 'build');
const resultsDir = join(benchDir, 'results');

/** Pick the load generator: pinned bombardier build, bombardier or wrk on PATH, else autocannon. */
function pickLoadgen(forced, tools, builds) {
  const options = {
    bombardier: builds.bombardier?.ok
      ? { name: 'bombardier', path: builds.bombardier.path, label: 'bombardier v1.2.6 (built from bench/tools/go.mod)' }
      : tools.bombardier && { name: 'bombardier', path: tools.bombardier.path, label: `bombardier (${tools.bombardier.path})` },
    wrk: tools.wrk && { name: 'wrk', path: tools.wrk.path, label: `${tools.wrk.version?.split(' [')[0] ?? 'wrk'} (${tools.wrk.path})` },
    autocannon: { name: 'autocannon', path: null, label: 'autocannon 9 (embedded, devDependency)' },
  };
  const verified = {
    bombardier: 'status and HTTP framing of every response plus total bytes read (bombardier cannot read bodies); every body in full in the verify pass',
    wrk: 'every body in full (Lua), and in the verify pass',
    autocannon: 'every body in full, and in the verify pass',
  };
  const pick = forced ? options[forced] : options.bombardier || options.wrk || options.autocannon;
  if (!pick) throw new Error(`--loadgen ${forced}: not available on this machine`);
  return { ...pick, verified: verified[pick.name] };
}

function machine() {
  const cpus = os.cpus();
  return {
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    node: process.version,
    cpus: os.availableParallelism(),
    cpuModel: (cpus[0]?.model ?? 'unknown CPU').replace(/\s+/g, ' ').trim(),
    kernel: os.release(),
    memGB: Math.round(os.totalmem() / 2 ** 30),
  };
}

async function main() {
  let config;
  try {
    config = parseConfig(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${err.message}\n\n${HELP}\n`);
    return 2;
  }
  if (config.help) {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  config.buildDir = buildDir;
  const t0 = performance.now();
  const progress = createProgress();
  const meta = machine();
  progress.log(`spawnpool bench: ${meta.cpus} cores, Node ${meta.node}${config.quick ? ', quick' : ''}`);

  // The contenders import the package, whose entry is dist/'s bundle of lib/: made from lib/ as it is.
  const bundleScript = join(benchDir, '..', 'scripts', 'bundle.js');
  spawnSync(process.execPath, [bundleScript], { encoding: 'utf8' });
  if (spawnSync(process.execPath, [bundleScript, '--check']).status !== 0) {
    progress.log('  spawnpool is not bundled (no esbuild: npm install): it loads lib/\'s modules, and the first spawn is slower');
  }

  const catFile = join(buildDir, 'main.c');
  const expected = { echo: Buffer.from('hi\n'), cat: ensureCatFile(catFile) };
  expected.files = { echo: join(buildDir, 'echo.expected'), cat: catFile };
  writeFileSync(expected.files.echo, expected.echo);

  progress.status('looking for go, cargo, cc, wrk, bombardier, bun, deno');
  const tools = await detectTools();
  const selected = CONTENDERS.filter((c) => !config.only || config.only.has(c.id));
  const wants = (id) => config.sections.http && selected.some((c) => c.id === id);
  const all = recipes(benchDir, buildDir, tools);
  const toBuild = [];
  if (config.sections.micro) toBuild.push('spawn-ceiling');
  if (config.sections.http && (config.loadgen ?? 'bombardier') === 'bombardier' && !(tools.bombardier && !tools.go)) toBuild.push('bombardier');
  if (wants('go')) toBuild.push('go-server');
  if (wants('rust')) toBuild.push('rust-server');
  const tb = performance.now();
  const builds = await buildAll(toBuild.map((k) => [k, all[k]]), (k) => progress.status(`build ${k} (cached after the first run)`));
  const buildSeconds = (performance.now() - tb) / 1000;
  for (const [k, b] of Object.entries(builds)) {
    if (!b.ok) progress.log(`  build ${k} failed: ${b.error.split('\n').pop()}`);
    else if (!b.cached) progress.log(`  built ${k} in ${b.seconds.toFixed(1)} s`);
  }

  const loadgen = config.sections.http ? pickLoadgen(config.loadgen, tools, builds) : { name: null, label: 'none', verified: '–' };
  if (config.sections.http) progress.log(`  load generator: ${loadgen.label}`);
  const contenders = selected.map((c) => {
    const command = commandFor(c.id, { benchDir, tools, builds });
    return { ...c, command: command.skip ? null : command, skip: command.skip ?? null };
  });
  for (const c of contenders) if (c.skip && config.sections.http) progress.log(`  skip ${c.id}: ${c.skip}`);

  const env = { ...process.env, BENCH_CAT_FILE: catFile };
  const results = {
    meta, config: { ...config, only: config.only && [...config.only] }, tools, builds, loadgen: { name: loadgen.name, label: loadgen.label, verified: loadgen.verified },
    contenders: [], http: { workloads: WORKLOADS.map(({ id, title }) => ({ id, title })), raw: {}, summary: {} }, micro: { raw: null, summary: null }, targets: [], files: {},
  };

  if (config.sections.http) {
    const runnable = contenders.filter((c) => c.command);
    results.http.raw = await runHttp({ contenders: runnable, config, loadgen, expected, env, progress });
    for (const w of WORKLOADS) {
      results.http.summary[w.id] = contenders.map((c) => {
        const r = results.http.raw[c.id];
        const runs = r?.runs[w.id] ?? [];
        return {
          id: c.id, label: c.label, reference: c.reference === true, skip: c.skip, unavailable: r?.unavailable ?? null,
          summary: c.skip || r?.unavailable ? null : summarize(runs),
          firstError: runs.map((x) => x.firstError).find(Boolean) ?? null,
        };
      });
    }
    results.contenders = contenders.map((c) => ({ id: c.id, label: c.label, what: c.what, skip: c.skip, unavailable: results.http.raw[c.id]?.unavailable ?? null }));
    const spStats = results.http.raw.spawnpool?.stats?.filter(Boolean) ?? [];
    if (spStats.length) results.http.spawnpoolStats = spStats;
  }
  if (config.sections.micro) {
    const trueBin = realpathSync(which('true') ?? '/bin/true');
    results.micro.raw = await runMicro({ benchDir, config, builds, env, progress, trueBin, bun: tools.bun?.path ?? null });
    results.micro.summary = summarizeMicro(results.micro.raw);
  }
  results.targets = computeTargets(results);
  progress.done();

  meta.wallSeconds = (performance.now() - t0) / 1000;
  meta.buildSeconds = buildSeconds;
  mkdirSync(resultsDir, { recursive: true });
  const stamp = meta.date.replace(/:/g, '-');
  const jsonFile = join(resultsDir, `${stamp}.json`);
  const svgFile = join(resultsDir, `${stamp}.svg`);
  results.files = { json: relative(process.cwd(), jsonFile), svg: relative(process.cwd(), svgFile) };
  if (config.sections.http || config.sections.micro) {
    const svg = renderSvg({
      title: 'spawnpool: spawning a child per request, against Node, Go and Rust',
      subtitle: [`${meta.cpus} cores (${meta.cpuModel})`, `Node ${meta.node}`, loadgen.name && `${loadgen.name}, ${config.connections} connections`,
        `${config.rounds} round(s)`, meta.date.slice(0, 10)].filter(Boolean).join(' · '),
      panels: chartPanels(results),
      footer: 'Load generator and server share the machine; compare ratios. Produced by npm run bench.',
    });
    writeFileSync(svgFile, svg);
    copyFileSync(svgFile, join(resultsDir, 'latest.svg'));
  }
  writeFileSync(jsonFile, `${JSON.stringify(results, null, 1)}\n`);
  copyFileSync(jsonFile, join(resultsDir, 'latest.json'));

  process.stdout.write(config.json ? `${JSON.stringify(results, null, 1)}\n` : `${renderMarkdown(results)}\n`);
  return 0;
}

process.on('SIGINT', () => {
  killAll();
  process.exit(130);
});
process.on('exit', killAll);

main().then((code) => process.exit(code), (err) => {
  killAll();
  process.stderr.write(`\nbench failed: ${err.stack}\n`);
  process.exit(1);
});
