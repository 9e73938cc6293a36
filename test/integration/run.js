// Runs a scenario of test/integration/scenarios twice in fresh Node
// processes, once plain (node:child_process) and once under
// spawnpool/register, and turns the two reports into node:test tests: each
// case must observe the same under both, and under the hook it must have
// been served by the pool.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const REGISTER = join(ROOT, 'dist/register.js');
const RUN_TIMEOUT_MS = 30_000;

/**
 * Runs `scenarios/<name>.js` with `node` (default: this one), `nodeArgs`
 * before the script and `env` added.
 * Resolves with the exit status, the output and the parsed report (null if
 * the scenario wrote none).
 */
export function runScenario(name, { nodeArgs = [], env = {}, cwd = ROOT, node = process.execPath } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'spawnpool-integration-'));
  const out = join(dir, 'report.json');
  const script = join(ROOT, 'test/integration/scenarios', `${name}.js`);
  return new Promise((resolve, reject) => {
    // Node's own spawn, whatever this test process has loaded.
    const child = spawn(node, [...nodeArgs, script], {
      cwd,
      env: { ...process.env, NODE_OPTIONS: '', ...env, SCENARIO_OUT: out },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: RUN_TIMEOUT_MS,
      killSignal: 'SIGKILL',
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c) => { stdout += c; });
    child.stderr.setEncoding('utf8').on('data', (c) => { stderr += c; });
    child.on('error', reject);
    child.on('close', (code, signal) => {
      let report = null;
      try {
        report = JSON.parse(readFileSync(out, 'utf8'));
      } catch { /* none written */ }
      rmSync(dir, { recursive: true, force: true });
      resolve({ code, signal, stdout, stderr, report });
    });
  });
}

/**
 * Runs `name` to its end even if the process dies in a case: the case it
 * died in is recorded as `{ crashed }` (exit status and stderr) and the run
 * goes on from the next case in a new process. The result is that of the
 * last process, with the cases of all of them.
 */
export async function runResuming(name, options = {}) {
  const cases = {};
  const counts = {};
  const stacks = {};
  let crashed = false;
  let from = 0;
  for (;;) {
    const run = await runScenario(name, { ...options, env: { ...options.env, SCENARIO_FROM: String(from) } });
    const report = run.report;
    if (report === null) return run;
    Object.assign(cases, report.cases);
    Object.assign(counts, report.counts);
    Object.assign(stacks, report.stacks);
    run.report = { ...report, cases, counts, stacks, crashed };
    if (report.done || report.current === null) return run;
    cases[report.current] = { crashed: `exit ${run.code ?? run.signal}`, stderr: run.stderr.slice(-3000) };
    counts[report.current] = { served: NaN, fallbacks: NaN };
    crashed = run.report.crashed = true;
    from = report.names.indexOf(report.current) + 1;
    if (from >= report.names.length) return run;
  }
}

/** Runs `name` plain, then under `--import lib/register.js`. */
export async function runBoth(name, options = {}) {
  const node = await runScenario(name, options);
  const pooled = await runResuming(name, { ...options, nodeArgs: ['--import', REGISTER, ...(options.nodeArgs ?? [])] });
  return { node, pooled };
}

function describeRun(run) {
  return `exit ${run.code ?? run.signal}; stderr:\n${run.stderr.slice(-4000)}`;
}

/**
 * Declares the tests of one scenario file. `fallbacks` maps a case name to
 * the number of its calls spawnpool is expected to hand to Node (default 0);
 * `spawnless` names the cases that spawn nothing.
 */
/**
 * `knownDifferences` maps a case to the open issue that will make it hold:
 * it still runs, and is reported as a TODO rather than hidden.
 */
export async function scenarioTests(name, { fallbacks = {}, spawnless = [], knownDifferences = {} } = {}) {
  const { node, pooled } = await runBoth(name);

  test(`${name}: the plain run completes`, () => {
    assert.ok(node.report?.done, `no complete report from the plain run: ${describeRun(node)}`);
    assert.equal(node.report.registered, false);
  });

  test(`${name}: the process ends as it does under Node`, () => {
    assert.ok(pooled.report, `no report: ${describeRun(pooled)}`);
    assert.equal(pooled.report.registered, true, 'stats().registered under --import spawnpool/register');
    assert.ok(!pooled.report.crashed, `the process died in a case (see that case); last run: ${describeRun(pooled)}`);
    assert.deepEqual(
      { code: pooled.code, signal: pooled.signal, done: pooled.report.done, lingered: pooled.report.lingered },
      { code: node.code, signal: node.signal, done: node.report?.done, lingered: node.report?.lingered },
      describeRun(pooled),
    );
    // Node's warnings name their process, `(node:PID)`: Node 24 warns of
    // DEP0190 (args with shell: true) in zx's runs.
    const samePid = (stderr) => stderr.replace(/^\(node:\d+\) /gm, '(node:PID) ');
    assert.equal(samePid(pooled.stderr), samePid(node.stderr));
  });

  for (const [caseName, expected] of Object.entries(node.report?.cases ?? {})) {
    test(`${name}: ${caseName}`, { todo: knownDifferences[caseName] }, () => {
      const reported = pooled.report?.cases[caseName];
      assert.ok(reported, `no result under spawnpool (the run ended before this case): ${describeRun(pooled)}`);
      const stack = pooled.report.stacks?.[caseName];
      assert.deepEqual(reported, expected, stack ? `threw under spawnpool:\n${stack}` : undefined);
      const counts = pooled.report.counts[caseName];
      if (!spawnless.includes(caseName)) assert.ok(counts.served > 0, 'no spawn of this case was served by the pool');
      assert.equal(counts.fallbacks, fallbacks[caseName] ?? 0, 'calls handed to node:child_process');
    });
  }
}
